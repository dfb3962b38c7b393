"""A Rényi privacy odometer: the privacy spent so far, valid at every time at once.

An odometer reports, after each step of a fully adaptive composition, an ε_t that
bounds the privacy loss of the interaction so far — simultaneously for every t, so the
analyst may stop whenever they like, on whatever they saw (Rogers, Roth, Ullman and
Vadhan, arXiv:1605.08294, §1; Whitehouse, Ramdas, Rogers and Wu, arXiv:2203.05481, §1:
an odometer is a time-uniform bound on the privacy loss, the notion met here).

Guarantee (``RDPOdometer.epsilon``). Let L_t = Σ_{s≤t} log(dP_s/dQ_s)(y_s) be the
privacy loss of the first t outputs and ρ_s(α) the Rényi divergence of step s (chosen
from the past). For each order α, M_t = exp((α − 1)(L_t − Σ_{s≤t} ρ_s(α))) is a
non-negative supermartingale with M_0 = 1 (E[e^{(α−1)ℓ_s} | past] = e^{(α−1)D_α} ≤
e^{(α−1)ρ_s(α)}: the step of Feldman and Zrnic's proof, arXiv:2008.11193, §3), so by
Ville's inequality (Ville 1939, "Étude critique de la notion de collectif"; the
martingale route of Whitehouse et al., arXiv:2203.05481, §1) P(∃t: M_t ≥ 1/δ_α) ≤ δ_α.
A union bound over the tracked orders Λ with δ_α = δ/|Λ| gives, with probability at
least 1 − δ, for every t at once,

    L_t ≤ ε_t = min_{α∈Λ} Σ_{s≤t} ρ_s(α) + log(|Λ|/δ)/(α − 1),

in both directions (the costs are the larger D_α of the two). Since the readings are
predictable (ε after a step is known before it runs), running a step only while the
reading after it stays ≤ ε gives an (ε, δ)-DP interaction for any ε: the loss stays
≤ ε except with probability δ, and P(S) ≤ e^ε Q(S) + P(L > ε).

Why no budget grid. Lécuyer (arXiv:2103.01379, §4) builds an RDP odometer from a grid
of filters with a union bound over the grid, so that each filter's (ε, δ) can use a
fixed-budget conversion. The bound above needs no grid: Ville's inequality is already
uniform in time, and a grid would only add log(#levels) to log(|Λ|/δ). The price is the
plain conversion log(1/δ)/(α − 1) in place of the improved one, which bounds δ of an
event, not the tail of the loss.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from accounting.adaptive.filters import DEFAULT_ORDERS, Decision, check_orders, rdp_cost
from accounting.validation import check_real
from accounting.vocabulary import FloatArray

__all__ = ["RDPOdometer", "odometer_epsilon"]


def odometer_epsilon(orders: FloatArray, spent: Any, delta: float) -> FloatArray:
    """ε_t = min_{α∈Λ} Σ_{s≤t} ρ_s(α) + log(|Λ|/δ)/(α − 1) (the module docstring: with
    probability ≥ 1 − δ the loss stays below it at every t at once), for ``spent`` of
    shape (..., |Λ|) — one row of summed Rényi costs per interaction (per example in
    individual accounting), the last axis over ``orders``. Never below 0."""
    cost = np.asarray(spent, dtype=float)
    if cost.shape[-1:] != orders.shape:
        raise ValueError(f"spent must have one entry per order ({orders.size}) on its "
                         f"last axis, got shape {cost.shape}")
    slack = np.log(orders.size / delta) / (orders - 1.0)
    out: FloatArray = np.maximum(np.min(cost + slack, axis=-1), 0.0)
    return out


class RDPOdometer:
    """Tracks Σ_t ρ_t(α) at ``orders`` and reports ε_t at the odometer's ``delta``
    (module docstring: valid at every step at once, with probability 1 − δ)."""

    def __init__(self, delta: float, orders: Any = DEFAULT_ORDERS, *,
                 registry: Any = None) -> None:
        self.delta = check_real("delta", delta, lo=0.0, hi=1.0, lo_open=True, hi_open=True)
        self.orders = check_orders(orders)
        self.registry = registry
        self.spent: FloatArray = np.zeros(self.orders.shape)
        self.history: list[float] = []
        self.decisions: list[Decision] = []

    def spend(self, proposal: Any) -> float:
        """Count ``proposal`` (a Mechanism, Pair or curve) and return ε_t after it."""
        cost = rdp_cost(proposal, self.orders, registry=self.registry)
        self.spent = self.spent + cost
        eps = self.epsilon()
        self.decisions.append(Decision(len(self.decisions), True, cost, self.spent.copy()))
        self.history.append(eps)
        return eps

    def epsilon(self) -> float:
        """ε_t = min_α Σ ρ(α) + log(|Λ|/δ)/(α − 1) (0 before any step)."""
        if not self.decisions and not np.any(self.spent):
            return 0.0
        return float(odometer_epsilon(self.orders, self.spent, self.delta))

    @property
    def steps(self) -> int:
        return len(self.decisions)

    def __repr__(self) -> str:
        last = f"ε = {self.history[-1]:.4g}" if self.history else "nothing spent"
        return f"RDPOdometer(δ={self.delta:g}, {self.steps} steps, {last})"

"""A rigorous finite-sample threshold for the (α, λ, ε₀)-RKRDP test, and the λ of (ε, δ)-DP.

Null hypothesis: D_{α,λ}(Σ_p‖Σ_q) ≤ ε₀ (RKRDP, arXiv:2205.13941, §3). With γ = (α − 1)/α,
α ≥ 2, n_p samples of p and n_q of q (independent), reject when D̂_{α,λ} exceeds

    τ = ε₀ + log(1/(1−η)) + (1/γ)·log(1 + (1−η)^γ λ^{−γ} r e^{−γε₀}),
    r = (1 + √log(2/x₀))/√n_p,
    β = log(8(1 + 1/λ)/x₀),   η = β/(3n_q) + √(β²/(9n_q²) + 2β/(n_q λ)),

a test of level x₀ for every p, q (Domingo-Enrich and Mroueh 2022, arXiv:2205.13941, §5; derivation in docs/auditing.md). It
needs η < 1; otherwise no finite threshold follows and the test is vacuous (never
rejects). In brief, with B = Σ_q + λ, B̂ = Σ̂_q + λ and e^{γD} = ‖A^{1/2}B^{−γ}A^{1/2}‖_α:

* one-sided intrinsic-dimension matrix Bernstein (Tropp 2015, "An introduction to
  matrix concentration inequalities", Thm 7.3.1; Minsker 2017 for operators) for the
  summands (Eξ − ξ)/n_q, ξ = B^{−1/2}φφ*B^{−1/2}: they are ≤ 1/n_q, their variance
  is ≤ (1/(n_qλ))·Σ_qB^{−1}, raised to a proxy of norm 1/(n_qλ) and trace ≤ (1 + 1/λ)/(n_qλ);
  so B̂ ≥ (1 − η)B with probability ≥ 1 − x₀/2;
* then B̂^{−γ} ≤ (1 − η)^{−γ}B^{−γ} (t ↦ t^{−γ} is operator antitone for γ ∈ (0, 1]);
* ‖Σ̂_p − Σ_p‖_HS ≤ r with probability ≥ 1 − x₀/2 (E ≤ 1/√n_p; McDiarmid with
  differences ‖φφ* − φ'φ'*‖_HS/n_p ≤ √2/n_p);
* ‖B̂^{s}(Σ̂_p − Σ_p)B̂^{s}‖_α ≤ λ^{−γ}‖Σ̂_p − Σ_p‖_HS since ‖·‖_α ≤ ‖·‖_2 for α ≥ 2.

(ε, δ)-DP implies (α, λ₀, ε)-RKRDP for every α > 1 at λ₀ = δe^{−ε} (arXiv:2205.13941,
Prop. 9), so the same test at λ₀ audits an (ε, δ) claim.
"""

from __future__ import annotations

import math
from typing import Any

import attrs

from accounting.validation import check_count, check_probability, check_real

__all__ = ["Threshold", "RKRDPTest", "rkrdp_threshold", "rkrdp_test", "dp_lambda"]


@attrs.frozen
class Threshold:
    """The rejection threshold τ of D̂ (``inf`` when vacuous) and its two error terms."""

    value: float
    eta: float
    r: float
    level: float

    @property
    def vacuous(self) -> bool:
        """True when no finite threshold exists at this n, λ and level (η >= 1)."""
        return math.isinf(self.value)


def rkrdp_threshold(epsilon0: float, alpha: float, lam: float, n_p: int, n_q: int,
                    level: float) -> Threshold:
    """τ with P(D̂_{α,λ} > τ) <= ``level`` whenever D_{α,λ}(Σ_p‖Σ_q) <= ``epsilon0``.

    Valid for α >= 2 (the Schatten-α norm is then below the Hilbert–Schmidt norm).
    """
    epsilon0 = check_real("epsilon0", epsilon0)
    alpha = check_real("alpha", alpha, lo=2.0)
    lam = check_real("lam", lam, lo=0.0, lo_open=True)
    n_p, n_q = check_count("n_p", n_p, minimum=2), check_count("n_q", n_q, minimum=2)
    level = check_probability("level", level)
    gamma = (alpha - 1.0) / alpha
    r = (1.0 + math.sqrt(math.log(2.0 / level))) / math.sqrt(n_p)
    beta = math.log(8.0 * (1.0 + 1.0 / lam) / level)
    eta = beta / (3.0 * n_q) + math.sqrt(beta ** 2 / (9.0 * n_q ** 2) + 2.0 * beta / (n_q * lam))
    if eta >= 1.0:
        return Threshold(math.inf, eta, r, level)
    # (1−η)^γ λ^{−γ} r e^{−γε₀} in logs: λ^{−γ} can be huge and e^{−γε₀} tiny
    log_term = gamma * (math.log1p(-eta) - math.log(lam) - epsilon0) + math.log(r)
    tail = math.log1p(math.exp(log_term)) if log_term < 700.0 else log_term
    return Threshold(epsilon0 - math.log1p(-eta) + tail / gamma, eta, r, level)


@attrs.frozen
class RKRDPTest:
    """Outcome of the (α, λ, ε₀)-RKRDP test: reject iff ``statistic`` > ``threshold.value``."""

    statistic: float
    threshold: Threshold

    @property
    def rejected(self) -> bool:
        return self.statistic > self.threshold.value


def rkrdp_test(x: Any, y: Any, *, alpha: float, lam: float, epsilon0: float,
               level: float = 0.05, bandwidth: float | None = None) -> RKRDPTest:
    """Test H₀: D_{α,λ}(Σ_p‖Σ_q) <= ε₀ from samples x ~ p, y ~ q at ``level``.

    The level holds for a kernel fixed independently of x and y: give ``bandwidth``
    (chosen beforehand or on other samples). With None the median heuristic is
    applied to these very samples, and the level is then not proven.
    """
    from .estimator import rkrd_sweep

    sweep = rkrd_sweep(x, y, [alpha], [lam], bandwidth=bandwidth)
    bound = rkrdp_threshold(epsilon0, alpha, lam, sweep.n_p, sweep.n_q, level)
    return RKRDPTest(float(sweep.values[0, 0]), bound)


def dp_lambda(epsilon: float, delta: float) -> float:
    """λ₀ = δe^{−ε}: (ε, δ)-DP implies D_{α,λ₀} <= ε for all α > 1 (arXiv:2205.13941, Prop. 9)."""
    epsilon = check_real("epsilon", epsilon, lo=0.0)
    delta = check_probability("delta", delta)
    return delta * math.exp(-epsilon)

"""dp_accounting's mixture of Gaussians: a Gaussian whose sensitivity is random.

Given a dataset without the record the output is N(0, σ²); with it, the sensitivity
is c_i with probability p_i and the output is the mixture Σ_i p_i N(c_i, σ²)
(Choquette-Choo, Ganesh, Steinke, Thakurta, arXiv:2310.15526, where this scalar
pair is shown to dominate the vector-valued mechanism with each sensitivity vector
replaced by its norm, Cor. 4.7). c = (0, 1), p = (1 − q, q) is the Poisson-subsampled
Gaussian; c = (0, 1, 2), p = (0.81, 0.18, 0.01) a record that can be sampled twice.

Pair (forward = remove): P = Σ_i p_i N(c_i, σ²), Q = N(0, σ²), with c_i ≥ 0. The loss

  L(x) = log Σ_i p_i exp((2c_i x − c_i²)/(2σ²))

is convex and increasing in x (a log-sum-exp of increasing affine functions), from
log p₀ (p₀ the probability of c = 0; −∞ if none) to +∞. So {L > ε} = {x > x_ε} with
x_ε the unique root of L(x) = ε (Newton's method from the right, to the last bit), and

  δ_{P‖Q}(ε) = Σ_i p_i Φ̄((x_ε − c_i)/σ) − e^ε Φ̄(x_ε/σ)            (ε > log p₀; else 1 − e^ε),
  δ_{Q‖P}(ε) = Φ(x_{−ε}/σ) − e^ε Σ_i p_i Φ((x_{−ε} − c_i)/σ)       (−ε > log p₀; else 0),

evaluated as A(1 − e^{ε + log B − log A}) with log-space tails (log_ndtr). At the root
the derivative of the hockey-stick divergence in the threshold vanishes, so an error
in x_ε moves δ only to second order: the profile is exact to roundoff. The Rényi
curve is a quadrature, K_{P‖Q}(t) = log ∫ φ_σ(x) e^{(1+t)L(x)} dx and
K_{Q‖P}(t) = log ∫ φ_σ(x) e^{−tL(x)} dx, labelled numerical (~1e-10 relative).

Degenerate values: every c_i = 0 gives P = Q, no privacy cost (the loss is 0). σ = 0
(no noise) releases the sensitivity itself: P = Σ_i p_i δ_{c_i}, Q = δ_0, the exact
finite pair P = (p₀, 1 − p₀), Q = (1, 0) on the outcomes {0, > 0} (p₀ the probability
of c = 0): δ_{P‖Q}(ε) = 1 − p₀ + (p₀ − e^ε)₊, δ_{Q‖P}(ε) = (1 − e^ε p₀)₊, so
ε(δ) = ∞ below δ = 1 − p₀ (disjoint, non-private, when no c_i is 0) — the subsampled
Gaussian's σ = 0 at c = (0, 1), p = (1 − q, q): δ(ε) = q for ε ≥ 0.
"""

from __future__ import annotations

import math
from typing import Any

import attrs
import numpy as np
from scipy.special import log_ndtr, logsumexp

from accounting.pairs.additive import log_integral
from accounting.pairs.mechanism import Mechanism, Range, parameter, probabilities_for
from accounting.pairs.pair import Pair, discrete_pair, disjoint_pair, identical_pair
from accounting.registry.hookspecs import RegisterMechanism, hookimpl
from accounting.vocabulary import Direction, Exactness, FloatArray

from .approx_dp import entries_in, one_sensitivity, scalar_or_tuple

__all__ = ["MixtureOfGaussians", "MixtureOfGaussiansPair"]

#: σ on an absolute scale, or 0 (no noise: module docstring); the sensitivities c_i in
#: [0, 1e3]; each p_i in (0, 1]
SIGMA = Range(1e-3, 1e3, log=True, zero=True)
SENSITIVITY_ENTRY = Range(0.0, 1e3)
PROBABILITY = Range(0.0, 1.0, lo_open=True)
#: how far the probabilities may sum from 1 before they are refused (then normalised)


def _lse(z: FloatArray, axis: int = -1) -> FloatArray:
    """log Σ e^z along ``axis`` (plain numpy: scipy's logsumexp costs ~10× more on the
    short rows here). Rows of −∞ give −∞."""
    m = np.max(z, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(divide="ignore"):
        result: FloatArray = np.squeeze(m, axis=axis) + np.log(np.sum(np.exp(z - m), axis=axis))
        return result


@attrs.frozen
class MixtureOfGaussiansPair(Pair):
    """(Σ_i p_i N(c_i, σ²), N(0, σ²)) with c_i ≥ 0; see the module docstring."""

    sigma: float
    c: tuple[float, ...]
    p: tuple[float, ...]
    #: log-moments computed so far, by (t, direction): the conversions ask the same
    #: orders again (both directions, refinements of the zCDP envelope)
    _memo: dict[tuple[float, Direction], float] = attrs.field(factory=dict, init=False, repr=False, eq=False)

    @property
    def _arrays(self) -> tuple[FloatArray, FloatArray]:
        return np.asarray(self.c, dtype=float), np.log(np.asarray(self.p, dtype=float))

    @property
    def _log_p0(self) -> float:
        """L(−∞): log of the probability of sensitivity 0 (−∞ if there is none)."""
        c, logp = self._arrays
        zero = c == 0.0
        return float(logsumexp(logp[zero])) if zero.any() else -np.inf

    def loss(self, x: FloatArray) -> FloatArray:
        """L(x) = log Σ_i p_i exp((2c_i x − c_i²)/(2σ²)), vectorised."""
        c, logp = self._arrays
        x = np.asarray(x, dtype=float)
        s2 = self.sigma ** 2
        return _lse(logp + (2.0 * c * x[..., None] - c * c) / (2.0 * s2))

    def _root(self, eps: FloatArray) -> FloatArray:
        """x with L(x) = ε for each ε > L(−∞): Newton's method from the right.

        L is convex and increasing, so Newton iterates started where L > ε stay at or
        right of the root and decrease to it monotonically (quadratically near it).
        The start: L(x) ≥ log p_max + (2c_max x − c_max²)/(2σ²), which exceeds ε at
        x = σ²(ε − log p_max)/c_max + c_max/2 (p_max the probability of c_max)."""
        c, logp = self._arrays
        cmax = float(c.max())
        s2 = self.sigma ** 2
        lp_max = float(logsumexp(logp[c == cmax]))
        x = s2 * (eps - lp_max) / cmax + cmax / 2.0 + self.sigma
        active = np.ones(x.shape, dtype=bool)
        for _ in range(200):
            xa = x[active]
            z = logp + (2.0 * c * xa[:, None] - c * c) / (2.0 * s2)
            lx = _lse(z)
            slope = np.sum(np.exp(z - lx[:, None]) * c, axis=1) / s2     # L'(x) > 0
            step = (lx - eps[active]) / slope
            x[active] = xa - np.maximum(step, 0.0)
            still = step > 4e-16 * np.maximum(1.0, np.abs(xa))
            idx = np.flatnonzero(active)
            active[idx[~still]] = False
            if not active.any():
                break
        return x

    def _profile(self, eps: FloatArray, direction: Direction) -> FloatArray:
        eps = np.asarray(eps, dtype=float)
        flat = np.ravel(eps)
        out = np.zeros(flat.shape)
        c, logp = self._arrays
        if float(c.max()) == 0.0:                       # P = Q
            out = -np.expm1(np.minimum(np.where(np.isfinite(flat), flat, 0.0), 0.0))
            out = np.where(flat == np.inf, 0.0, np.where(flat == -np.inf, 1.0, out))
            return out.reshape(eps.shape)
        s = self.sigma
        lp0 = self._log_p0
        fwd = direction is Direction.FORWARD
        level = flat if fwd else -flat           # the threshold on L
        inside = np.isfinite(flat) & (level > lp0)
        x = self._root(level[inside]) if inside.any() else np.zeros(0)
        e = flat[inside]
        if fwd:       # A = P(L > ε), B = Q(L > ε)
            log_a = _lse(logp + log_ndtr((c - x[:, None]) / s))
            log_b = log_ndtr(-x / s)
        else:         # A = Q(L < −ε), B = P(L < −ε)
            log_a = log_ndtr(x / s)
            log_b = _lse(logp + log_ndtr((x[:, None] - c) / s))
        with np.errstate(over="ignore", invalid="ignore"):
            val = np.exp(log_a) * -np.expm1(np.minimum(e + log_b - log_a, 0.0))
        out[inside] = np.where(np.isfinite(log_a), val, 0.0)
        rest = ~inside
        if fwd:   # ε ≤ log p₀: every outcome has L > ε; δ = 1 − e^ε
            out[rest] = -np.expm1(np.minimum(np.where(np.isfinite(flat[rest]), flat[rest], 0.0), 0.0))
        else:     # −ε ≤ log p₀: no outcome has L < −ε
            out[rest] = 0.0
        out = np.where(flat == np.inf, 0.0, np.where(flat == -np.inf, 1.0, out))
        return np.clip(out, 0.0, 1.0).reshape(eps.shape)

    def _cgf(self, t: FloatArray, direction: Direction) -> FloatArray:
        t = np.asarray(t, dtype=float)
        c, _ = self._arrays
        if float(c.max()) == 0.0:
            return np.zeros(t.shape)
        out = np.empty(t.size)
        for i, tt in enumerate(np.ravel(t)):
            key = (float(tt), direction)
            if key not in self._memo:
                self._memo[key] = self._log_moment(float(tt), direction)
            out[i] = self._memo[key]
        if len(self._memo) > 100_000:    # bound the memory of a long-lived pair
            self._memo.clear()
        return out.reshape(t.shape)

    def _log_moment(self, t: float, direction: Direction) -> float:
        """log ∫ φ_σ(x) e^{aL(x)} dx with a = 1 + t (forward) or −t (backward)."""
        if t == 0.0:
            return 0.0
        s, cmax = self.sigma, float(max(self.c))
        a = (1.0 + t) if direction is Direction.FORWARD else -t

        def h(x: FloatArray) -> FloatArray:
            return -0.5 * (x / s) ** 2 - 0.5 * math.log(2 * math.pi) - math.log(s) + a * self.loss(x)
        reach = (abs(a) + 1.0) * (cmax + 40.0 * s)
        k = log_integral(h, -reach, reach, s, cmax)
        # K(t) ≥ 0 for t > 0 and ≤ 0 for −1 < t < 0 (D_α ≥ 0): quadrature roundoff at
        # near-zero divergences (σ ≫ Δ) must not cross that sign
        return max(k, 0.0) if t > 0 else min(k, 0.0)

    def rho_bound(self, direction: Direction) -> float | None:
        """c_max²/(2σ²): e^{(α−1)D_α} is jointly convex in the pair, so the mixture's
        divergence (either direction) is at most the largest component's, whose Rényi
        curve is αc_i²/(2σ²)."""
        return float(max(self.c)) ** 2 / (2.0 * self.sigma ** 2)

    def cgf_lower(self, t: FloatArray, direction: Direction) -> FloatArray:
        return self._cgf(t, direction)

    def cgf_exactness(self) -> Exactness:
        return Exactness.NUMERICAL

    def describe(self) -> str:
        return f"MoG(σ={self.sigma:g}, c={list(self.c)}, p={list(self.p)})"


# the vector fields' converters are named functions (not scalar_or_tuple(...) calls in
# the field) so that mypy's attrs plugin reads the constructor's argument types
def _sensitivities(value: Any) -> tuple[float, ...]:
    return scalar_or_tuple("sensitivities")(value)


def _sampling_probs(value: Any) -> tuple[float, ...]:
    return scalar_or_tuple("sampling_probs")(value)


@attrs.frozen
class MixtureOfGaussians(Mechanism):
    """Gaussian noise of scale ``sigma`` on a query whose sensitivity is ``c_i`` with
    probability ``p_i`` (``sensitivities``, ``sampling_probs``: sequences of the same
    length; c_i ≥ 0, p_i > 0 summing to 1 within 1e-9, then normalised exactly).

    dp_accounting's MixtureOfGaussiansDpEvent (arXiv:2310.15526). Neighbouring:
    add/remove (forward = remove: P the mixture). ``sensitivity`` is not used (1);
    scale the c_i instead.
    """

    name = "mixture_of_gaussians"
    sensitivity: float = attrs.field(default=1.0, kw_only=True, validator=one_sensitivity,
                                     metadata={"range": Range(1.0, 1.0)})
    sigma: float = parameter(SIGMA)
    sensitivities: tuple[float, ...] = attrs.field(converter=_sensitivities,
                                       validator=entries_in(SENSITIVITY_ENTRY),
                                       metadata={"range": SENSITIVITY_ENTRY})
    sampling_probs: tuple[float, ...] = attrs.field(converter=_sampling_probs,
                                        validator=[entries_in(PROBABILITY),
                                                   probabilities_for("sensitivities")],
                                        metadata={"range": PROBABILITY})

    def pair(self) -> Pair:
        total = math.fsum(self.sampling_probs)
        probs = tuple(p / total for p in self.sampling_probs)
        if self.sigma == 0:
            return _noiseless_pair(self.sensitivities, probs)
        return MixtureOfGaussiansPair(float(self.sigma), tuple(self.sensitivities), probs)


def _noiseless_pair(c: tuple[float, ...], p: tuple[float, ...]) -> Pair:
    """The exact pair at σ = 0 (module docstring): the two-outcome pair P = (p₀, 1 − p₀),
    Q = (1, 0), disjoint when p₀ = 0, identical when every c_i is 0."""
    p0 = math.fsum(pi for ci, pi in zip(c, p) if ci == 0)
    if max(c) == 0:
        return identical_pair("mixture of Gaussians (σ = 0, every sensitivity 0: no privacy "
                              "loss)")
    if p0 == 0:
        return disjoint_pair("mixture of Gaussians (σ = 0, no sensitivity 0: non-private)")
    return discrete_pair(np.array([p0, 1.0 - p0]), np.array([1.0, 0.0]),
                         f"mixture of Gaussians (σ = 0: the record is revealed with "
                         f"probability {1.0 - p0:g})")


@hookimpl
def accounting_register_mechanisms(register: RegisterMechanism) -> None:
    register(MixtureOfGaussians)

"""Poisson subsampling under replace-one neighbouring, for additive-noise bases.

Each record enters the batch with probability q, then an additive noise Z of density
μ is added to the sum of the batch's contributions f(x) ∈ [−Δ, Δ] (Δ = the base's
``sensitivity``: the bound on one record's contribution, e.g. the clipping norm, so
two records differ by up to 2Δ). Neighbours differ in one record x ↔ x′. The rest of
the batch adds a common random shift, a post-processing that cannot help the
attacker, so the outputs to compare are, with μ_a = μ(· − a),

  P_{a,b} = (1 − q)μ + qμ_a   vs   Q_{a,b} = (1 − q)μ + qμ_b,    a = f(x), b = f(x′).

Dominating pair. For a base whose noise is **symmetric and log-concave** (Gaussian,
Laplace, generalised Gaussian β ≥ 1, discrete Laplace, discrete Gaussian, truncated
discrete Gaussian; on ℤ with integer contributions),

  P = (1 − q)μ + qμ_Δ,   Q = (1 − q)μ + qμ_{−Δ}

dominates every (P_{a,b}, Q_{a,b}), a, b ∈ [−Δ, Δ], for every ε ∈ ℝ (and it is
attained by a = Δ, b = −Δ: the records at the two ends, not 0 and Δ). It is the
pair dp_accounting uses for its REPLACE adjacency with sampling (Gaussian and its
``AdditiveNoisePrivacyLoss``); replace-one Poisson subsampling is analysed through
such three-distribution mixtures in Zhu, Dong, Wang 2022 (arXiv:2106.08567, §5) and
Lebeda, Regehr, Kamath, Steinke 2024 (arXiv:2405.20769). Proof, with H(a, b) =
sup_S [P_{a,b}(S) − e^ε Q_{a,b}(S)] = ∫ (p_{a,b} − e^ε q_{a,b})₊ and γ = e^ε > 0:

1. *Reflection.* μ symmetric: x ↦ −x maps (P_{a,b}, Q_{a,b}) to (P_{−a,−b}, Q_{−a,−b}),
   so H(a, b) = H(−a, −b); reflecting if needed, b ≤ 0.
2. *Both records on one side.* For a ≤ 0, H(a, b) ≤ H(−a, b). Pair the points x and
   −x, x > 0: with α = p_a(x) ≤ β = p_a(−x) and s = γq_b(x) ≤ t = γq_b(−x) (μ is
   symmetric unimodal and a, b ≤ 0), the sum (α − s)₊ + (β − t)₊ is at most
   (β − s)₊ + (α − t)₊ — equal sums, the second pair more spread, (·)₊ convex — and
   p_{−a}(x) = p_a(−x) turns the latter into the integrand of H(−a, b) at ±x. So
   b ≤ 0 ≤ a may be assumed.
3. *Monotone likelihood ratio.* μ log-concave ⇔ μ(x − s) is TP2 in (x, s). For
   b ≤ 0 ≤ a and x < y, p_{a,b}(x)q_{a,b}(y) ≤ p_{a,b}(y)q_{a,b}(x): expanding the
   mixtures, the (1 − q)² terms cancel and each other term is one of the TP2
   inequalities μ(x)μ(y − b) ≤ μ(y)μ(x − b) (b ≤ 0), μ(x − a)μ(y) ≤ μ(y − a)μ(x)
   (a ≥ 0), μ(x − a)μ(y − b) ≤ μ(y − a)μ(x − b) (a ≥ b). So the loss log p/q is
   non-decreasing and the optimal S is an up-set [t, ∞).
4. *Push to the ends.* With that S, for a′ ≥ a and b′ ≤ b, μ_{a′}(S) ≥ μ_a(S) and
   μ_{b′}(S) ≤ μ_b(S) (a shift right puts more mass in an up-set), so
   H(a′, b′) ≥ P_{a′,b′}(S) − γQ_{a′,b′}(S) ≥ H(a, b). Hence H(a, b) ≤ H(Δ, −Δ). ∎

Everything holds on ℤ with sums for integrals (log-concave pmf, integer shifts).
Log-concavity is needed: for Student-t or a bimodal Gaussian mixture the loss is not
monotone and step 3 fails; those bases (and asymmetric noise) are refused.
The pair is symmetric (reflection swaps P and Q), so both directions coincide.

Numerics. The Gaussian base keeps its closed form (``ReplaceOneGaussianPair``,
below). Any other qualifying base goes through ``ReplaceOneNoisePair``: on ℤ the exact
loss law (on the integers within ±``INTEGER_EXTENT``: noise whose pmf has not underflowed
there is refused); on ℝ cells (sinh-spaced, with −Δ, 0, Δ as edges) whose P- and Q-masses come
from 8-point Gauss–Legendre in log space and whose loss range is [L(left), L(right)]
exactly, L being monotone (step 3) — split into those two atoms it is the pessimistic
law, merged the optimistic one (``accounting.pairs.additive``), a certified bracket.

Gaussian closed form. With L(x) = log((1 − q) + q e^{(2xΔ − Δ²)/(2σ²)}) −
log((1 − q) + q e^{(−2xΔ − Δ²)/(2σ²)}), odd and increasing, {L > ε} = {x > x_ε} with
x_ε found by safeguarded Newton steps (to 4e-16 relative) in the bracket
[0, σ²(ε − log q)/Δ + Δ/2 + σ] (ε ≥ 0; x_{−ε} = −x_ε), and

  δ(ε) = (1 − q)Φ̄(x_ε/σ) + qΦ̄((x_ε − Δ)/σ) − e^ε[(1 − q)Φ̄(x_ε/σ) + qΦ̄((x_ε + Δ)/σ)],

exact to roundoff (δ is stationary in the threshold at x_ε). The Rényi curve is the
quadrature log ∫ P^{1+t}Q^{−t} (labelled numerical); ρ* ≤ 2Δ²/σ² (joint convexity
over the two branches). At q = 1 the pair is the base with sensitivity 2Δ; q = 0
gives P = Q (no privacy cost; so does Δ = 0).

Mechanisms: ``poisson_replace_one(base=..., q=...)`` for any qualifying additive-noise
base (declared add/remove: its sensitivity is the per-record bound Δ), and
``poisson_replace_one_gaussian(q=..., sigma=...)``, the Gaussian base by name.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import attrs
import numpy as np
from scipy.special import expit, log_ndtr, logsumexp

from accounting.numerics.loss import LossPMF
from accounting.pairs.additive import (
    AdditiveNoise,
    CutSupportLawPair,
    cell_laws,
    log_integral,
    support_extent,
)
from accounting.pairs.mechanism import (
    RATE,
    Mechanism,
    Neighbouring,
    Range,
    as_neighbouring,
    parameter,
)
from accounting.pairs.pair import LawPair, Pair, disjoint_pair, identical_pair
from accounting.pairs.primitives import check_primitive_output
from accounting.registry.hookspecs import RegisterMechanism, hookimpl
from accounting.vocabulary import Direction, Exactness, FloatArray

from .gaussian import Gaussian

__all__ = ["PoissonReplaceOne", "PoissonReplaceOneGaussian", "ReplaceOneGaussianPair",
           "replace_one_noise_pair", "check_replace_one_base"]

#: σ/Δ as for the subsampled Gaussian; q in [0, 1] (0: nothing sampled, no cost)
SIGMA = Range(1e-2, 1e8, per="sensitivity", log=True)
GAUSSIAN_RATE = Range(0.0, 1.0)


@attrs.frozen
class ReplaceOneGaussianPair(Pair):
    """((1 − q)N(0, σ²) + qN(Δ, σ²), (1 − q)N(0, σ²) + qN(−Δ, σ²)); symmetric."""

    sigma: float
    delta: float
    q: float
    _memo: dict[float, float] = attrs.field(factory=dict, init=False, repr=False, eq=False)

    symmetric = True

    @property
    def _free(self) -> bool:
        return self.q == 0.0 or self.delta == 0.0

    def _log_components(self, x: FloatArray, sign: float) -> FloatArray:
        """log density ratio to N(0, σ²) of (1 − q)N(0) + qN(sign·Δ), at x (vectorised)."""
        s2 = self.sigma ** 2
        a = (2.0 * sign * x * self.delta - self.delta ** 2) / (2.0 * s2)
        lq1 = math.log1p(-self.q) if self.q < 1.0 else -np.inf
        with np.errstate(divide="ignore"):
            return np.logaddexp(lq1, math.log(self.q) + a)

    def loss(self, x: FloatArray) -> FloatArray:
        x = np.asarray(x, dtype=float)
        return self._log_components(x, 1.0) - self._log_components(x, -1.0)

    def _slope(self, x: FloatArray) -> FloatArray:
        """L′(x) = (Δ/σ²)[s(x) + s(−x)], s(x) = expit(a(x) + log q − log(1 − q)) (> 0)."""
        s2 = self.sigma ** 2
        shift = math.log(self.q) - (math.log1p(-self.q) if self.q < 1.0 else -np.inf)

        def a(y: FloatArray) -> FloatArray:
            return (2.0 * y * self.delta - self.delta ** 2) / (2.0 * s2) + shift

        slope: FloatArray = self.delta / s2 * (expit(a(x)) + expit(a(-x)))
        return slope

    def _root(self, eps: FloatArray) -> FloatArray:
        """inf{x : L(x) > ε} for ε ≥ 0 (L odd and increasing): Newton steps kept inside
        a bisection bracket [lo, hi] (a step that leaves it is replaced by the midpoint),
        to 4e-16·max(x, σ). δ is stationary in the threshold at the root, so that
        error moves δ by ~1e-31 relative."""
        lo = np.zeros(eps.shape)
        hi = np.maximum(self.sigma ** 2 * (eps - math.log(self.q)) / self.delta
                        + self.delta / 2.0, 0.0) + self.sigma
        x = 0.5 * (lo + hi)
        act = np.arange(x.size)
        for _ in range(200):
            xa, la, ha = x[act], lo[act], hi[act]
            f = self.loss(xa) - eps[act]
            la = np.where(f <= 0, xa, la)
            ha = np.where(f > 0, xa, ha)
            with np.errstate(divide="ignore", invalid="ignore"):
                nx = xa - f / self._slope(xa)
            inside = (nx > la) & (nx < ha) & np.isfinite(nx)
            nx = np.where(inside, nx, 0.5 * (la + ha))
            tol = 4e-16 * np.maximum(np.abs(xa), self.sigma)
            done = (np.abs(nx - xa) <= tol) | ((ha - la) <= tol)
            x[act], lo[act], hi[act] = nx, la, ha
            act = act[~done]
            if act.size == 0:
                break
        return x

    def _profile(self, eps: FloatArray, direction: Direction) -> FloatArray:
        eps = np.asarray(eps, dtype=float)
        flat = np.ravel(eps)
        e = np.where(np.isfinite(flat), flat, 0.0)
        if self._free:
            out = -np.expm1(np.minimum(e, 0.0))
        else:
            s, d, q = self.sigma, self.delta, self.q
            x = self._root(np.abs(e))
            x = np.where(e >= 0, x, -x)
            lq1 = math.log1p(-q) if q < 1.0 else -np.inf
            lq = math.log(q)
            with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
                log_a = np.logaddexp(lq1 + log_ndtr(-x / s), lq + log_ndtr((d - x) / s))
                log_b = np.logaddexp(lq1 + log_ndtr(-x / s), lq + log_ndtr((-d - x) / s))
                out = np.exp(log_a) * -np.expm1(np.minimum(e + log_b - log_a, 0.0))
            out = np.where(np.isfinite(log_a), out, 0.0)
        out = np.where(flat == np.inf, 0.0, np.where(flat == -np.inf, 1.0, out))
        return np.clip(out, 0.0, 1.0).reshape(eps.shape)

    def _cgf(self, t: FloatArray, direction: Direction) -> FloatArray:
        t = np.asarray(t, dtype=float)
        if self._free:
            return np.zeros(t.shape)
        out = np.empty(t.size)
        for i, tt in enumerate(np.ravel(t)):
            key = float(tt)               # symmetric: one curve for both directions
            if key not in self._memo:
                self._memo[key] = self._log_moment(key)
            out[i] = self._memo[key]
        return out.reshape(t.shape)

    def _log_moment(self, t: float) -> float:
        """log ∫ φ_σ(x) e^{(1+t)log(P/φ) − t log(Q/φ)} dx (quadrature)."""
        if t == 0.0:
            return 0.0
        s, d = self.sigma, self.delta

        def h(x: FloatArray) -> FloatArray:
            return (-0.5 * (x / s) ** 2 - 0.5 * math.log(2 * math.pi) - math.log(s)
                    + (1.0 + t) * self._log_components(x, 1.0) - t * self._log_components(x, -1.0))
        reach = (abs(t) * 2.0 + 1.0) * (d + 40.0 * s)
        k = log_integral(h, -reach, reach, s, d)
        # K(t) ≥ 0 for t > 0 and ≤ 0 for −1 < t < 0 (D_α ≥ 0): quadrature roundoff at
        # near-zero divergences (σ ≫ Δ) must not cross that sign
        return max(k, 0.0) if t > 0 else min(k, 0.0)

    def cgf_lower(self, t: FloatArray, direction: Direction) -> FloatArray:
        return self._cgf(t, direction)

    def cgf_exactness(self) -> Exactness:
        return Exactness.EXACT if self._free else Exactness.NUMERICAL

    def rho_bound(self, direction: Direction) -> float | None:
        """2Δ²/σ²: pairing the branches, e^{tK} ≤ (1 − q) + q e^{t(t+1)(2Δ)²/(2σ²)}."""
        return 2.0 * self.delta ** 2 / self.sigma ** 2

    def describe(self) -> str:
        return f"PoissonReplaceOne(q={self.q:g})∘Gaussian(σ={self.sigma:g}, Δ={self.delta:g})"


#: tolerance of the symmetry and log-concavity checks, relative to the log-density's scale
_SHAPE_TOL = 1e-9
#: cells of the real line for the generic pair (as ``accounting.pairs.additive``)
_CELLS = 1 << 14
_GL_X, _GL_W = np.polynomial.legendre.leggauss(8)
#: the integers of the exact law on ℤ reach at most this far from 0
INTEGER_EXTENT = 1e6


def _shape_grid(base: AdditiveNoise) -> FloatArray:
    """Points where ``check_replace_one_base`` tests the log-density: the integers out to
    where the pmf underflows (ℤ), or a sinh-spaced grid of 8001 points out to there (ℝ)."""
    logf, w = base.log_density, float(base.noise_width())
    peak = float(np.max(logf(np.linspace(-10 * w, 10 * w, 2001))))
    if base.domain == "integer":
        k = support_extent(logf, 1.0, peak, 1.0, INTEGER_EXTENT)
        return np.arange(-int(k), int(k) + 1, dtype=float)
    x = support_extent(logf, w, peak, 1.0, w * 1e12)
    return w * np.sinh(np.linspace(-np.arcsinh(x / w), np.arcsinh(x / w), 8001))


def check_replace_one_base(base: Mechanism) -> None:
    """Refuse a base for which (P, Q) of the module docstring is not proved dominating:
    not additive noise, not declared add/remove (its ``sensitivity`` must be the bound
    Δ on one record's contribution), or noise that is not symmetric and log-concave.

    Symmetry and log-concavity are checked on the log-density at the grid of
    ``_shape_grid`` (ℓ(−x) = ℓ(x); the slopes between consecutive points never
    increase; the support an interval), to 1e-9 of its scale: a numerical check of
    the hypothesis, which the closed families listed in the module docstring satisfy
    exactly and Student-t, generalised Gaussian β < 1 and non-log-concave mixtures fail.
    """
    if not isinstance(base, AdditiveNoise):
        raise TypeError("poisson_replace_one: base must be an additive-noise mechanism "
                        f"(accounting.pairs.additive.AdditiveNoise), got {type(base).__name__}")
    if base.neighbouring is not Neighbouring.ADD_REMOVE:
        raise ValueError("poisson_replace_one: the base must declare add_remove neighbouring, "
                         "its sensitivity being the bound on one record's contribution "
                         f"(records differ by up to twice it); {type(base).__name__} declares "
                         f"{base.neighbouring.value}")
    if base.sensitivity == 0 or base.noise_width() == 0:
        return                       # degenerate corners: identical or disjoint pair
    x = _shape_grid(base)
    # a NaN is the base's plugin's fault: a PrimitiveError naming it and the x
    ell = check_primitive_output(base.log_density(x), "log_density", base, at=x, variable="x")
    fin = np.isfinite(ell)
    what = f"poisson_replace_one needs symmetric log-concave noise; {base.name}'s"
    if not np.any(fin):
        raise ValueError(f"{what} log_density is nowhere finite on its grid")
    idx = np.flatnonzero(fin)
    if idx[-1] - idx[0] + 1 != idx.size:
        raise ValueError(f"{what} support is not an interval (not log-concave)")
    scale = max(1.0, float(np.max(np.abs(ell[fin]))))
    if np.any(fin != fin[::-1]) or np.any(np.abs(ell[fin] - ell[::-1][fin]) > _SHAPE_TOL * scale):
        raise ValueError(f"{what} noise is not symmetric about 0")
    xs, ls = x[fin], ell[fin]
    slopes = np.diff(ls) / np.diff(xs)
    if slopes.size > 1 and np.any(np.diff(slopes) > _SHAPE_TOL * max(1.0, float(np.max(np.abs(slopes))))):
        raise ValueError(f"{what} log-density is not concave (noise not log-concave), so the "
                         "privacy loss of the replace-one mixture is not monotone and the "
                         "records at ±Δ need not be the worst case")


def _log_mixture(lm0: FloatArray, lm_shift: FloatArray, q: float) -> FloatArray:
    """log((1 − q)·e^{lm0} + q·e^{lm_shift}), elementwise (q in (0, 1])."""
    lq1 = math.log1p(-q) if q < 1.0 else -np.inf
    with np.errstate(invalid="ignore"):
        return np.logaddexp(lq1 + lm0, math.log(q) + lm_shift)


def replace_one_noise_pair(base: AdditiveNoise, q: float) -> Pair:
    """((1 − q)μ + qμ_Δ, (1 − q)μ + qμ_{−Δ}) for the noise μ of ``base`` (checked by
    ``check_replace_one_base``; Δ = ``base.sensitivity``), q in (0, 1]: the exact loss
    law on ℤ, a certified cell bracket on ℝ (module docstring)."""
    logf, shift = base.log_density, float(base.sensitivity)
    label = f"PoissonReplaceOne(q={q:g})∘{base.name}"
    if base.domain == "integer":
        if shift != int(shift):
            raise ValueError(f"{label}: sensitivity must be an integer for noise on the "
                             f"integers, got {shift}")
        k0 = _shape_grid(base)
        # the law is normalised on these integers: if the pmf has not underflowed at their
        # end (noise wider than ~INTEGER_EXTENT/38.6 for the discrete Gaussian), the tails
        # beyond would be dropped and the rest scaled up — the loss law of a narrower noise,
        # which under-reports (σ = 1e6: δ(0) = 4.6e-7 for the exact 8.0e-7)
        w = float(base.noise_width())
        peak = float(np.max(logf(np.linspace(-10 * w, 10 * w, 2001))))
        # (``support_extent`` from the end: past it only if the pmf there has not underflowed)
        if support_extent(logf, INTEGER_EXTENT, peak, 1.0, 2 * INTEGER_EXTENT) > INTEGER_EXTENT:
            raise ValueError(
                f"{label}: the base's noise on the integers is too wide for its exact loss law "
                f"(noise_width = {base.noise_width():g}): its pmf has not underflowed at "
                f"±{INTEGER_EXTENT:g}, the most integers this law is built on; use less noise "
                f"on ℤ (a discrete Gaussian up to σ ≈ 2.5e4) or a continuous base")
        d = int(shift)
        k = np.arange(k0[0] - d, k0[-1] + d + 1)
        lm = logf(k)
        lz = logsumexp(lm[np.isfinite(lm)])
        lp = _log_mixture(lm, logf(k - d), q) - lz
        lq = _log_mixture(lm, logf(k + d), q) - lz
        return _law_pair(lp, lq, lp, lq, label, exact=True)
    w = float(base.noise_width())
    peak = float(np.max(logf(np.linspace(-10 * w, 10 * w, 2001))))
    ext = support_extent(logf, w, peak, 1.0, w * 1e12) + shift
    width = max(w, shift) / 4.0
    u = np.linspace(-np.arcsinh(ext / width), np.arcsinh(ext / width), _CELLS + 1)
    edges = np.unique(np.concatenate([width * np.sinh(u), [-shift, 0.0, shift]]))
    h = np.diff(edges)
    nodes = edges[:-1, None] + 0.5 * h[:, None] * (_GL_X[None, :] + 1.0)
    logw = np.log(0.5 * h)[:, None] + np.log(_GL_W)[None, :]
    lm = logf(nodes)
    lz = logsumexp(lm + logw)
    log_pc = logsumexp(_log_mixture(lm, logf(nodes - shift), q) + logw, axis=1) - lz
    log_qc = logsumexp(_log_mixture(lm, logf(nodes + shift), q) + logw, axis=1) - lz
    # the loss is non-decreasing (module docstring, step 3): its range on a cell is
    # spanned by its values at the cell's ends
    le = logf(edges)
    with np.errstate(invalid="ignore"):
        loss_e = _log_mixture(le, logf(edges - shift), q) - _log_mixture(le, logf(edges + shift), q)
    loss_e = np.maximum.accumulate(np.where(np.isnan(loss_e), -np.inf, loss_e))
    return _law_pair(log_pc, log_qc, loss_e[:-1], loss_e[1:], label, exact=False)


def _law_pair(log_pc: FloatArray, log_qc: FloatArray, a: FloatArray, b: FloatArray, label: str,
              exact: bool) -> LawPair:
    """The symmetric ``LawPair`` of outcomes with P-, Q-masses e^{log_pc}, e^{log_qc}:
    exact atoms (``exact``: a = b = the outcomes' log-masses), else cells with loss range
    [a, b] (pessimistic split, optimistic merge)."""
    if exact:
        both = np.isfinite(log_pc) & np.isfinite(log_qc)
        loss = log_pc[both] - log_qc[both]
        only_p = float(np.exp(log_pc[np.isfinite(log_pc) & ~np.isfinite(log_qc)]).sum())
        only_q = float(np.exp(log_qc[np.isfinite(log_qc) & ~np.isfinite(log_pc)]).sum())
        fwd = LossPMF.from_atoms(loss, np.exp(log_pc[both]), only_p)
        bwd = LossPMF.from_atoms(-loss, np.exp(log_qc[both]), only_q)
        return CutSupportLawPair((fwd, bwd), (fwd, bwd), label, symmetric=True)
    fwd_u, fwd_l = cell_laws(log_pc, log_qc, a, b)
    bwd_u, bwd_l = cell_laws(log_qc, log_pc, -b, -a)
    return CutSupportLawPair((fwd_u, bwd_u), (fwd_l, bwd_l), label, symmetric=True)


def _base_check(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    check_replace_one_base(value)


def _require_replace_one(mechanism: Mechanism, alternative: str) -> None:
    if mechanism.neighbouring is not Neighbouring.REPLACE_ONE:
        raise ValueError(f"{mechanism.name} is accounted under replace_one neighbouring; "
                         f"for add/remove use {alternative}")


@attrs.frozen
class PoissonReplaceOne(Mechanism):
    """Poisson sampling at rate ``q``, then the additive-noise ``base`` on the batch's
    sum, accounted under replace-one neighbouring (one record changed).

    ``base`` declares add/remove neighbouring and its ``sensitivity`` Δ bounds one
    record's contribution (|f(x)| ≤ Δ; two records differ by up to 2Δ); its noise
    must be symmetric and log-concave (``check_replace_one_base``). The pair is
    ((1 − q)μ + qμ_Δ, (1 − q)μ + qμ_{−Δ}), proved dominating in the module docstring;
    the Gaussian base uses the closed form of ``poisson_replace_one_gaussian``. This
    wrapper's own ``sensitivity`` is unused.
    """

    name = "poisson_replace_one"
    #: the relation the base is declared under: its sensitivity bounds one record
    base_neighbouring: ClassVar[Neighbouring] = Neighbouring.ADD_REMOVE
    base: Mechanism = attrs.field(validator=_base_check)
    q: float = parameter(RATE)
    neighbouring: Neighbouring = attrs.field(default=Neighbouring.REPLACE_ONE, kw_only=True,
                                             converter=as_neighbouring)

    def __attrs_post_init__(self) -> None:
        _require_replace_one(self, "poisson_subsampled")

    def pair(self) -> Pair:
        base, q = self.base, float(self.q)
        if q == 0.0 or base.sensitivity == 0:
            return identical_pair(f"{self.name} (q = 0 or sensitivity 0: no privacy loss)")
        # the field's validator (check_replace_one_base) refuses any other base
        assert isinstance(base, AdditiveNoise)
        if base.noise_width() == 0:
            return disjoint_pair(f"{self.name}∘{base.name} (no noise: non-private)")
        if base.name == "gaussian" and isinstance(base, Gaussian):
            return ReplaceOneGaussianPair(float(base.sigma), float(base.sensitivity), q)
        return replace_one_noise_pair(base, q)


@attrs.frozen
class PoissonReplaceOneGaussian(Mechanism):
    """Poisson sampling at rate ``q``, then Gaussian noise ``sigma`` on a sum whose
    records have norm ≤ ``sensitivity``, accounted under replace-one neighbouring
    (one record changed): ``poisson_replace_one`` with the Gaussian base, by name.
    See the module docstring.
    """

    name = "poisson_replace_one_gaussian"
    q: float = parameter(GAUSSIAN_RATE)
    sigma: float = parameter(SIGMA)
    neighbouring: Neighbouring = attrs.field(default=Neighbouring.REPLACE_ONE, kw_only=True,
                                             converter=as_neighbouring)

    def __attrs_post_init__(self) -> None:
        _require_replace_one(self, "subsampled_gaussian")

    def pair(self) -> ReplaceOneGaussianPair:
        return ReplaceOneGaussianPair(float(self.sigma), float(self.sensitivity), float(self.q))


@hookimpl
def accounting_register_mechanisms(register: RegisterMechanism) -> None:
    register(PoissonReplaceOne)
    register(PoissonReplaceOneGaussian)

"""Additive-noise mechanisms from a log-density alone, with generic numerics.

``M(D) = f(D) + Z`` with noise Z of log-density ``log_density`` on ℝ or on ℤ and
sensitivity Δ: the dominating pair is P = law of Z + Δ, Q = law of Z (for
add/remove and replace-one alike; Δ is the sensitivity of the relation in use).
A new noise family is a short subclass: its parameters and ``log_density``. Closed
forms, where a plugin has them, replace the generic numerics by overriding
``pair()``.

Generic numerics (used when no closed form is given):

* on ℤ the pair is a finite pair on the support where the pmf is within e^{−745} of
  its peak (beyond, masses underflow float64 and are ignored);
* on ℝ the output line is cut into cells (sinh-spaced, so heavy tails are reached),
  P- and Q-masses of each cell come from 8-point Gauss–Legendre quadrature in log
  space, and the loss range [a, b] of each cell from its nodes and ends. The
  optimistic law merges each cell into one outcome of loss log(P_c/Q_c) — a
  post-processing of the pair, so it is dominated. The pessimistic law splits each
  cell into atoms at a and b carrying the same P- and Q-mass — the extreme point of
  the convex order, so it dominates (the reasoning of connect-the-dots, Doroshenko
  et al. 2022, Thm 3.1). Both are exact for what they are; the gap between them is
  the stated accuracy, of order (cell width × loss slope)². The line is cut where
  the density is e^{−745} below its peak, where float64 masses underflow;
* on ℝ the Rényi curve is computed directly, K(t) = log ∫ p^{1+t} q^{−t} dx, by
  composite Gauss–Legendre quadrature in log space on panels around the peak of the
  integrand (which moves out with t), with the density's kinks 0 and Δ as panel
  edges: ~1e-11 relative for smooth or polynomially-tailed densities (Student-t
  included), less where the density has a cusp (generalised Gaussian β = 0.5:
  2e-5 relative low at α = 20). It is labelled ``Exactness.NUMERICAL``, not an upper
  bound: a quadrature rule's error has no rigorous bound for an arbitrary
  ``log_density`` (and it falls on either side of the truth), and the sound
  alternative — the CGF of the pessimistic cell law — is no bound either at large
  orders, where the integrand p^α q^{1−α} peaks beyond the cut at 745 nats whose
  mass the cell laws drop. Where a certified Rényi bound is needed, use the PLD's
  (``curve(PLD).to(RDP)``: +∞ on its upper side when the law has mass at +∞) or
  a closed form.
"""

from __future__ import annotations

import abc
import inspect
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

import attrs
import numpy as np

from accounting.numerics.loss import LossPMF
from accounting.pairs.mechanism import MECHANISM_PRIMITIVES, Mechanism
from accounting.pairs.pair import (
    LawPair,
    NoiseDensity,
    Pair,
    corner_pair,
    not_provided,
    overrides_method,
)
from accounting.pairs.primitives import PrimitiveError, check_primitive_output, culprit
from accounting.vocabulary import Bound, Direction, Exactness, as_bound

__all__ = ["AdditiveNoise", "continuous_noise_pair", "integer_noise_pair", "log_integral",
           "support_extent", "NoiseSampler", "CutSupportLawPair"]

#: draws of a noise: (rng, shape) -> array of that shape
NoiseSampler = Callable[[np.random.Generator, "tuple[int, ...] | int"], np.ndarray]

_DROP = 745.0          # nats below the peak where the support is cut: beyond, every
                       # cell mass underflows float64 (< 1e-300 per unit scale)
_CELLS = 1 << 14       # cells on the real line
#: how far from 1 the P-masses of the cells may sum (``continuous_noise_pair``)
CELL_MASS_TOL = 1e-9
_GL_X, _GL_W = np.polynomial.legendre.leggauss(8)


@attrs.frozen
class AdditiveNoise(Mechanism):
    """Base class: noise given by ``log_density`` on ℝ or ℤ; M(D) = f(D) + Z.

    Primitives (beyond ``Mechanism``'s):

    * ``log_density(x)`` (required): log-density of Z up to an additive constant;
    * ``noise_width()``: a typical width of Z, to place grids (default 1); 0 means no
      noise (the mechanism is then non-private);
    * ``symmetric_noise`` (class attribute): Z symmetric about a point (default False);
    * ``generic_pair()``: the pair (Z + Δ, Z) by the generic numerics of this module
      (default; a plugin with closed forms overrides ``pair()`` and keeps this one for
      checks and for the density view the information gap uses);
    * ``sample_noise(rng, shape)``: i.i.d. draws of Z in the mechanism's units
      (optional, ``provides("sample_noise")``; default: ``NotImplementedError``).
      Providing it provides ``sample(rng, shape)`` = (Δ + Z, Z′) and the generic
      pair's ``sample``.
    """

    #: "real" or "integer"
    domain: ClassVar[str] = "real"

    @abc.abstractmethod
    def log_density(self, x: np.ndarray) -> np.ndarray:
        """Log-density of the noise at x (up to an additive constant)."""

    #: whether the noise is symmetric about a point (then the pair's two directions
    #: coincide, which sampling without replacement needs for its Rényi curve)
    symmetric_noise: ClassVar[bool] = False

    def noise_width(self) -> float:
        """A typical width of the noise, to place the numerical grid (default 1)."""
        return 1.0

    def sample_noise(self, rng: np.random.Generator, shape: tuple[int, ...] | int
                     ) -> np.ndarray:
        """i.i.d. draws of the noise Z (an array of ``shape``); optional."""
        raise not_provided(self, "sample_noise")

    def sample(self, rng: np.random.Generator, shape: tuple[int, ...] | int
               ) -> tuple[np.ndarray, np.ndarray]:
        """(Δ + Z, Z′): outputs on neighbouring datasets with f(D) − f(D′) = Δ, f(D′) = 0."""
        return self.sensitivity + self.sample_noise(rng, shape), self.sample_noise(rng, shape)

    def provides(self, primitive: str) -> bool:
        if primitive in ("sample", "sample_noise"):
            return overrides_method(type(self), "sample_noise", AdditiveNoise)
        return super().provides(primitive)

    def _sampler(self) -> NoiseSampler | None:
        return self.sample_noise if self.provides("sample_noise") else None

    def generic_pair(self) -> Pair:
        """The pair (Z + Δ, Z) by the generic numerics (module docstring), at any
        parameters: exact on ℤ, a certified bracket on ℝ. At the degenerate corners
        (``corner_pair``) sensitivity 0 gives the identical pair and ``noise_width()``
        0 (no noise) the disjoint, non-private one."""
        corner = corner_pair(self.sensitivity, self.noise_width(), self.name)
        if corner is not None:
            return corner
        if self.domain == "integer":
            return integer_noise_pair(self.log_density, self.sensitivity, label=self.name,
                                      symmetric=self.symmetric_noise, sampler=self._sampler())
        return continuous_noise_pair(self.log_density, self.sensitivity, self.noise_width(),
                                     label=self.name, symmetric=self.symmetric_noise,
                                     sampler=self._sampler())

    def pair(self) -> Pair:
        return self.generic_pair()


MECHANISM_PRIMITIVES.setdefault("sample_noise", "sample_noise")


class _Sampled:
    """Mixin of the generic noise pairs: ``sample`` from the mechanism's noise sampler."""

    if TYPE_CHECKING:
        # the pair classes it is mixed into declare these
        sensitivity: float
        sampler: Callable[[Any, Any], Any] | None

    def sample(self, rng: Any, shape: Any) -> Any:
        sampler = self.sampler
        if sampler is None:   # (``provides("sample")`` says False then)
            raise TypeError(f"{type(self).__name__} has no noise sampler")
        return self.sensitivity + sampler(rng, shape), sampler(rng, shape)

    def provides(self, primitive: str) -> bool:
        if primitive == "sample":
            return self.sampler is not None
        result: bool = super().provides(primitive)  # type: ignore[misc]  # a mixin: the pair class comes next in the MRO
        return result


@attrs.frozen(eq=False)
class CutSupportLawPair(LawPair):
    """A ``LawPair`` of a noise whose laws stop where its density underflows (745 nats
    below the peak; ``support_extent``). Past there the loss may keep growing (every
    noise with tails lighter than Laplace's: the Gaussian family, the generalised
    Gaussian at β > 1), so the largest loss of the laws bounds nothing: the sound side
    declares D_∞ = ess sup L = +∞; its lower side and D_1 are the laws'. (The generalised Gaussian at β = 3.4 said D_∞ = 1.2966, and its lower side
    1.2973; the true D_∞ is +∞.)"""

    def _renyi_limit(self, order: Any, direction: Any, side: Any=Bound.UPPER) -> Any:
        if order == np.inf and as_bound(side, "side") is Bound.UPPER:
            return np.inf
        return super()._renyi_limit(order, direction, side)


def _owner(logf: Any, label: str) -> Any:
    """Whom a faulty ``log_density`` is reported against: the mechanism when ``logf`` is
    its bound method, else the label."""
    return logf.__self__ if inspect.ismethod(logf) else label


@attrs.frozen
class _CheckedDensity:
    """``logf`` whose values are passed through ``check_primitive_output``: a NaN is a
    ``PrimitiveError`` naming ``owner`` (mechanism and plugin) and the first x where it
    occurred. A NaN compares false, so unchecked it would stop a support search early or
    late, or vanish into a quadrature as if the density were 0 there."""

    logf: Callable[[np.ndarray], np.ndarray]
    owner: object

    def __call__(self, x: Any) -> Any:
        return check_primitive_output(self.logf(x), "log_density", self.owner, at=x,
                                      variable="x")


def _peak(logf: Any, probe: np.ndarray, owner: Any) -> float:
    """max of ``logf`` (a ``_CheckedDensity``) on ``probe``; a ``PrimitiveError`` naming
    ``owner`` when it is −∞ everywhere there (no mass near 0 to place a grid on)."""
    lp = logf(probe)
    if np.all(lp == -np.inf):
        mech, plugin = culprit(owner)
        raise PrimitiveError(plugin, mech, f"log_density is -inf at every x in "
                                           f"[{probe[0]:g}, {probe[-1]:g}]: it must be finite "
                                           f"somewhere near 0")
    return float(np.max(lp))


def support_extent(logf: Any, start: float, peak: float, direction: float, limit: float) -> float:
    """Distance from 0 along ``direction`` (doubling from ``start``, at most ``limit``) at
    which ``logf`` has dropped 745 nats below ``peak``: where float64 masses underflow."""
    s = start
    while s < limit:
        value = float(np.asarray(logf(np.array([direction * s])), dtype=float)[0])
        if np.isnan(value):   # never "below the peak": the search would run to ``limit``
            check_primitive_output([value], "log_density", _owner(logf, "log_density"),
                                   at=[direction * s], variable="x")
        if value < peak - _DROP:
            return s
        s *= 2.0
    return limit


def continuous_noise_pair(logf: Any, sensitivity: float, scale: float = 1.0, *,
                          cells: int = _CELLS, label: str = "additive noise",
                          symmetric: bool = False,
                          sampler: NoiseSampler | None = None) -> LawPair:
    """The bracketed pair (Z + Δ, Z) for noise with log-density ``logf`` on ℝ
    (``sampler``: draws of Z, which make the pair's ``sample`` available)."""
    from scipy.special import logsumexp
    shift = float(sensitivity)
    owner = _owner(logf, label)
    logf = _CheckedDensity(logf, owner)
    peak = _peak(logf, np.linspace(-10 * scale, 10 * scale, 2001), owner)
    limit = scale * 1e12
    lo = -support_extent(logf, scale, peak, -1.0, limit)
    hi = support_extent(logf, scale, peak, 1.0, limit) + shift
    # sinh spacing around the middle of the two densities: fine near the bulk,
    # geometric in the tails.
    mid = shift / 2.0
    width = max(scale, shift) / 4.0
    u = np.linspace(np.arcsinh((lo - mid) / width), np.arcsinh((hi - mid) / width), cells + 1)
    edges = mid + width * np.sinh(u)
    # 0 and Δ, where additive-noise densities have their kinks (Laplace, generalised
    # Gaussian), are cell edges: Gauss–Legendre is exact-to-roundoff only on smooth
    # pieces, and a cusp of the loss inside a cell would escape its [a, b] range.
    edges = np.unique(np.concatenate([edges, [k for k in (0.0, shift) if lo < k < hi]]))
    h = np.diff(edges)
    nodes = edges[:-1, None] + 0.5 * h[:, None] * (_GL_X[None, :] + 1.0)
    logw = np.log(0.5 * h)[:, None] + np.log(_GL_W)[None, :]
    lq_nodes, lp_nodes = logf(nodes), logf(nodes - shift)
    log_z = logsumexp(lq_nodes + logw)
    log_pc = logsumexp(lp_nodes + logw, axis=1) - log_z
    log_qc = logsumexp(lq_nodes + logw, axis=1) - log_z
    # Q's cells sum to 1 by the normalisation; P's, the same density shifted by Δ, must
    # too. They do not when the cells miss the density's mass (components far narrower
    # than the spread: a mixture of scales 1e-4·Δ at means 8000·Δ apart summed P to 1 −
    # 4e-6, or to e^{4802}): every law built from them would be wrong, so refuse.
    p_total = math.exp(min(float(logsumexp(log_pc)), 700.0))
    if not abs(p_total - 1.0) <= CELL_MASS_TOL:
        raise ValueError(f"{label}: the noise density cannot be discretised on {cells} cells "
                         f"(its shifted cell masses sum to {p_total:.10g}, not 1): its mass "
                         f"sits in peaks narrower than the cells resolve")
    # loss range in each cell from its ends and nodes
    lq_e, lp_e = logf(edges), logf(edges - shift)
    with np.errstate(invalid="ignore"):
        loss_nodes = lp_nodes - lq_nodes
        loss_e = lp_e - lq_e
    pts = np.concatenate([loss_e[:-1, None], loss_nodes, loss_e[1:, None]], axis=1)
    pts = np.where(np.isnan(pts), 0.0, pts)  # both densities zero there: no mass
    a, b = pts.min(axis=1), pts.max(axis=1)
    fwd_u, fwd_l = cell_laws(log_pc, log_qc, a, b)
    bwd_u, bwd_l = cell_laws(log_qc, log_pc, -b, -a)
    return _NoisePair((fwd_u, bwd_u), (fwd_l, bwd_l), label, logf=logf.logf, sensitivity=shift,
                      span=(lo, hi), width=width, symmetric=symmetric, sampler=sampler)


@attrs.frozen(eq=False)
class _NoisePair(_Sampled, CutSupportLawPair):
    """The cell-law pair of an additive noise on ℝ, with its Rényi curve by quadrature."""

    # the noise log-density, always given (None is attrs' placeholder for a field after
    # the base class's defaults)
    logf: Any = None
    sensitivity: float = 1.0
    span: tuple[Any, ...] = (0.0, 0.0)
    width: float = 1.0
    sampler: NoiseSampler | None = attrs.field(default=None, kw_only=True)
    #: log-moments already computed, by (t, direction), and the normaliser: conversions
    #: evaluate the same orders in both directions and again when refining
    _memo: dict[Any, Any] = attrs.field(factory=dict, init=False, repr=False)

    def _cgf(self, t: Any, direction: Any) -> Any:
        t = np.asarray(t, dtype=float)
        if self.symmetric:   # both directions are one curve
            direction = Direction.FORWARD
        memo = self._memo
        out = np.empty(t.size)
        for i, tt in enumerate(np.ravel(t)):
            key = (float(tt), direction)
            if key not in memo:
                memo[key] = self._log_moment(float(tt), direction)
            out[i] = memo[key]
        if len(memo) > 100_000:   # bound the memory of a long-lived pair
            memo.clear()
        return out.reshape(t.shape)

    def _checked_logf(self) -> _CheckedDensity:
        return _CheckedDensity(self.logf, _owner(self.logf, self.label))

    def _log_z(self) -> float:
        if "log_z" not in self._memo:
            lo, hi = self.span
            self._memo["log_z"] = log_integral(self._checked_logf(), lo, hi, self.width,
                                               self.sensitivity)
        result: float = self._memo["log_z"]
        return result

    def cgf_lower(self, t: Any, direction: Any) -> Any:
        return self._cgf(t, direction)

    def cgf_exactness(self) -> Exactness:
        """The quadrature is a numerical value, not a bound (module docstring)."""
        return Exactness.NUMERICAL

    def noise_density(self) -> NoiseDensity:
        """(log-density, Δ, grid width, support span): the pair is (Z + Δ, Z)."""
        return NoiseDensity(self.logf, self.sensitivity, self.width, self.span)

    def _log_moment(self, t: float, direction: Direction) -> float:
        """log ∫ p^{1+t} q^{−t} (forward) or q^{1+t} p^{−t} (backward), normalised."""
        if t == 0.0:
            return 0.0
        a, b = (1.0 + t, -t) if direction is Direction.FORWARD else (-t, 1.0 + t)
        logf = self._checked_logf()

        def h(x: Any) -> Any:
            with np.errstate(invalid="ignore", over="ignore"):
                v = a * logf(x - self.sensitivity) + b * logf(x)
            return np.where(np.isnan(v), -np.inf, v)   # −∞ + ∞: both densities are 0
        lo, hi = self.span
        reach = (abs(a) + abs(b)) * (abs(self.sensitivity) + (hi - lo))
        return (log_integral(h, lo - reach, hi + reach, self.width, self.sensitivity)
                - self._log_z())


_GL16_X, _GL16_W = np.polynomial.legendre.leggauss(16)


def log_integral(h: Any, lo: float, hi: float, width: float, sensitivity: float,
                  panels: int = 1024, drop: float = 80.0) -> float:
    """log ∫ e^{h(x)} dx for a unimodal-ish log-integrand, in log space.

    A sinh-spaced scan of [lo, hi] finds the peak and the window where h is within
    e^{−drop} of it; composite 16-point Gauss–Legendre then integrates on panels
    sinh-spaced around the peak (fine where the mass is, geometric in polynomial
    tails), with 0 and Δ — where additive-noise densities have their kinks — as
    panel edges. The normaliser uses the same rule, so K(0) = 0 exactly.
    """
    from scipy.special import logsumexp
    u = np.linspace(np.arcsinh(lo / width), np.arcsinh(hi / width), 20001)
    xs = width * np.sinh(u)
    hv = h(xs)
    j = int(np.argmax(hv))
    top = float(hv[j])
    if not np.isfinite(top):
        return top
    keep = np.flatnonzero(hv - top > -drop)
    x0, x1 = xs[max(keep[0] - 1, 0)], xs[min(keep[-1] + 1, xs.size - 1)]
    v0, v1 = np.arcsinh((x0 - xs[j]) / width), np.arcsinh((x1 - xs[j]) / width)
    edges = xs[j] + width * np.sinh(np.linspace(v0, v1, panels + 1))
    inner = [k for k in (0.0, sensitivity) if x0 < k < x1]
    edges = np.unique(np.concatenate([edges, inner, [x0, x1]]))
    left, right = edges[:-1, None], edges[1:, None]
    nodes = 0.5 * (left + right) + 0.5 * (right - left) * _GL16_X[None, :]
    logw = np.log(0.5 * (right - left)) + np.log(_GL16_W)[None, :]
    return float(logsumexp(h(nodes) + logw))


def cell_laws(log_pc: Any, log_qc: Any, a: Any, b: Any) -> tuple[LossPMF, LossPMF]:
    """Pessimistic (split to the cell's extreme losses) and optimistic (merged) laws
    of the loss log dP/dQ under P for outcomes grouped in cells."""
    pc = np.exp(log_pc)
    has_p = pc > 0
    q_zero = np.isneginf(log_qc) & has_p
    inf_mass = float(pc[q_zero].sum())
    ok = has_p & ~q_zero
    r = (log_pc - log_qc)[ok]
    a, b, p = a[ok], b[ok], pc[ok]
    r_in = np.clip(r, a, b)
    spread = b - a > 1e-12
    with np.errstate(invalid="ignore", divide="ignore"):
        frac_b = np.where(spread, np.expm1(a - r_in) / np.expm1(a - b), 1.0)
    frac_b = np.clip(np.nan_to_num(frac_b, nan=1.0), 0.0, 1.0)
    inf_upper = inf_mass + float(p[np.isinf(b)].sum())
    fin = np.isfinite(b) & np.isfinite(a)
    upper = LossPMF.from_atoms(np.concatenate([a[fin], b[fin]]),
                               np.concatenate([(p * (1.0 - frac_b))[fin], (p * frac_b)[fin]]),
                               min(inf_upper, 1.0))
    lower = LossPMF.from_atoms(r, p, inf_mass)
    return upper, lower


def integer_noise_pair(logf: Any, sensitivity: float, *, label: str = "integer noise",
                       symmetric: bool = False,
                       sampler: NoiseSampler | None = None) -> LawPair:
    """The exact pair (Z + Δ, Z) for noise with log-pmf ``logf`` on ℤ, Δ an integer
    (``sampler``: draws of Z, which make the pair's ``sample`` available)."""
    from scipy.special import logsumexp
    if float(sensitivity) != int(sensitivity):
        raise ValueError(f"{label}: sensitivity must be an integer for noise on the integers, "
                         f"got {sensitivity}")
    shift = int(sensitivity)
    owner = _owner(logf, label)
    logf = _CheckedDensity(logf, owner)
    peak = _peak(logf, np.arange(-1000.0, 1001.0), owner)
    k_lo = -int(support_extent(logf, 1.0, peak, -1.0, 1e7))
    k_hi = int(support_extent(logf, 1.0, peak, 1.0, 1e7)) + shift
    k = np.arange(k_lo, k_hi + 1)
    lq, lp = logf(k), logf(k - shift)
    lq, lp = lq - logsumexp(lq), lp - logsumexp(lp)
    # Losses from the log-pmfs, not from masses that may underflow: a point where one
    # mass underflows to 0 is not a point where that distribution has no mass.
    both = np.isfinite(lq) & np.isfinite(lp)
    only_p = np.isfinite(lp) & ~np.isfinite(lq)
    only_q = np.isfinite(lq) & ~np.isfinite(lp)
    loss = lp[both] - lq[both]
    fwd = LossPMF.from_atoms(loss, np.exp(lp[both]), float(np.exp(lp[only_p]).sum()))
    bwd = LossPMF.from_atoms(-loss, np.exp(lq[both]), float(np.exp(lq[only_q]).sum()))
    return _IntegerNoisePair((fwd, bwd), (fwd, bwd), label, symmetric=symmetric,
                             sensitivity=shift, sampler=sampler)


@attrs.frozen(eq=False)
class _IntegerNoisePair(_Sampled, CutSupportLawPair):
    """The exact pair of an additive noise on ℤ (its loss laws), samplable with a sampler."""

    sensitivity: int = attrs.field(default=1, kw_only=True)
    sampler: NoiseSampler | None = attrs.field(default=None, kw_only=True)

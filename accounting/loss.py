"""The law of one directional privacy loss with finitely many finite atoms.

``LossPMF`` holds the law of L = log dP/dQ under P: atoms l_i with P-masses p_i and a
mass at +∞ (P has mass where Q has none). The Q-masses are implied, q_i = p_i e^{−l_i},
and Q's atom at −∞ is 1 − Σ q_i. Every query is exact for the law it holds:

* profile (hockey-stick divergence), REFERENCE §3:
  δ(ε) = E_P[(1 − e^{ε−L})₊] + P(L = +∞) = Σ_{l_i>ε} p_i − e^ε Σ_{l_i>ε} p_i e^{−l_i} + p_∞;
* its inverse ε(δ), solved exactly between atoms (δ is affine in e^ε there);
* the CGF K(t) = log E_P[e^{tL}] (Mironov 2017, Def. 3 with α = 1 + t);
* the vertices of the trade-off function T(P, Q) (Dong, Roth, Su 2019, Def. 2.1):
  the Neyman–Pearson test rejects P for the smallest losses first.

A PMF on the grid {i·step} additionally composes by convolution (``compose``) and
self-composes by an FFT power (``self_compose``). ``slack`` is an absolute
allowance on δ that a *lower* bound subtracts (see ``self_compose``): the exact δ of
the composed law lies in [δ_pmf − slack, δ_pmf] for an optimistic PMF.
"""

from __future__ import annotations

import math
from typing import Optional

import attrs
import numpy as np
import scipy.fft

from .validation import check_count, check_real

__all__ = ["LossPMF", "MAX_GRID_POINTS", "compose_pmfs"]

#: Largest grid a PMF may occupy; beyond it the caller must coarsen the grid.
MAX_GRID_POINTS = 1 << 23

#: Mass below which an entry of a composed PMF is dropped (tails are accounted for).
_TRUNCATION = 1e-30


def _as_masses(a: np.ndarray) -> np.ndarray:
    a = np.asarray(a, dtype=float)
    a.setflags(write=False)
    return a


@attrs.frozen(eq=False)
class LossPMF:
    """Atoms of a privacy-loss law under P, sorted, plus the mass at +∞.

    ``step``/``offset`` are set when the atoms are the grid points
    (offset + i)·step, which composition requires.
    """

    losses: np.ndarray = attrs.field(converter=_as_masses)
    masses: np.ndarray = attrs.field(converter=_as_masses)
    inf_mass: float = attrs.field(default=0.0, converter=float)
    slack: float = attrs.field(default=0.0, converter=float)
    step: Optional[float] = None
    offset: Optional[int] = None

    def __attrs_post_init__(self) -> None:
        if self.losses.shape != self.masses.shape or self.losses.ndim != 1:
            raise ValueError("losses and masses must be 1-d arrays of the same length")
        if np.any(~np.isfinite(self.losses)):
            raise ValueError("losses must be finite; put infinite losses in inf_mass")
        if np.any(np.diff(self.losses) <= 0):
            raise ValueError("losses must be strictly increasing")
        if np.any(self.masses < 0) or not np.all(np.isfinite(self.masses)):
            raise ValueError("masses must be finite and non-negative")
        if not (0.0 <= self.inf_mass <= 1.0 + 1e-9):
            raise ValueError(f"inf_mass must be in [0, 1], got {self.inf_mass}")
        total = float(self.masses.sum()) + self.inf_mass
        if total > 1.0 + 1e-6:
            raise ValueError(f"total mass must be at most 1, got {total}")

    # ----------------------------------------------------------------- builders
    @classmethod
    def on_grid(cls, step: float, offset: int, masses: np.ndarray, inf_mass: float = 0.0,
                slack: float = 0.0) -> "LossPMF":
        """A PMF on the grid (offset + i)·step, trimmed of zero mass at both ends."""
        masses = np.asarray(masses, dtype=float)
        nz = np.flatnonzero(masses > 0)
        if nz.size == 0:
            masses, lo = np.zeros(1), 0
        else:
            lo, hi = nz[0], nz[-1] + 1
            masses = masses[lo:hi]
        offset = int(offset) + int(lo)
        losses = (offset + np.arange(masses.size)) * step
        return cls(losses, masses, inf_mass, slack, float(step), offset)

    @classmethod
    def from_atoms(cls, losses: np.ndarray, masses: np.ndarray, inf_mass: float = 0.0) -> "LossPMF":
        """A PMF from unsorted atoms; equal losses are merged, zero masses dropped."""
        losses = np.asarray(losses, dtype=float)
        masses = np.asarray(masses, dtype=float)
        keep = masses > 0
        uniq, inv = np.unique(losses[keep], return_inverse=True)
        merged = np.bincount(inv, weights=masses[keep], minlength=uniq.size)
        return cls(uniq, merged, inf_mass)

    # ------------------------------------------------------------------ queries
    @property
    def total_mass(self) -> float:
        return float(self.masses.sum()) + self.inf_mass

    def _tail_sums(self) -> tuple[np.ndarray, np.ndarray]:
        """S_j = Σ_{i≥j} p_i and log U_j = log Σ_{i≥j} p_i e^{−l_i}, with a sentinel."""
        p = self.masses
        s = np.append(np.cumsum(p[::-1])[::-1], 0.0)
        with np.errstate(divide="ignore"):
            logw = np.log(p) - self.losses
        logu = np.append(np.logaddexp.accumulate(logw[::-1])[::-1], -np.inf)
        return s, logu

    def delta(self, eps: "np.ndarray | float") -> np.ndarray:
        """δ(ε) for an array of ε (±∞ allowed), minus ``slack`` (never below 0)."""
        eps = np.asarray(eps, dtype=float)
        s, logu = self._tail_sums()
        j = np.searchsorted(self.losses, eps, side="right")
        with np.errstate(invalid="ignore", over="ignore"):
            inner = s[j] - np.exp(np.where(np.isfinite(eps), eps, 0.0) + logu[j])
        inner = np.where(eps == np.inf, 0.0, inner)
        inner = np.where(eps == -np.inf, s[0], inner)
        return np.maximum(inner + self.inf_mass - self.slack, 0.0)

    def epsilon(self, delta: "np.ndarray | float") -> np.ndarray:
        """Smallest ε ≥ 0 with δ(ε) ≤ delta; +∞ where delta is below the mass at +∞."""
        delta = np.asarray(delta, dtype=float)
        target = delta + self.slack - self.inf_mass  # what the finite atoms may contribute
        if self.masses.size == 0:
            return np.where(target < 0, np.inf, 0.0)
        s, logu = self._tail_sums()
        l = self.losses
        # δ at the atoms (finite part): δ_j = S_{j+1} − e^{l_j} U_{j+1}, decreasing in j.
        with np.errstate(over="ignore"):
            at_atoms = np.maximum(s[1:] - np.exp(l + logu[1:]), 0.0)
        # first atom whose δ is already ≤ target; the answer lies in [l_{j-1}, l_j],
        # where δ(ε) = S_j − e^ε U_j.
        j = np.searchsorted(-at_atoms, -target, side="left")
        j = np.minimum(j, l.size - 1) if l.size else j
        with np.errstate(divide="ignore", invalid="ignore"):
            cand = np.log(np.maximum(s[j] - target, 0.0)) - logu[j]
        left = np.where(j > 0, l[np.maximum(j - 1, 0)], -np.inf) if l.size else -np.inf
        right = l[j] if l.size else np.inf
        out = np.clip(np.nan_to_num(cand, nan=-np.inf), left, right)
        out = np.where(target < 0, np.inf, out)
        return np.maximum(out, 0.0)

    def cgf(self, t: "np.ndarray | float") -> np.ndarray:
        """K(t) = log E_P[e^{tL}]; +∞ for t > 0 when there is mass at +∞."""
        t = np.asarray(t, dtype=float)
        with np.errstate(divide="ignore"):
            logp = np.log(self.masses)
        vals = np.array([np.logaddexp.reduce(logp + tt * self.losses) if self.masses.size
                         else -np.inf for tt in np.ravel(t)])
        vals = vals.reshape(t.shape)
        if self.inf_mass > 0:
            vals = np.where(t > 0, np.inf, vals)
            vals = np.where(t == 0, np.logaddexp(vals, np.log(self.inf_mass)), vals)
        return vals

    def mean(self) -> float:
        """E_P[L] (the KL divergence D(P‖Q)); +∞ with mass at +∞."""
        if self.inf_mass > 0:
            return np.inf
        return float(np.dot(self.masses, self.losses) / max(self.masses.sum(), 1e-300))

    def tradeoff_vertices(self) -> tuple[np.ndarray, np.ndarray]:
        """Vertices of T(P, Q) as (1 − α_j, β_j), both decreasing in j.

        The Neyman–Pearson tests reject P on the atoms with the smallest losses
        first (Q's atom at −∞ at no cost in α): after rejecting everything up to
        atom j, 1 − α_j = P(L > l_j) and β_j = Q(L > l_j). Keeping the complement
        of α avoids cancelling O(1) numbers in the tails. The atom at +∞ (P only)
        is rejected last and buys nothing.
        """
        p = self.masses
        with np.errstate(over="ignore"):
            q = p * np.exp(-self.losses)
        s = np.cumsum(p[::-1])[::-1]
        u = np.cumsum(q[::-1])[::-1]
        alpha_c = np.concatenate([s, [0.0]]) + self.inf_mass
        beta = np.concatenate([u, [0.0]])
        alpha_c = np.append(alpha_c, 0.0)
        beta = np.append(beta, 0.0)
        return alpha_c, np.minimum(beta, 1.0)

    def topped_up(self) -> "LossPMF":
        """This PMF with the P-mass its sums lost to roundoff (1 − Σp − m_∞ > 0, by
        ``math.fsum``) put on its largest finite loss — pessimistic, since wherever the
        exact law had it, it was no higher. The sound trade-off is built from this:
        a lost 1e-13 (a grid of 10⁴ differences of profile values, compounded by
        composition) is nothing to δ, but it is P-mass that no test pays for, so it
        shifts the start of the trade-off curve by 1e-13 in α, where the curve's slope
        is the largest likelihood ratio (e^{22} for 100 Gaussians of σ = 2): β was
        3e-4 too large at α = 3e-12."""
        lost = (1.0 - self.inf_mass) - math.fsum(self.masses)
        if lost <= 0.0:
            return self
        if self.masses.size == 0:
            return attrs.evolve(self, inf_mass=min(1.0, self.inf_mass + lost))
        masses = self.masses.copy()
        masses[-1] += lost
        return attrs.evolve(self, masses=masses)

    def tradeoff_alphas(self) -> np.ndarray:
        """α_j of the vertices of ``tradeoff_vertices``, accurate near α = 0.

        α_j = 1 − (1 − α_j) loses a tiny α_j to cancellation (the complement sums
        thousands of masses), and the trade-off there is as steep as the largest
        likelihood ratio, so that roundoff shows in β. Here α_j = (1 − m_∞ − Σp) +
        Σ_{k<j} p_k, the constant by ``math.fsum`` (correctly rounded) and the sum from
        the bottom.
        """
        p = self.masses
        lead = (1.0 - self.inf_mass) - math.fsum(p)
        return np.concatenate([lead + np.concatenate([[0.0], np.cumsum(p)]), [1.0]])

    def tradeoff_slopes(self) -> np.ndarray:
        """−dβ/dα along the segments between the vertices of ``tradeoff_vertices``: the
        likelihood ratio e^{−l_j} of the atom each segment rejects (0 for the atom at
        +∞), exact and non-increasing — unlike differences of cumulative sums, which
        are noise where the masses are roundoff-sized."""
        with np.errstate(over="ignore"):
            return np.concatenate([np.exp(-self.losses), [0.0]])

    # -------------------------------------------------------------- composition
    def _require_grid(self, other: Optional["LossPMF"] = None) -> None:
        if self.step is None or (other is not None and other.step is None):
            raise ValueError("composition needs PMFs on a grid; discretise first")
        if other is not None and not np.isclose(self.step, other.step, rtol=1e-12, atol=0):
            raise ValueError(f"cannot compose PMFs with grid steps {self.step} and {other.step}; "
                             "discretise both with the same step")

    def compose(self, other: "LossPMF", *, pessimistic: bool = True) -> "LossPMF":
        """The law of L₁ + L₂ (independent): linear convolution, losses add.

        Masses at +∞ combine as 1 − (1 − m₁)(1 − m₂); slacks add (δ is 1-Lipschitz in
        total variation and convolution does not expand it).
        """
        self._require_grid(other)
        n = self.masses.size + other.masses.size - 1
        if n > MAX_GRID_POINTS:
            raise ValueError(f"composed PMF needs {n} grid points (max {MAX_GRID_POINTS}); "
                             "use a coarser step")
        a, b = self.masses, other.masses
        if min(a.size, b.size) > 64:
            size = scipy.fft.next_fast_len(n, real=True)
            masses = scipy.fft.irfft(scipy.fft.rfft(a, size) * scipy.fft.rfft(b, size), size)[:n]
            err = _fft_roundoff(n, _norm(a) + _norm(b), _norm(masses))
        else:
            masses = np.convolve(a, b)
            err = 2.0 * min(a.size, b.size) * _U  # sums of non-negative products
        inf = -np.expm1(np.log1p(-self.inf_mass) + np.log1p(-other.inf_mass))
        return _settle(self.step, self.offset + other.offset, masses, inf,
                       self.slack + other.slack, err, pessimistic)

    def self_compose(self, count: int, *, pessimistic: bool = True,
                     tail: float = 1e-18) -> "LossPMF":
        """The law of the sum of ``count`` independent copies (see ``compose_pmfs``)."""
        count = check_count("count", count)
        if count == 1:
            return self
        return compose_pmfs([(self, count)], pessimistic=pessimistic, tail=tail)


def compose_pmfs(items: "list[tuple[LossPMF, int]]", *, pessimistic: bool = True,
                 tail: float = 1e-18) -> LossPMF:
    """The law of Σ_i (sum of c_i copies of L_i), independent, by inverse FFT.

    Each PMF is folded onto one circular grid of size n and transformed once; the
    spectra are raised to their counts and multiplied in polar form (accurate phases
    for large counts). The window [lo, hi] of the sum is chosen by Chernoff bounds
    with the summed CGF K(t) = Σ c_i K_i(t): P(S > hi) ≤ exp(K(t) − t·hi),
    P(S < lo) ≤ exp(K(−t) + t·lo), so the circular (aliased) result differs from the
    linear convolution by at most the two bounds' sum w in total variation.

    Roundoff is bounded coefficient by coefficient (``_circular_compose``). Its ℓ1
    total T is added, for a pessimistic PMF, to the mass of the top entry (valid since
    δ(ε) = Σ r_s(1 − e^{ε−l_s})₊ has weights increasing in l_s); for an optimistic one,
    to the slack. T is about 1e-13·count, so δ below ~1e-11 is sound but loose.
    """
    if not items:
        raise ValueError("compose_pmfs needs at least one PMF")
    tail = check_real("tail", tail, lo=0.0, hi=1e-3, lo_open=True)
    items = [(p, check_count("count", c)) for p, c in items]
    first = items[0][0]
    for p, _ in items:
        first._require_grid(p)
    step = first.step
    log_keep = sum(c * np.log1p(-p.inf_mass) for p, c in items)
    inf = -np.expm1(log_keep)
    slack = sum(c * p.slack for p, c in items)
    if any(p.masses.sum() <= 0 for p, _ in items):
        return LossPMF.on_grid(step, 0, np.zeros(1), inf, slack)
    cgf = _SummedCGF(items)
    lo_idx, hi_idx, wrapped = cgf.window(step, tail)
    size = hi_idx - lo_idx + 1
    if size > MAX_GRID_POINTS:
        raise ValueError(f"the composition needs {size} grid points (max {MAX_GRID_POINTS}); "
                         "use a coarser step")
    n = scipy.fft.next_fast_len(size, real=True)
    window = np.arange(lo_idx, hi_idx + 1)
    circ, total = _circular_compose(items, n)
    raw = circ[window % n]
    masses = np.maximum(raw, 0.0)
    neg = float(-raw[raw < 0].sum())
    # the roundoff bound (and the mass of zeroed negative entries) goes on the top
    # entry when pessimistic: δ's weights (1 − e^{ε−l})₊ increase with l, so no δ(ε)
    # moves by more than the bound times that entry's weight
    bulk = total + neg
    if pessimistic:
        masses[-1] += bulk
        inf = min(1.0, inf + wrapped)
    else:
        slack += bulk + wrapped
    # Entries below the roundoff floor are noise; at very negative losses their implied
    # Q-masses p·e^{−l} would be large. Pessimistic: round that left tail up onto the
    # first trustworthy loss (raising losses is always pessimistic, for δ and for the
    # trade-off alike); optimistic: drop it.
    return _truncate(step, lo_idx, masses, inf, slack, pessimistic, floor=bulk)


class _SummedCGF:
    """K(θ) = Σ c_i K_i(θ) of the finite parts on a θ grid, for the Chernoff window."""

    def __init__(self, items):
        self.thetas = np.concatenate([-np.geomspace(1e2, 1e-2, 5), [0.0], np.geomspace(1e-2, 1e2, 9)])
        k = np.zeros(self.thetas.size)
        self.s_min = self.s_max = 0.0
        pos = self.thetas >= 0
        for pmf, c in items:
            l, p = pmf.losses, pmf.masses
            ref = np.where(pos, l[-1], l[0])
            with np.errstate(divide="ignore"):
                k += c * (self.thetas * ref + np.log(
                    (np.exp(self.thetas[:, None] * (l[None, :] - ref[:, None])) * p).sum(axis=1)))
            self.s_min += c * l[0]
            self.s_max += c * l[-1]
        self.k = k

    def window(self, step: float, tail: float) -> tuple[int, int, float]:
        """Grid indices [lo, hi] holding the sum up to ``tail`` mass each side, and the
        mass that may fall outside (Chernoff: P(S > hi) ≤ exp(K(t) − t·hi), t > 0)."""
        pos, neg = self.thetas > 0, self.thetas < 0
        tp, kp = self.thetas[pos], self.k[pos]
        tm, km = -self.thetas[neg], self.k[neg]
        log_tail = np.log(tail)
        hi = min(np.min((kp - log_tail) / tp), self.s_max)
        lo = max(np.max((log_tail - km) / tm), self.s_min)
        hi_idx = int(np.ceil(hi / step - 1e-9))
        lo_idx = int(np.floor(lo / step + 1e-9))
        hi_eff, lo_eff = hi_idx * step, lo_idx * step
        w_hi = 0.0 if hi_eff >= self.s_max - 0.5 * step else float(np.exp(np.min(kp - tp * hi_eff)))
        w_lo = 0.0 if lo_eff <= self.s_min + 0.5 * step else float(np.exp(np.min(km + tm * lo_eff)))
        return lo_idx, hi_idx, w_hi + w_lo


def _circular_compose(items, n: int) -> tuple[np.ndarray, float]:
    """Circular composition on n points; returns (masses on the circle, ℓ1 roundoff bound)."""
    gamma = _gamma(n)
    specs = []
    log_mag = np.zeros(n // 2 + 1)
    phase = np.zeros(n // 2 + 1)
    log_scale = 0.0
    for p, c in items:
        mass = float(p.masses.sum())
        log_scale += c * np.log(mass)
        idx = (p.offset + np.arange(p.masses.size)) % n
        folded = np.bincount(idx, weights=p.masses / mass, minlength=n)
        spec = scipy.fft.rfft(folded)
        with np.errstate(divide="ignore"):
            lm = np.log(np.abs(spec))
        log_mag += c * lm
        phase += c * np.angle(spec)
        specs.append((lm, c))
    circ = scipy.fft.irfft(np.exp(log_mag) * np.exp(1j * phase), n)
    # Roundoff, coefficient by coefficient: each computed z_{i,f} is within γ‖x_i‖₁ = γ
    # of the exact one, so Π z_i^{c_i} moves by at most |Z_f|·Σ_i c_i γ/|z_{i,f}| (|z| ≤ 1),
    # plus the polar evaluation's own ≤ 4u(π + |log|z||) per factor.
    rel = np.zeros(n // 2 + 1)
    for lm, c in specs:
        with np.errstate(over="ignore", invalid="ignore"):
            rel += c * (gamma * np.exp(-lm) + 4.0 * _U * (np.pi + np.abs(lm)))
    with np.errstate(over="ignore", invalid="ignore"):
        dz = np.exp(log_mag) * rel
    dz = np.where(np.isfinite(dz), dz, gamma)
    factor = np.exp(log_scale)
    return circ * factor, _ifft_l1_error(n, dz, _norm(circ)) * factor


def _gamma(n: int) -> float:
    """Error constant of a length-n FFT: γ = 5·log₂(n)·u (Higham, Accuracy and
    Stability of Numerical Algorithms, 2nd ed., Thm 24.2, constants rounded up); we
    use it coefficient-wise, |Δz_f| ≤ γ‖x‖₁, each output being log₂ n butterfly
    stages over the inputs."""
    return 5.0 * np.log2(max(n, 2)) * _U


def _ifft_l1_error(n: int, dz_half: np.ndarray, norm_out: float) -> float:
    """ℓ1 error of an inverse real FFT given coefficient errors on the half spectrum:
    ‖Δr‖₁ ≤ √n‖Δr‖₂ ≤ ‖ΔZ‖₂ + √n·γ‖r‖₂ (the 1/n-normalised inverse divides ‖ΔZ‖₂ by √n)."""
    full = np.sqrt(2.0 * np.sum(dz_half ** 2))
    return 1.01 * (full + np.sqrt(n) * _gamma(n) * (norm_out + full / np.sqrt(n)))


def _norm(a: np.ndarray) -> float:
    """ℓ2 norm without a BLAS call (whose threading costs more than the sum here)."""
    return float(np.sqrt(np.sum(a * a)))


#: Unit roundoff of float64.
_U = np.finfo(float).eps / 2


def _fft_roundoff(n: int, norm_in: float, norm_out: float) -> float:
    """ℓ1 error bound of a linear convolution by zero-padded FFT.

    Forward FFTs: ‖ẑ − z‖₂ ≤ γ√n‖x‖₂ each; the product of two spectra with |z| ≤ 1 moves
    by at most the sum; then ``_ifft_l1_error``. ``norm_in`` = ‖a‖₂ + ‖b‖₂.
    """
    gamma = _gamma(n)
    dz = gamma * np.sqrt(n) * norm_in * (1.0 + gamma)
    return 1.01 * (dz + np.sqrt(n) * gamma * (norm_out + dz / np.sqrt(n)))


def _settle(step: float, offset: int, raw: np.ndarray, inf_mass: float, slack: float,
            err: float, pessimistic: bool) -> "LossPMF":
    """Turn a computed (roundoff-carrying) composition into a certified PMF.

    ``err`` bounds how far any δ(ε) of ``raw`` may be from the exact composition.
    Negative entries are roundoff: zeroing them only adds mass. A pessimistic PMF
    absorbs ``err`` into its mass at +∞ (which raises every δ by exactly that); an
    optimistic one into its slack, together with the mass zeroing added.
    """
    neg = float(-raw[raw < 0].sum())
    masses = np.maximum(raw, 0.0)
    if pessimistic:
        inf_mass = min(1.0, inf_mass + err)
    else:
        slack = slack + err + neg
    return _truncate(step, offset, masses, inf_mass, slack, pessimistic)


def _truncate(step: float, offset: int, masses: np.ndarray, inf_mass: float, slack: float,
              pessimistic: bool, floor: float = 0.0) -> LossPMF:
    """Drop tails of mass < _TRUNCATION each (the left one up to ``floor``), soundly.

    Pessimistic: the right tail goes to +∞ and the left tail is rounded up onto the
    first kept point. Optimistic: the right tail is rounded down onto the last kept
    point and the left tail goes to −∞ (dropped): both only lower every loss.
    """
    c = np.cumsum(masses)
    total = c[-1] if c.size else 0.0
    lo = int(np.searchsorted(c, max(_TRUNCATION, floor), side="right"))
    rc = total - c  # mass strictly right of each index
    hi = int(np.searchsorted(-rc, -_TRUNCATION, side="left"))  # first index with tail ≤ trunc
    lo = min(lo, masses.size - 1)
    hi = max(hi, lo)
    left = float(c[lo - 1]) if lo > 0 else 0.0
    right = float(rc[hi])
    kept = masses[lo:hi + 1].copy()
    if pessimistic:
        kept[0] += left
        inf_mass = min(1.0, inf_mass + right)
    else:
        kept[-1] += right
    return LossPMF.on_grid(step, offset + lo, kept, inf_mass, slack)

"""Composition of loss laws in the Fourier domain, with exponential tilting.

``compose_pmfs`` gives the law of Σ_i (c_i copies of L_i) for laws on one grid: one
forward FFT per distinct law, spectra raised to their counts and multiplied, one
inverse FFT, at a few tilts θ so that the tails that set small δ keep their relative
precision, with rigorous roundoff and aliasing bounds on both sides (its docstring).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable
from typing import Any, TypeAlias

import numpy as np

from accounting.numerics.loss import (
    MAX_GRID_POINTS,
    UNIT_ROUNDOFF,
    LossPMF,
    array_fsum,
    check_built_mass,
    check_grid_points,
    grid_of,
    hockey_stick,
)
from accounting.numerics.summed_cgf import FAR_TAIL, SummedCGF
from accounting.validation import check_count, check_real
from accounting.vocabulary import InvariantError

__all__ = ["compose_pmfs", "compose_laws", "self_compose_law", "composed_grid_points",
           "RefiningLaw", "TiltedPasses", "LAZY_RTOL", "weighted_sum_up"]

#: the laws of a composition with their counts
_Items: TypeAlias = list[tuple[LossPMF, int]]
#: a float dtype of the transforms (float64, or long double for long compositions)
_Dtype: TypeAlias = type[np.floating[Any]]
#: ``_prepare``'s data of one law: log masses, losses, log total mass, (max |loss|,
#: log₂(size + 1)), circle index of the first atom
_Prepared: TypeAlias = tuple[np.ndarray, np.ndarray, float, tuple[float, float], int]
#: one tilted pass on the window: (entries, E, K(θ), η) (``_circular_compose``)
_Run: TypeAlias = tuple[np.ndarray, float, float, float]

#: Mass below which an entry of a composed PMF is dropped (tails are accounted for).
_TRUNCATION = 1e-40
#: a circle holds the whole support of the sum when that is at most this many times
#: the window: then no tilt folds anything onto the window
_PAD = 1.5


def composed_grid_points(items: list[tuple[LossPMF, int]], tail: float = 1e-18) -> int:
    """Number of grid points the composition of ``items`` occupies (its Chernoff
    window), computed from the laws' CGFs without composing anything."""
    items = [(p, check_count("count", c)) for p, c in items]
    if any(p.masses.sum() <= 0 for p, _ in items):
        return 1
    lo, hi = SummedCGF(items).window(grid_of(items[0][0])[0], tail)[:2]
    return hi - lo + 1


def compose_pmfs(items: list[tuple[LossPMF, int]], *, pessimistic: bool = True,
                 tail: float = 1e-18) -> LossPMF:
    """The law of Σ_i (sum of c_i copies of L_i), independent, in the Fourier domain.

    All laws share one circular grid of n points, the Chernoff window [lo, hi] of the
    sum (P(S < lo) ≤ ``tail``, P(S > hi) ≤ 1e-32, from the summed CGF
    K(θ) = Σ c_i K_i(θ)). Each distinct law is transformed once, the spectra are
    raised to their counts and multiplied in polar form, and one inverse FFT gives the
    sum: n distinct mechanisms cost n forward FFTs and one inverse.

    **Tails with relative precision: exponential tilting.** FFT roundoff is absolute,
    about 1e-16 times the largest entry, so the plain transform cannot resolve the
    1e-15 masses that set δ = 1e-15. For θ ≥ 0 the tilted laws p_θ(l) = e^{θl − K(θ)}p(l)
    compose to the tilted sum (e^{θs} factors multiply), whose mass sits near
    s = K'(θ). We compose at a few θ (``SummedCGF.tilts``: 0 for the bulk, then steps chosen so
    that the Chernoff factor e^{K(θ)−θs} is within e^{12} of its best between tilts),
    untilt, p(s) = e^{K(θ)−θs}·r_θ(s), and keep for each s the tightest of the
    intervals the tilts certify for it (``TiltedPasses.law``). This is preferred to
    exact composition of finite supports because it serves every law (Gaussian mixtures as well as randomized response),
    costs a handful of FFTs, and its error bound is the Chernoff bound times 1e-13 or
    so: a relative, not an absolute, error where δ is small.

    **Rigour.** For each θ the computed circle r̂ is within an entrywise bound E_θ
    (its ℓ2 error, ``_circular_compose``: forward-FFT error γ‖x‖₁ per coefficient,
    carried through the powers exactly by |Π(z+Δ)^c − Πz^c| ≤ Π(|z|+γ)^c − Π|z|^c,
    then the inverse FFT), so each entry of the sum is within
    b(s) = e^{K(θ)−θs}(E_θ + η) of the circular composition (η: relative rounding of
    the tilting, also bounded). The circular composition is the linear one plus the
    mass folded in from outside the window, which is non-negative and, per entry, at
    most the tilted mass outside (Chernoff again, w_θ).

    * Pessimistic: p' = min over θ of max(p̂_θ, 0) + b_θ ≥ p entrywise on the window
      (every tilt's estimate is the exact entry plus a non-negative fold, so every
      one of these is an upper bound, the lowest the tightest); the mass above
      the window (≤ the Chernoff bound) goes to +∞. Then the total is brought to one
      by removing mass from the lowest losses, or adding it to the lowest kept loss:
      the result stochastically dominates the exact law (its tail sums are ≥ at every
      threshold), so its δ(ε) = E[(1 − e^{ε−L})₊] is ≥ the exact one at every ε and so
      is its trade-off, and dominance survives further composition.
    * Optimistic: p'' = max over θ of (p̂_θ − b_θ − e^{K(θ)−θs}w_θ)₊ ≤ p entrywise;
      mass outside the window is dropped. Dominated, for the same reasons.

    The Chernoff bound F·e^{K(θ)−θs} on the entry itself (``TiltedPasses.log_cap``)
    caps the pessimistic mass where no composed tilt resolves an entry (the
    optimistic one is then 0): every law is finite and sound whatever tilts it is
    built from, which lets ``RefiningLaw`` answer a query from the one or two tilts
    it needs.

    The masses at +∞ combine as 1 − Π(1 − m_i)^{c_i}; the optimistic slacks add.
    """
    items, tail = _checked(items, tail)
    trivial = _trivial(items, pessimistic)
    if trivial is not None:
        return trivial
    passes = TiltedPasses(items, tail)
    return passes.law(passes.canonical, pessimistic)[0]


def compose_laws(a: LossPMF, b: LossPMF, *, pessimistic: bool = True) -> LossPMF:
    """The law of L₁ + L₂ (independent): losses add (see ``compose_pmfs``)."""
    a._require_grid(b)
    return compose_pmfs([(a, 1), (b, 1)], pessimistic=pessimistic)


def self_compose_law(law: LossPMF, count: int, *, pessimistic: bool = True,
                     tail: float = 1e-18) -> LossPMF:
    """The law of the sum of ``count`` independent copies of ``law`` (see
    ``compose_pmfs``)."""
    count = check_count("count", count)
    if count == 1:
        return law
    return compose_pmfs([(law, count)], pessimistic=pessimistic, tail=tail)


def _checked(items: Iterable[tuple[LossPMF, int]], tail: float) -> tuple[_Items, float]:
    """``items`` with checked counts on one grid, and the checked ``tail``."""
    if not items:
        raise ValueError("compose_pmfs needs at least one PMF")
    tail = check_real("tail", tail, lo=0.0, hi=1e-3, lo_open=True)
    checked = [(p, check_count("count", c)) for p, c in items]
    first = checked[0][0]
    for p, _ in checked:
        first._require_grid(p)
    return checked, tail


def _inf_and_slack(items: _Items) -> tuple[float, float]:
    """The composed mass at +∞, 1 − Π(1 − m_i)^{c_i}, and the summed optimistic slack."""
    log_keep = sum(c * math.log1p(-min(p.inf_mass, 1.0)) if p.inf_mass < 1.0 else -np.inf
                   for p, c in items)
    return float(-np.expm1(log_keep)), sum(c * p.slack for p, c in items)


def _trivial(items: _Items, pessimistic: bool) -> LossPMF | None:
    """The composition where no Fourier transform is needed (a law without finite
    mass; two laws one of which has few atoms: ``_direct_pair``), else None."""
    inf, slack = _inf_and_slack(items)
    sup = _summed_sup(items)
    bounded = _summed_bounded(items)
    if any(p.masses.sum() <= 0 for p, _ in items):
        return LossPMF.on_grid(grid_of(items[0][0])[0], 0, np.zeros(1), inf, slack, sup_loss=sup,
                               bounded=bounded)
    if len(items) == 2 and items[0][1] == items[1][1] == 1 and \
            min(items[0][0].masses.size, items[1][0].masses.size) <= 64:
        return _direct_pair(items[0][0], items[1][0], inf, slack, sup, pessimistic, bounded)
    return None


class TiltedPasses:
    """The θ-tilted circular compositions of one sum (``compose_pmfs``' method), each
    computed once, and the sound law that any set of them gives (``law``).

    ``canonical`` is the set ``compose_pmfs`` uses (``SummedCGF.tilts``: relative
    precision over the whole window); ``saddle`` and ``chernoff_quantile`` choose the
    one a single query needs (``RefiningLaw``). With ``keep`` each pass's circle is
    kept (8 bytes a grid point a tilt) for reuse by later sets.
    """

    def __init__(self, items: _Items, tail: float, keep: bool = False,
                 far_tail: float = FAR_TAIL) -> None:
        self.items = items
        self.step = step = grid_of(items[0][0])[0]
        self.inf, self.slack = _inf_and_slack(items)
        self.sup = _summed_sup(items)
        self.bounded = _summed_bounded(items)
        # the finite part of the exact sum has mass F = Π m_i^{c_i}; compose the
        # normalised laws and scale by F at the end
        self.log_f = sum(c * math.log(float(p.masses.sum())) for p, c in items)
        self.cgf = cgf = SummedCGF(items)
        # (``far_tail``: the mass allowed above the window, sent to +∞ by the
        # pessimistic side; a query for δ far below ``FAR_TAIL`` asks for less)
        self.lo_idx, self.hi_idx, _ = cgf.window(step, tail, far_tail=far_tail)
        # (the optimistic side subtracts what the circle folds in; that is bounded per
        # entry, small except near the window's ends, where the untilted or oppositely
        # tilted estimate is chosen: no wider window is needed)
        size = self.hi_idx - self.lo_idx + 1
        check_grid_points(size, step, "the composition", uses=sum(c for _, c in items))
        import scipy.fft  # lazy: scipy.fft (and scipy.special under it) is most of import time
        n = scipy.fft.next_fast_len(size, real=True)
        # a circle that holds the whole support of the sum folds nothing onto the
        # window, at any tilt (a positive tilt's heavy top wraps onto the low losses
        # otherwise): worth up to ``_PAD`` times the points
        support = int(round((cgf.s_max - cgf.s_min) / step)) + 1
        if support <= _PAD * size and support <= MAX_GRID_POINTS:
            n = max(n, scipy.fft.next_fast_len(support, real=True))
        self.n = n
        window = np.arange(self.lo_idx, self.hi_idx + 1)
        self.s = window * step
        # long compositions amplify the forward-FFT error by the count: use extended
        # precision for the transforms when float64 would leave a relative 1e-9 or more
        self.dtype: _Dtype = np.longdouble if sum(c for _, c in items) * _gamma(n) > 1e-9 else np.float64
        self._prepared = _prepare(items, self.dtype)
        self._on_circle = window % n
        # where the fold bounds are read, the same for every θ
        self._above = cgf.tail_index((window + n - 0.5) * step, True)
        self._below = cgf.tail_index((window - n + 0.5) * step, False)
        self._keep = keep
        self._runs: dict[int, _Run] = {}
        self._log_cap: np.ndarray | None = None

    @functools.cached_property
    def canonical(self) -> tuple[int, ...]:
        """The tilts that resolve the whole window (``SummedCGF.tilts``), each judged
        with its fold (``_fold_penalty``): a tilt centred past the top of the window
        folds its heavy tilted top onto the losses below, so it is not chosen for them
        (DP-SGD at σ = 0.968: θ = 7.8 where 5.6 serves, 3.6e-6 of ε too high)."""
        return tuple(self.cgf.tilts(self.lo_idx * self.step, self.hi_idx * self.step,
                                    penalty=self._fold_penalty))

    def _fold_penalty(self, s: np.ndarray) -> np.ndarray:
        """log(1 + w_θ(s)/E) for every grid θ (rows) at each s: how much the bound on
        the mass the circle folds onto s adds to a typical rounding bound E = 1e-14.
        Past 64 points it is computed at 41 evenly spaced ones and interpolated (it
        only ranks tilts)."""
        s = np.asarray(s, dtype=float)
        if s.size > 64 and s.max() > s.min():
            g = np.linspace(s.min(), s.max(), 41)
            coarse = self._fold_penalty(g)
            pos = (s - g[0]) / (g[1] - g[0])
            j = np.clip(np.floor(pos).astype(np.intp), 0, 39)
            f = (pos - j)[None, :]
            interpolated: np.ndarray = coarse[:, j] * (1.0 - f) + coarse[:, j + 1] * f
            return interpolated
        cgf, step, n = self.cgf, self.step, self.n
        w = _fold_bounds(cgf, s + (n - 0.5) * step, True) + \
            _fold_bounds(cgf, s - (n - 0.5) * step, False)
        penalty: np.ndarray = np.log1p(w / 1e-14)
        return penalty

    def saddle(self, s: np.ndarray) -> np.ndarray:
        """Index of the grid θ that resolves the entry at each s best, by its predicted
        bound e^{K(θ)−θs}·(E + w_θ(s)): the Chernoff factor (smallest where the tilted
        sum is centred at s, K'(θ) ≈ s) times a typical rounding bound E = 1e-14 of a
        pass plus the fold bound w_θ(s) (``law``), which rules out a tilt whose tilted
        sum runs past the top of the window onto s."""
        s = np.asarray(s, dtype=float)
        flat = s.ravel()
        k, t = self.cgf.k, self.cgf.thetas
        score = k[:, None] - t[:, None] * flat[None, :] + self._fold_penalty(flat)
        best: np.ndarray = np.argmin(score, axis=0).reshape(s.shape)
        return best

    def chernoff_quantile(self, delta: np.ndarray) -> np.ndarray:
        """The smallest s with Chernoff bound F·e^{K(θ)−θs} ≤ δ over the grid θ > 0:
        P(S > s) ≤ δ there, so ε(δ) ≤ s — where a query for ε(δ) starts looking."""
        delta = np.asarray(delta, dtype=float)
        pos = self.cgf.thetas > 0
        k, t = self.cgf.k[pos], self.cgf.thetas[pos]
        with np.errstate(divide="ignore"):
            target = np.log(np.maximum(delta, 1e-300)).ravel() - self.log_f
        q = np.min((k[:, None] - target[None, :]) / t[:, None], axis=0)
        quantile: np.ndarray = np.clip(q, self.s[0], self.s[-1]).reshape(delta.shape)
        return quantile

    def _run(self, i: int) -> _Run:
        got = self._runs.get(i)
        if got is None:
            theta = float(self.cgf.thetas[i])
            circ, e2, log_m, eta = _circular_compose(self.items, self.n, theta, self.dtype,
                                                     self._prepared)
            got = (circ[self._on_circle], e2, log_m, eta)
            if self._keep:
                self._runs[i] = got
        return got

    def log_cap(self) -> np.ndarray:
        """log of a Chernoff bound on each entry of the exact sum: P(S = s) ≤
        F·e^{K(θ)−θs} for every θ (both signs: e^{θ(S−s)} ≥ 1 on {S ≥ s} for θ ≥ 0 and
        on {S ≤ s} for θ ≤ 0), with upper bounds on K at the grid θ best for each entry
        (``_best_lines``: the lower envelope of the lines K(θ) − θs, so never above the
        θ = 0 line, F itself), plus a margin for the rounding of K − θs. It keeps every
        entry finite and sound where no composed tilt resolves it. (The θ best at the
        nearest of 257 evenly spaced points, used before, is off by |θ|·Δs/2: e^{115}
        for three discrete Laplace laws at θ = 1000, a cap of 1e50 on a mass ≤ 1.) It
        is never above F itself (+1e-9 relative for the rounding of F), so it cannot
        overflow to +∞."""
        if self._log_cap is None:
            k, t, s = self.cgf.k, self.cgf.thetas, self.s
            j = _best_lines(k, t, s)
            val = k[j] - t[j] * s
            cap = self.log_f + val + 8.0 * UNIT_ROUNDOFF * (np.abs(k[j]) + np.abs(t[j] * s)) + 1e-12
            self._log_cap = np.minimum(cap, self.log_f + 1e-9)
        return self._log_cap

    def law(self, tilts: Iterable[int], pessimistic: bool) -> tuple[LossPMF, np.ndarray]:
        """The sound law from the passes at ``tilts`` (grid θ indices), and the
        allowance at each entry of the window: a bound on |law − exact| there, from
        which ``RefiningLaw`` judges whether an answer is as precise as the grid allows.

        Every pass certifies an interval for every entry: the circle is the exact
        entry plus a non-negative fold, so p ≤ p̂_θ + b_θ, and p ≥ p̂_θ − b_θ − w_θ
        (b: rounding, w: a bound on the fold). Any tilt's upper end is sound, so each
        entry takes the lowest upper and the highest lower end over the passes (and
        the Chernoff cap, ``log_cap``). One tilt an entry, the pessimistic side's
        chosen by its rounding bound alone, kept a positive tilt's fold: 2 ×
        subsampled Gaussian (q = 0.001, σ/Δ = 0.535), the fold of θ = 3.8 onto the
        losses near 0.04 put δ(1) at 2.9× its value."""
        step, s, cgf = self.step, self.s, self.cgf
        size = s.size
        upper = np.full(size, np.inf)              # certified p ≤ upper, per entry
        low = np.zeros(size)                       # certified p ≥ low
        for i in sorted(set(int(i) for i in tilts)):
            theta = float(cgf.thetas[i])
            raw, e2, log_m, eta = self._run(i)
            log_scale = self.log_f + log_m - theta * s   # untilting factor F·e^{K(θ)−θs}
            # the circle adds to the entry at s the tilted mass at s ± n·step, ± 2n·step,
            # …: at most the tilted mass at or beyond s + n·step plus that at or below
            # s − n·step (lattice points; half a step inside to be safe from rounding),
            # far less than the whole mass outside the window where s is far from the
            # end the fold comes from (Chernoff, ``SummedCGF.tails``); the lower end
            # must allow for it. The untilting's own rounding: 8u(1 + |log|) relative
            w = cgf.tails_at(i, self._above, True) + cgf.tails_at(i, self._below, False)
            rel = eta + 8.0 * UNIT_ROUNDOFF * (1.0 + np.abs(log_scale))
            # (an end that overflows is inf or NaN: fmin/fmax pass over it, the cap or
            # another pass decides there)
            with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
                scale = np.exp(log_scale)
                est = raw * scale
                err = np.exp(log_scale + np.log(e2 + rel * np.abs(raw)))
                upper = np.fmin(upper, np.maximum(est, 0.0) + err)
                low = np.fmax(low, est - err - scale * w)
        log_cap = self.log_cap()
        cap = np.exp(log_cap)
        upper = np.fmin(upper, cap)
        # (the two ends meet only to the rounding of the subtractions above)
        low = np.minimum(low, upper)
        allowance = upper - low
        carried = sum(c * p.roundoff for p, c in self.items)
        roundoff = carried + float(np.sum(allowance)) + math.exp(self.log_f) * cgf.outside(
            cgf.zero, self.lo_idx * step, self.hi_idx * step)
        inf = self.inf
        if pessimistic:
            masses = upper
            # the exact law's finite and +∞ parts total F + inf (the rest, if the inputs
            # lost mass, sits at −∞); mass above the window (exact part ≤ its Chernoff
            # bound) goes to +∞
            # (not clamped to 1: a pessimistic input may carry a little extra mass, 1e-10
            # from zeroed negative masses, and the composition must keep it)
            target = math.exp(self.log_f) + inf
            inf = min(1.0, inf + math.exp(self.log_f) * cgf.tail(cgf.zero, self.hi_idx * step, True))
            # the exact law has at least ``low`` at each s: what is above that may be
            # given back to settle the total
            masses, inf = _settle_up(masses, inf, target, low)
        else:
            masses = low
        law = _truncate(step, self.lo_idx, masses, inf, self.slack, pessimistic,
                        sup_loss=self.sup, roundoff=roundoff, bounded=self.bounded)
        return law, allowance


def _direct_pair(a: LossPMF, b: LossPMF, inf: float, slack: float, sup: float | None,
                 pessimistic: bool, bounded: bool = False) -> LossPMF:
    """L₁ + L₂ by direct convolution, for a law with few atoms: each entry is a sum of
    at most k = min(sizes) non-negative products, so it is within a relative
    (k + 1)·u·1.01 of the exact value (Higham, Accuracy and Stability, §3.1) — full
    relative precision everywhere, tails included, without any tilting."""
    raw = np.convolve(a.masses, b.masses)
    rel = 1.01 * (min(a.masses.size, b.masses.size) + 1) * UNIT_ROUNDOFF
    if pessimistic:
        target = array_fsum(a.masses) * array_fsum(b.masses) + inf
        masses, inf = _settle_up(raw * (1.0 + rel), inf, target)
    else:
        masses = raw * (1.0 - rel)
    roundoff = a.roundoff + b.roundoff + 2.0 * rel * array_fsum(raw)
    (step, a_offset), (_, b_offset) = grid_of(a), grid_of(b)
    return _truncate(step, a_offset + b_offset, masses, inf, slack, pessimistic, sup_loss=sup,
                     roundoff=roundoff, bounded=bounded)


def _summed_sup(items: _Items) -> float | None:
    """Σ c_i·sup_i of the components' certified largest losses (None if any is
    unknown), rounded up (``weighted_sum_up``): the sum of bounded losses is bounded
    by it."""
    sups = [p.sup_loss for p, _ in items]
    known = [v for v in sups if v is not None]
    if len(known) < len(sups):
        return None
    return weighted_sum_up([(c, v) for (_, c), v in zip(items, known)])


def weighted_sum_up(terms: list[tuple[float, float]]) -> float:
    """Σ c·v over (c, v) in ``terms``, the smallest float at or above the exact sum:
    summed in rationals and rounded up only where the nearest float is below it, so
    that k uses of an ε-DP law answer ε(0) = kε (an ulp above only when the exact
    product of the floats k and ε is)."""
    from fractions import Fraction
    if not all(math.isfinite(c) and math.isfinite(v) for c, v in terms):
        return math.inf
    exact = sum((Fraction(c) * Fraction(v) for c, v in terms), Fraction(0))
    total = float(exact)
    return float(np.nextafter(total, np.inf)) if Fraction(total) < exact else total


def _summed_bounded(items: _Items) -> bool:
    """Whether the sum has no mass at +∞ in exact arithmetic: every component's exact
    law has none (``LossPMF.bounded``) and their largest losses are known. Then what
    the pessimistic side sends to +∞ (the tail above the window, at most ``FAR_TAIL``;
    truncated right tails) is mass the exact sum holds at finite losses ≤ Σ c_i·sup_i:
    kept at +∞ it still dominates, and δ = 0 above that sum stays answerable."""
    return _summed_sup(items) is not None and all(p.inf_mass == 0 or p.bounded
                                                   for p, _ in items)


def _settle_up(masses: np.ndarray, inf: float, target: float,
               floor: np.ndarray | None = None) -> tuple[np.ndarray, float]:
    """Bring the total mass of a pessimistic law to ``target`` (that of the exact law
    above −∞) without losing dominance (``_settle_to``), then to at most one: the
    composition of the inputs dominates the exact law, whose total is at most one, so
    mass beyond one (inputs that carried extra mass, 1e-10 from zeroed negative
    masses) is removed from the lowest losses, whole entries upwards, which keeps
    every tail sum ≥ min(its own, 1) ≥ the exact one. Returns (masses, inf)."""
    masses, inf = _settle_to(masses, inf, target, floor)
    if _sum_below(masses) + inf > 1.0:
        masses, inf = _settle_to(masses, inf, 1.0, fill=False)
    return masses, inf


def _settle_to(masses: np.ndarray, inf: float, target: float,
               floor: np.ndarray | None = None, *,
               fill: bool = True) -> tuple[np.ndarray, float]:
    """Bring the total mass of a pessimistic law to ``target`` without losing
    dominance; returns (masses, inf).

    The entries m_s are ≥ the exact law's p_s (and ``inf`` ≥ its mass at +∞), so every
    tail sum R_t = inf + Σ_{s≥t} m_s is ≥ the exact G_t. A deficit (the exact law's
    mass below the window) is added to the lowest entry (unless ``fill`` is off). An
    excess is removed from the lowest losses upwards, entry s down to ``floor``_s ≤ p_s
    (default 0): entries below some k go to their floors, those above k are kept, and
    entry k gets what brings the tail sum at k to target − L_k, L_t = Σ_{s<t} floor_s.
    Every tail sum is then ≥ min(R_t, target − L_t) ≥ G_t, since the exact law has at
    least L_t below t: the law stays stochastically larger, so its δ(ε) and its
    trade-off stay pessimistic (so does any k at or below the exact crossover: a lower
    k only keeps more mass), and spreading the removal over the floors keeps the
    Q-masses p·e^{−l} of the lowest losses (the trade-off near α = 0) from being cut.
    Floors that alone exceed the target keep their excess: m ≥ p entrywise is
    pessimistic whatever the total.

    Certified rounding. Nothing large is subtracted (unresolved entries carry Chernoff
    caps, and removing whole entries by differences of their running sums lost the
    result to cancellation: 1.0000027 for three subsampled Gaussians, 1.8e9 for
    three discrete Laplace laws). R and L are running sums of non-negative terms, each
    within a relative γ ≈ 2√n·u of its exact value, used at their lower bounds
    (``_running_sums_below``). k is the last entry whose lower bound on R_k + L_k is
    ≥ the target, so the exact sum is too and entry k needs at most m_k; its new mass
    target − L_k − R_{k+1}, from the lower bounds and rounded up, is at least what it
    needs. Dominance is certified, and the total lies in [target, target·(1 + 2γ +
    4u)] (unless the floors alone exceed it): entry k + 1 fails the test, so L_k +
    R_{k+1} ≤ target·(1 + 2γ), and the lower bounds and the rounding up add at most
    that much beyond what entry k needs — 4e-14 for a window of 3.5e4 points, 1e-12
    at the largest grid, far inside the 1e-6 that ``LossPMF`` allows the float sum.
    """
    masses = np.asarray(masses, dtype=float)
    n = masses.size
    total = _sum_below(masses) + inf
    if total <= target or n == 0:
        if fill and n and total < target:
            masses = masses.copy()
            masses[0] += target - total
        return masses, inf
    floor = np.zeros(n) if floor is None else np.clip(floor, 0.0, masses)
    # R[t] = inf + Σ_{s≥t} m_s and L[t] = Σ_{s<t} floor_s, t = 0…n, at lower bounds
    r_low = _running_sums_below(np.concatenate([[inf], masses[::-1]]))[::-1]
    l_low = _running_sums_below(np.concatenate([[0.0], floor]))
    enough = (r_low[:n] + l_low[:n]) * (1.0 - 2.0 * UNIT_ROUNDOFF) >= target
    if not enough.any():
        return masses, inf            # an excess within rounding: pessimistic as it is
    k = int(np.flatnonzero(enough)[-1])
    # two subtractions of terms ≤ target, each within u of its result: 2u·target
    need = (target - l_low[k]) - r_low[k + 1] + 2.02 * UNIT_ROUNDOFF * target
    out = masses.copy()
    out[:k] = floor[:k]
    out[k] = min(max(need, floor[k]), masses[k])
    return out, inf


def _fold_bounds(cgf: SummedCGF, cuts: np.ndarray, upper: bool,
                 limit: int | None = 48) -> np.ndarray:
    """Chernoff bounds on the mass of every grid tilt θ_i above (``upper``) or below
    each cut, rows i: P_θi(S > c) ≤ min over θ' > θ_i of e^{K(θ') − K(θ_i) − (θ'−θ)c}
    (as ``SummedCGF.tail``, at the cuts themselves; 1 where no θ' lies beyond). The
    θ' range over at most ``limit`` grid points (evenly spaced, both ends included):
    a minimum over fewer θ' is still a bound, and a refined grid (775 θ for a
    Laplace sum) would otherwise cost m² per cut."""
    t, k, k_low = cgf.thetas, cgf.k, cgf.k_low
    m = t.size
    pick = np.arange(m) if limit is None or m <= limit else \
        np.unique(np.rint(np.linspace(0, m - 1, limit)).astype(np.intp))
    dt = t[None, pick] - t[:, None]                       # θ' − θ_i, [i, i']
    other = dt > 0 if upper else dt < 0
    gap = np.where(other, k[None, pick] - k_low[:, None], np.inf)
    out = np.empty((m, cuts.size))
    rows = max(1, (1 << 21) // max(1, m * pick.size))    # cuts per block
    for lo in range(0, cuts.size, rows):
        c = cuts[lo:lo + rows]
        with np.errstate(over="ignore", invalid="ignore"):
            expo = np.min(gap[:, :, None] - dt[:, :, None] * c[None, None, :], axis=1)
            out[:, lo:lo + rows] = np.exp(np.minimum(np.where(np.isnan(expo), np.inf, expo), 0.0))
    beyond = cuts >= cgf.s_max if upper else cuts <= cgf.s_min
    return np.where(beyond[None, :], 0.0, out)


def _best_lines(k: np.ndarray, thetas: np.ndarray, s: np.ndarray) -> np.ndarray:
    """For each s, the index j of a grid θ minimising K(θ_j) − θ_j·s (the Chernoff
    exponent), over the finite K: the lower envelope of these lines in s, built once
    (the convex-hull trick; θ increasing, so the best θ is non-decreasing in s) and
    searched per s — O((m + n) log m) instead of m·n. The caller evaluates the chosen
    line itself, so rounding in the breakpoints can only pick a near-best θ, whose
    bound is as valid."""
    order = [int(i) for i in np.argsort(thetas, kind="stable") if np.isfinite(k[i])]
    hull: list[int] = []
    for i in order:
        # a line of the same θ: the smaller K serves
        if hull and thetas[hull[-1]] == thetas[i]:
            if k[i] >= k[hull[-1]]:
                continue
            hull.pop()
        # the top of the stack is never the minimum once the new line undercuts it
        # before the point where it took over from the line below it
        while len(hull) >= 2:
            a, b = hull[-2], hull[-1]
            if (k[i] - k[a]) * (thetas[b] - thetas[a]) <= (k[b] - k[a]) * (thetas[i] - thetas[a]):
                hull.pop()
            else:
                break
        hull.append(i)
    h = np.asarray(hull, dtype=np.intp)
    # line h[r] is best for s between the crossings with h[r − 1] and h[r + 1]
    breaks = np.diff(k[h]) / np.diff(thetas[h])
    return h[np.searchsorted(breaks, np.asarray(s, dtype=float), side="left")]


def _hockey(losses: np.ndarray, weights: np.ndarray, eps: np.ndarray) -> np.ndarray:
    """``loss.hockey_stick`` at a few ε by direct sums over the losses above each (no
    cumulative log-sum pass over the whole window)."""
    eps = np.asarray(eps, dtype=float)
    if eps.size > 8 or not np.all(np.isfinite(eps)):
        return hockey_stick(losses, weights, eps)
    out = np.empty(eps.shape)
    for k, e in np.ndenumerate(eps):
        j = int(np.searchsorted(losses, e, side="right"))
        out[k] = float(np.dot(weights[j:], -np.expm1(e - losses[j:])))
    return out


def _sum_below(a: np.ndarray) -> float:
    """A lower bound on the exact sum of non-negative float64 entries, in one pass:
    NumPy's sum (pairwise over blocks of at most 128 entries, each summed in 8 lanes)
    is within γ_k·Σa of it for k = 16 + ⌈log₂ n⌉ + 3 (Higham, Accuracy and Stability,
    §4.2: γ_k = ku/(1 − ku) for a summation tree of depth k); k is rounded up to
    24 + ⌈log₂ n⌉ and the bound applied downwards. (``math.fsum``, correctly rounded,
    costs 40× as much on a composed window.)"""
    total = float(np.sum(a))
    k = 24 + math.ceil(math.log2(max(a.size, 2)))
    return total * (1.0 - 1.01 * k * UNIT_ROUNDOFF)


def _running_sums_below(a: np.ndarray) -> np.ndarray:
    """Lower bounds on the running sums Σ_{i≤j} a_i of non-negative float64 entries.

    By blocks of B = ⌈√n⌉: running sums within each block, then over the blocks'
    totals, then one addition. Every term passes through at most B + n/B + 1 rounded
    additions of non-negative numbers, so each computed sum is within γ = 1.01·(B +
    n/B + 1)·u ≈ 2√n·u of the exact one (Higham, Accuracy and Stability, §4.2:
    recursive summation, γ_k = ku/(1 − ku)); the bound is applied downwards. A single
    running sum would carry γ_n: 1e-10 relative for 1e6 entries."""
    a = np.asarray(a, dtype=float)
    n = a.size
    if n == 0:
        return a.copy()
    b = max(1, math.isqrt(n - 1) + 1)
    rows = -(-n // b)
    block = np.zeros(rows * b)
    block[:n] = a
    within = np.cumsum(block.reshape(rows, b), axis=1)
    before = np.concatenate([[0.0], np.cumsum(within[:, -1])[:-1]])
    run = (before[:, None] + within).ravel()[:n]
    return run * (1.0 - 1.01 * (b + rows + 1) * UNIT_ROUNDOFF)


def _prepare(items: _Items, dtype: _Dtype) -> list[_Prepared]:
    """What ``_circular_compose`` needs of each law at every θ, computed once: log
    masses and losses in ``dtype``, log of the total mass, (max |loss|, log₂(size + 1))
    for the rounding bound, and the circle index of the first atom (before mod n)."""
    out: list[_Prepared] = []
    for p, _ in items:
        with np.errstate(divide="ignore"):
            logp = np.log(p.masses.astype(dtype))
        out.append((logp, p.losses.astype(dtype), math.log(float(p.masses.sum())),
                    (float(np.abs(p.losses).max()), math.log2(p.masses.size + 1)),
                    int(grid_of(p)[1])))
    return out


def _circular_compose(items: _Items, n: int, theta: float, dtype: _Dtype,
                      prepared: list[_Prepared] | None = None) -> _Run:
    """The θ-tilted, normalised sum on a circle of n points.

    Returns (circle, E, K(θ), η): every entry is within E of the circular composition
    of the tilted laws as rounded (E bounds every entry's error: forward FFTs, powers,
    inverse FFT), and the rounded tilted inputs are within a relative η of the exact ones,
    which the composition turns into a relative error of at most e^{Σc·η_i} − 1 on each
    (non-negative) entry: η is returned as that factor.
    """
    import scipy.fft
    gamma = _gamma(n, dtype)
    half = n // 2 + 1
    active = np.arange(half)                      # frequencies still carried
    log_mag = np.zeros(half, dtype=dtype)
    phase = np.zeros(half, dtype=dtype)
    d = np.zeros(half)                            # Σ c log1p(γ/|z|)
    log_hi = np.zeros(half)                       # Σ c log(|z| + γ)
    u_terms = np.zeros(half)
    # (mypy does not take a class for Hashable, the key type of functools.cache)
    u_in = _eps(dtype) / 2  # type: ignore[arg-type]
    log_m = 0.0
    eta = 0.0
    remaining = sum(c for _, c in items)
    dropped, dropped_log = 0, -np.inf             # frequencies let go, their bound
    if prepared is None:
        prepared = _prepare(items, dtype)
    absolute = 0.0                                # ℓ1 rounding of the far-smaller atoms
    for (logp, losses, log_total, size_term, start), (_, c) in zip(prepared, items):
        x = logp + dtype(theta) * losses
        j_top = int(np.argmax(x))   # (zero masses are −∞ here and never the max)
        top = x[j_top]
        y = x - top
        w = np.exp(y)
        tot = w.sum()
        w = w / tot
        log_m += c * (float(top + np.log(tot)) - log_total)
        rel, small = _tilt_rounding(y, float(logp[j_top]), abs(theta) * size_term[0],
                                    size_term[1], u_in)
        eta += c * rel
        absolute += c * small
        start %= n
        if start + w.size <= n:   # no wrap-around: a slice, not a bincount
            folded = np.zeros(n, dtype=w.dtype)
            folded[start:start + w.size] = w
        else:
            idx = (start + np.arange(w.size)) % n
            if dtype is np.float64:
                folded = np.bincount(idx, weights=w, minlength=n)
            else:
                folded = _bincount_ld(idx, w, n)
        spec = scipy.fft.rfft(folded, overwrite_x=True)
        if active.size < half:
            spec = spec[active]
        mag = np.abs(spec)
        with np.errstate(divide="ignore", invalid="ignore"):
            lm = np.log(mag)
            dd = c * np.log1p(gamma / mag.astype(float))
        pos = mag > 0
        # log(|z| + γ) = log|z| + log1p(γ/|z|), or log γ where z = 0
        with np.errstate(invalid="ignore"):     # −∞ + ∞ where z = 0, replaced
            log_hi = log_hi + np.where(pos, c * lm.astype(float) + dd, c * math.log(gamma))
        # A frequency whose Π(|z|+γ)^c is below e^{−700} already, and can grow only by
        # (1 + γ) a remaining use (|z| ≤ 1), is let go: Z and its error there are
        # smaller than that bound, which is booked (long compositions keep only the
        # low frequencies, so the later laws cost one FFT and little else). It is let
        # go before its phase is taken (the arctangent is the dearest step here).
        remaining -= c
        bound = log_hi + remaining * math.log1p(2.0 * gamma)   # |z| ≤ 1 + γ computed
        low = bound < -700.0
        if low.any():
            dropped += int(low.sum())
            dropped_log = max(dropped_log, float(bound[low].max()))
            sel = ~low
            active, log_mag, phase, d, log_hi, u_terms = (
                active[sel], log_mag[sel], phase[sel], d[sel], log_hi[sel], u_terms[sel])
            spec, lm, dd, pos = spec[sel], lm[sel], dd[sel], pos[sel]
        log_mag += c * lm
        phase += c * np.where(pos, np.angle(spec), 0.0)
        d += dd
        u_terms += c * 4.0 * u_in * (np.pi + np.minimum(np.abs(lm.astype(float)), 1e300))
    z = np.zeros(half, dtype=np.complex128)
    z[active] = (np.exp(log_mag) * np.exp(1j * phase)).astype(np.complex128)
    circ = scipy.fft.irfft(z, n)
    # |Π(z+Δ)^c − Πz^c| ≤ Π(|z|+γ)^c − Π|z|^c = |Z|·expm1(Σ c log1p(γ/|z|)), rigorous;
    # plus the polar evaluation's rounding and the cast to float64; at a frequency let
    # go, |Z| + error ≤ Π(|z|+γ)^c ≤ e^{dropped_log}
    lmag = log_mag.astype(float)
    with np.errstate(over="ignore", invalid="ignore"):
        dz = np.where(d < 30, np.exp(lmag) * np.expm1(d), np.exp(log_hi))
        dz = dz + np.exp(lmag) * (u_terms + 2 * UNIT_ROUNDOFF)
    dz = np.where(np.isfinite(dz), dz, np.inf)
    if dropped:
        dz = np.append(dz, np.full(dropped, max(math.exp(dropped_log), 1e-300)))
    # an entry of the inverse transform is (1/n)·Σ_k Z_k ω^{−jk} over the full
    # (Hermitian) spectrum, so a perturbation ΔZ moves each entry by at most
    # (1/n)·Σ_k |ΔZ_k| ≤ (2/n)·Σ over the half spectrum: far below the ℓ2 bound
    # ‖ΔZ‖₂/√n when ΔZ ∝ |Z| sits on the few frequencies a long composition keeps
    full = math.sqrt(2.0 * float(np.sum(dz ** 2)))
    one = 2.0 * float(np.sum(dz))
    g64 = _gamma(n, np.float64)
    e2 = 1.01 * (min(one / n, full / math.sqrt(n)) + g64 * (_norm(circ) + full / math.sqrt(n))
                 + absolute * (1.0 + math.expm1(eta)))
    return circ, e2, log_m, math.expm1(eta)


#: Atoms whose tilted weight is below e^{−40} of a law's largest are bounded in ℓ1
#: (``_tilt_rounding``), the others relative to their weight.
_FAR_BELOW = 40.0


def _tilt_rounding(y: np.ndarray, log_p_top: float, theta_l: float, log2_size: float,
                   u: float) -> tuple[float, float]:
    """Rounding of one law's normalised tilted weights w_j = e^{y_j}/Σe^{y}, y_j =
    log p_j + θl_j − (the same at the largest): (η, ℓ1).

    y_j is computed with an absolute error of at most u(2|log p_j| + 2|θ l_j| + |y_j|
    + 1) (the logarithm, the product, the sums; a common error of the largest term
    cancels in the normalisation), which the exponential turns into a relative one of
    about the same size, plus u. For the atoms with y_j ≥ −Y (Y = ``_FAR_BELOW``),
    |log p_j| ≤ |log p_top| + 2|θ|·max|l| + Y, so their relative error is at most η =
    1.01·u(2|log p_top| + 6|θ|·max|l| + 3Y + 3 + log₂(size + 1) + 24), the last terms
    for the normalising sum (NumPy's pairwise summation, see ``_sum_below``) and the
    division. The rest weigh at most e^{−Y} each: their error is bounded in ℓ1 by
    Σ w_j·1.01·u(2|log p_j| + 3|θ|·max|l| + |y_j| + 4), which the composition carries
    to every entry as an absolute error (convolution does not increase ℓ1 norms).
    """
    big = 1.01 * u * (2.0 * abs(log_p_top) + 6.0 * theta_l + 3.0 * _FAR_BELOW + 27.0
                      + log2_size)
    far = np.isfinite(y) & (y < -_FAR_BELOW)
    if not far.any():
        return big, 0.0
    yf = y[far].astype(float)
    logp = yf + log_p_top          # log p_j + θ(l_j − l_top) ≥ log p_j − 2|θ|·max|l|
    small = float(np.sum(np.exp(yf) * 1.01 * u * (2.0 * (np.abs(logp) + 2.0 * theta_l)
                                                  + 3.0 * theta_l + np.abs(yf) + 4.0)))
    return big, small


def _bincount_ld(idx: np.ndarray, w: np.ndarray, n: int) -> np.ndarray:
    """``np.bincount`` for long-double weights (it would round them to float64)."""
    out = np.zeros(n, dtype=w.dtype)
    np.add.at(out, idx, w)
    return out


def _gamma(n: int, dtype: _Dtype = np.float64) -> float:
    """Error constant of a length-n FFT: γ = 5·log₂(n)·u (Higham, Accuracy and
    Stability of Numerical Algorithms, 2nd ed., Thm 24.2, constants rounded up); we
    use it coefficient-wise, |Δz_f| ≤ γ‖x‖₁, each output being log₂ n butterfly
    stages over the inputs."""
    # (mypy does not take a class for Hashable, the key type of functools.cache)
    return 5.0 * math.log2(max(n, 2)) * _eps(dtype) / 2  # type: ignore[arg-type]


@functools.cache
def _eps(dtype: _Dtype) -> float:
    """Machine epsilon of ``dtype`` (``np.finfo`` is slow to build for long double)."""
    return float(np.finfo(dtype).eps)


def _norm(a: np.ndarray) -> float:
    """ℓ2 norm without a BLAS call (whose threading costs more than the sum here)."""
    return float(np.sqrt(np.sum(a * a)))


def _truncate(step: float, offset: int, masses: np.ndarray, inf_mass: float, slack: float,
              pessimistic: bool, floor: float = 0.0, sup_loss: float | None = None,
              roundoff: float = 0.0, bounded: bool = False) -> LossPMF:
    """Drop tails of mass < _TRUNCATION each (the left one up to ``floor``), soundly.

    Pessimistic: the right tail goes to +∞ and the left tail is rounded up onto the
    first kept point. Optimistic: the right tail is rounded down onto the last kept
    point and the left tail goes to −∞ (dropped): both only lower every loss.
    """
    c = np.cumsum(masses)
    lo = int(np.searchsorted(c, max(_TRUNCATION, floor), side="right"))
    # mass strictly right of each index, summed from the right: ``total − c`` would
    # lose the tiny right-tail masses to roundoff once c ≈ 1 (the tail was cut and
    # not sent to +∞: an under-reported ε)
    rc = np.append(np.cumsum(masses[:0:-1])[::-1], 0.0)
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
    check_built_mass(kept, inf_mass, "a composed loss law")
    return LossPMF.on_grid(step, offset + lo, kept, inf_mass, slack, sup_loss=sup_loss,
                           roundoff=roundoff + left + right, bounded=bounded)


#: A query answered from one or two tilts (``RefiningLaw``) is accepted when the
#: roundoff allowance it carries is at most this share of its δ; otherwise the
#: canonical tilts (``compose_pmfs``) answer it. The best single tilt carries 5e-9
#: for 100 × 1000 subsampled Gaussians at δ = 1e-5 (the canonical set 1.6e-8); 1e-7
#: of δ moves ε by about 1e-8 relative, far below the grid's discretisation error.
LAZY_RTOL = 1e-7


class RefiningLaw:
    """A composed law (``compose_pmfs``) that composes only the tilts a query needs.

    δ(ε) is read from the law of the tilt centred at ε (``TiltedPasses.saddle``); ε(δ)
    from the tilt centred at the Chernoff quantile of δ, then, if needed, also at the
    answer. Each law is sound (``TiltedPasses.law``: unresolved entries are capped by
    a Chernoff bound); an answer is accepted only when the allowance it carries,
    Σ_{s>ε} a(s)(1 − e^{ε−s}) for the entrywise allowance a, is at most ``LAZY_RTOL``
    of its δ, and is otherwise taken from ``full`` (the canonical tilts). Every
    element of an array is answered from its own tilts (elements sharing them share
    one law), so an answer depends neither on earlier queries nor on the other
    elements — except that an array whose elements need as many distinct tilts as
    the canonical set has (a sweep over a wide range) is answered from ``full``,
    which is then no dearer. One query costs one or two passes instead of the three
    to eight of the whole window. ``far_tail`` bounds the mass above the composed
    window (``SummedCGF.window``, default ``FAR_TAIL``), which the pessimistic side
    sends to +∞: an upper δ carries at most ``far_tail`` of it, so answers keep their
    relative precision for δ well above ``far_tail``.
    """

    def __init__(self, items: Iterable[tuple[LossPMF, int]], *, pessimistic: bool = True,
                 tail: float = 1e-18, far_tail: float = FAR_TAIL) -> None:
        checked, tail = _checked(items, tail)
        far_tail = check_real("far_tail", far_tail, lo=0.0, hi=1e-3, lo_open=True)
        self.pessimistic = pessimistic
        self._full = _trivial(checked, pessimistic)
        self._passes = None if self._full is not None else TiltedPasses(
            checked, tail, keep=True, far_tail=far_tail)
        self._laws: dict[tuple[int, ...], tuple[LossPMF, np.ndarray]] = {}

    def _tilted(self) -> TiltedPasses:
        """The passes, which exist whenever the composition is not trivial."""
        if self._passes is None:
            raise InvariantError("a trivial composition has no tilted passes")
        return self._passes

    def full(self) -> LossPMF:
        """The law of the canonical tilts: ``compose_pmfs`` of the same items."""
        if self._full is None:
            passes = self._tilted()
            self._full = passes.law(passes.canonical, self.pessimistic)[0]
        return self._full

    def _law(self, tilts: Iterable[int]) -> tuple[LossPMF, np.ndarray]:
        key = tuple(sorted(set(int(i) for i in tilts)))
        got = self._laws.get(key)
        if got is None:
            got = self._laws[key] = self._tilted().law(key, self.pessimistic)
        return got

    def _spread_wide(self, first: np.ndarray) -> bool:
        """Whether an array's elements need as many distinct tilts as the canonical set
        has (a sweep over a wide range of ε): then the full law serves them all."""
        distinct = np.unique(first).size
        return distinct > 1 and distinct >= len(self._tilted().canonical)

    def _accepted(self, key: tuple[int, ...], eps: np.ndarray, delta: np.ndarray) -> np.ndarray:
        law, allowance = self._law(key)
        carried = _hockey(self._tilted().s, allowance, eps)
        exact_zero = (delta == 0) & law.capped & \
            (eps >= (law.sup_loss if law.sup_loss is not None else np.inf))
        accepted: np.ndarray = (carried <= LAZY_RTOL * delta) | exact_zero
        return accepted

    def delta(self, eps: np.ndarray | float) -> np.ndarray:
        """δ(ε), as ``LossPMF.delta`` of the composed law."""
        eps = np.asarray(eps, dtype=float)
        if self._passes is None:
            return self.full().delta(eps)
        flat = eps.ravel()
        first = self._passes.saddle(np.where(np.isfinite(flat), flat, 0.0))
        if self._spread_wide(first):
            return self.full().delta(eps)
        out = np.full(flat.shape, np.nan)
        for i in np.unique(first):
            sel = first == i
            d = self._law((i,))[0].delta(flat[sel])
            out[sel] = np.where(self._accepted((i,), flat[sel], d), d, np.nan)
        todo = np.isnan(out)
        if todo.any():
            out[todo] = self.full().delta(flat[todo])
        return out.reshape(eps.shape)

    def epsilon(self, delta: np.ndarray | float) -> np.ndarray:
        """ε(δ), as ``LossPMF.epsilon`` of the composed law (δ = 0 from ``full``)."""
        delta = np.asarray(delta, dtype=float)
        if self._passes is None:
            return self.full().epsilon(delta)
        flat = delta.ravel()
        out = np.full(flat.shape, np.nan)
        first = self._passes.saddle(self._passes.chernoff_quantile(flat))
        if self._spread_wide(first):
            return self.full().epsilon(delta)
        guess = np.full(flat.shape, np.nan)
        for i in np.unique(first):
            sel = (first == i) & (flat > 0)
            if not sel.any():
                continue
            e = self._law((i,))[0].epsilon(flat[sel])
            guess[sel] = e
            out[sel] = np.where(self._accepted((i,), e, flat[sel]), e, np.nan)
        # a second tilt, centred at the first answer
        retry = np.isnan(out) & ~np.isnan(guess)
        second = self._passes.saddle(np.where(np.isfinite(guess), guess, 0.0))
        retry &= second != first
        for i, j in set(zip(first[retry].tolist(), second[retry].tolist())):
            sel = retry & (first == i) & (second == j)
            e = self._law((i, j))[0].epsilon(flat[sel])
            out[sel] = np.where(self._accepted((i, j), e, flat[sel]), e, np.nan)
        todo = np.isnan(out)
        if todo.any():
            out[todo] = self.full().epsilon(flat[todo])
        return out.reshape(delta.shape)

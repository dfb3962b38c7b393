"""The summed cumulant-generating function of a composition, and its Chernoff bounds.

For independent laws L_i repeated c_i times, the sum S has K(θ) = Σ c_i K_i(θ) with
K_i(θ) = log E[e^{θ L_i}]. ``SummedCGF`` evaluates K once on a grid of θ, in log space,
with its rounding moved to the safe side, and from it gives every bound the Fourier
composition (``accounting.numerics.fourier``) relies on: Chernoff tails
P(S > s) ≤ e^{K(θ) − θs} (θ > 0; Chernoff 1952), the window that holds all but a
certified tail of the sum, and the tilts θ at which the composition is computed.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TypeAlias

import numpy as np

from accounting.numerics.loss import (
    UNIT_ROUNDOFF,
    LossPMF,
    grid_blocks,
    grid_of,
    stacked_log_moments,
)
from accounting.vocabulary import FloatArray, InvariantError

__all__ = ["SummedCGF", "FAR_TAIL", "TILT_SPREAD", "MAX_TILTS"]

#: Mass allowed beyond the top of a composed window (sent to +∞ by the pessimistic
#: side): δ is answered with full relative precision down to about this value.
FAR_TAIL = 1e-32
#: Largest relative loss e^{K(θ)−θs}/p(s) tolerated between two tilts (see ``SummedCGF.tilts``).
TILT_SPREAD = 12.0
#: At most this many tilted transforms per composition.
MAX_TILTS = 8

#: a law of ``_prepare_laws``: (log-masses, bottom and top losses of its bins, count,
#: log finite mass, None) summed atom by atom or bin by bin, or (None, None, None,
#: count, log mass, its (step, B)) summed by blocks
_Law: TypeAlias = tuple[FloatArray | None, FloatArray | None, FloatArray | None, int, float,
                        tuple[float, int] | None]
#: a member of a group of laws summed by blocks: (item index, count, log mass, first
#: loss, blocks, log-masses)
_Member: TypeAlias = tuple[int, int, float, float, int, FloatArray]


def _block_width(p: LossPMF, theta_max: float) -> int | None:
    """Grid points a block for ``SummedCGF._evaluate`` (``_blocked_log_moments``):
    at most 128, with e^{|θ|·B·step} ≤ e^{600} at |θ| = ``theta_max`` (no overflow);
    None when blocks of 16 points would already overflow, or the law is too short."""
    step, _ = grid_of(p)
    width = min(128, int(600.0 / (theta_max * step)))
    if width < 16 or p.masses.size < 4 * width:
        return None
    return width


def _prepare_laws(items: list[tuple[LossPMF, int]],
                  theta_max: float
                  ) -> tuple[list[_Law], dict[tuple[float, int], list[_Member]], int, int]:
    """What ``SummedCGF._evaluate`` needs of each law, in the order of the items:
    (log-masses, bottom and top losses of its bins, count, log of its finite mass,
    None) for a law summed atom by atom or bin by bin, (None, None, None, count, log
    mass, its grid) for one summed by blocks, whose data go to the returned groups,
    (step, B) → [(item index, count, log mass, first loss, blocks, log-masses)];
    and the grid indices of the smallest and largest sums."""
    laws: list[_Law] = []
    groups: dict[tuple[float, int], list[_Member]] = {}
    i_min = i_max = 0
    for k, (p, c) in enumerate(items):
        step, offset = grid_of(p)
        # (masses are ≥ 0; a grid law rarely has zeros inside, and without any the
        # positive masses are the array itself: no index, no copy)
        if np.count_nonzero(p.masses) == p.masses.size:
            keep, m = None, p.masses
            first, last = 0, p.masses.size - 1
        else:
            keep = np.flatnonzero(p.masses > 0)
            m = p.masses[keep]
            first, last = int(keep[0]), int(keep[-1])
        i_min += c * (offset + first)
        i_max += c * (offset + last)
        logm = math.log(float(m.sum()))
        # Large laws are binned (B grid points a bin) for speed; moving each bin's
        # mass to its top (bottom) loss bounds K above for θ > 0 (< 0) and below for
        # θ < 0 (> 0), so every bound stays rigorous; B keeps c·B·step ≤ 0.01.
        width = int(max(1, min(m.size // 2048, 0.01 / (c * step))))
        b = _block_width(p, theta_max) if width == 1 else None
        if b is not None:
            # by blocks; the θ-independent half (``grid_blocks``) once, in the group
            logp_all = np.log(p.masses)
            l_first = offset * step
            blocks = -(-logp_all.size // b)
            groups.setdefault((step, b), []).append((k, c, logm, l_first, blocks, logp_all))
            laws.append((None, None, None, c, logm, (step, b)))
            continue
        if keep is None:
            keep = np.arange(p.masses.size)
        l = p.losses[keep]
        if width > 1:
            bins = (keep - keep[0]) // width
            m = np.bincount(bins, weights=m)
            lo_l = l[0] + np.arange(m.size) * width * step
            hi_l = np.minimum(lo_l + (width - 1) * step, l[-1])
            nz = m > 0
            m, lo_l, hi_l = m[nz], lo_l[nz], hi_l[nz]
        else:
            lo_l = hi_l = l
        laws.append((np.log(m), lo_l, hi_l, c, logm, None))
    return laws, groups, i_min, i_max


class _DenseGroup:
    """The laws of a composition that ``SummedCGF`` sums by blocks of ``b`` points of
    one grid ``step`` (``_blocked_log_moments``), kept as their ``grid_blocks`` stacked
    (computed once, not at every evaluation) with what their rounding bounds need."""

    def __init__(self, step: float, b: int, members: list[_Member]) -> None:
        self.step, self.b = step, b
        self.index = np.array([m[0] for m in members], dtype=np.intp)
        self.c = np.array([float(m[1]) for m in members])
        self.logm = np.array([m[2] for m in members])
        l_first = np.array([m[3] for m in members])
        blocks = np.array([m[4] for m in members])
        l_last = l_first + (blocks * b - 1) * step
        self.count_terms = (b + blocks + 8).astype(float)
        self.loss_terms = (np.abs(l_first) + np.abs(l_last)) + b * step
        self.scaled, self.top, self.first, self.starts = grid_blocks(
            [m[5] for m in members], [m[3] for m in members], step, b)

    def evaluate(self, thetas: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Rows c·K_i(θ) of the group's laws, moved up (right) and down (left) by
        their rounding bound on the side that keeps each Chernoff bound safe.

        The rounding of the sums, the exponentials and θ·l (all relative to the
        total, which is a sum of non-negative terms), and of the log and the products
        with c (relative to the value), moved to each side's safe side: right bounds
        K above for θ > 0, left for θ < 0."""
        with np.errstate(under="ignore"):
            k = stacked_log_moments(self.scaled, self.top, self.first, self.starts,
                                     self.step, thetas)
            val = self.c[:, None] * (k - self.logm[:, None])
        eta = (2.02 * UNIT_ROUNDOFF * self.c)[:, None] * (
            self.count_terms[:, None] + np.abs(thetas)[None, :] * self.loss_terms[:, None]) \
            + 4.0 * UNIT_ROUNDOFF * np.abs(val)
        sign = np.where(thetas > 0, 1.0, -1.0)
        return val + sign * eta, val - sign * eta


class SummedCGF:
    """K(θ) = Σ c_i K_i(θ) of the normalised finite parts, K_i(θ) = log Σ_j p_ij e^{θ l_ij}
    − log Σ_j p_ij, evaluated once (in log space) on a fixed grid of θ: every Chernoff
    bound and every tilt below uses grid values only, so each is exact for its θ."""

    def __init__(self, items: list[tuple[LossPMF, int]]) -> None:
        pos = np.geomspace(1e-2, 1e3, 21)
        thetas = np.concatenate([-pos[::-1], [0.0], pos])
        theta_max = float(np.max(np.abs(thetas)))
        with np.errstate(divide="ignore"):      # log 0 = −∞: an atom without mass
            self._laws, groups, i_min, i_max = _prepare_laws(items, theta_max)
        self._groups = [_DenseGroup(step, b, members) for (step, b), members in groups.items()]
        self._set(thetas, *self._evaluate(thetas))
        # the same products as the window's ends, so equal indices compare equal
        step, _ = grid_of(items[0][0])
        self.s_min, self.s_max = i_min * step, i_max * step

    def _set(self, thetas: np.ndarray, right: np.ndarray, left: np.ndarray) -> None:
        self.thetas, self._right, self._left = thetas, right, left
        self.zero = int(np.flatnonzero(thetas == 0.0)[0])
        pos_side = thetas > 0
        self.k: FloatArray = np.where(pos_side, right, left)       # upper bounds on K
        self.k_low: FloatArray = np.where(pos_side, left, right)   # lower bounds on K
        self.k[self.zero] = self.k_low[self.zero] = 0.0

    def _refine(self, lo: float, hi: float, rounds: int = 3) -> None:
        """Split (in four) the gaps of the θ grid that the sums in [lo, hi] rely on,
        where K jumps by more than 8 across them.

        Long compositions of subsampled Gaussians need this: the moment generating
        function of one step explodes near θ ≈ 13 for σ = 1.1 (K goes from 20 to
        1.4e4 between grid points), so without θ in between the Chernoff bounds and
        the tilts stop short of δ = 1e-15. A gap (θ_j, θ_{j+1}) on the right is
        relied on when the chord slope left of it is below ``hi`` (the sums up to hi
        need a θ beyond θ_j); on the left, symmetrically, above ``lo``.
        """
        for _ in range(rounds):
            t, k = self.thetas, self.k
            slope = np.diff(k) / np.diff(t)
            before = np.concatenate([[-np.inf], slope[:-1]])   # chord left of each gap
            after = np.concatenate([slope[1:], [np.inf]])       # … and right of it
            right_gap = (t[:-1] >= 0) & (before < hi)
            left_gap = (t[1:] <= 0) & (after > lo)
            need = (np.abs(np.diff(k)) > 8.0) & (right_gap | left_gap)
            if not need.any():
                return
            # three points a gap per round (one pass over the atoms serves 8 θ)
            a, b = t[:-1][need], t[1:][need]
            mid = np.concatenate([a + f * (b - a) for f in (0.25, 0.5, 0.75)])
            r_mid, l_mid = self._evaluate(mid)
            order = np.argsort(np.concatenate([t, mid]), kind="stable")
            self._set(np.concatenate([t, mid])[order],
                      np.concatenate([self._right, r_mid])[order],
                      np.concatenate([self._left, l_mid])[order])

    def _evaluate(self, thetas: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Σ c·K_i(θ) at ``thetas`` with each bin's mass at its top loss (right) and at
        its bottom loss (left); unbinned, both are the atoms and one pass serves.

        A law on a grid is summed by blocks of B grid points: Σ_j p_j e^{θ l_j} =
        Σ_b e^{θ l_b} Σ_t p_{b,t} r_θ^t with r_θ^t = e^{θ·t·step} (t < B), one matrix
        product for all θ and blocks, then a log-sum-exp over the blocks — B times
        fewer exponentials than atom by atom. B is chosen so that e^{|θ|·B·step}
        stays below e^{600} (no overflow); the sums are of non-negative terms, so
        their rounding is relative (≤ B·u), as in the atom-by-atom sum. The laws on
        one grid (one step and B) share one ramp r_θ and one matrix product
        (``_DenseGroup``); each law's terms are the same floating-point operations
        as when it is summed alone, so its value and its rounding bound are too.

        The laws' terms are added up in the order of the items, from zero, whatever
        their route, so the sum does not depend on how the routes are grouped."""
        # row 0 stays zero, row k + 1 is the k-th law
        rows_right = np.zeros((len(self._laws) + 1, thetas.size))
        rows_left = np.zeros((len(self._laws) + 1, thetas.size))
        for group in self._groups:
            right, left = group.evaluate(thetas)
            rows_right[group.index + 1] = right
            rows_left[group.index + 1] = left
        for k, (logp, lo_l, hi_l, c, logm, dense) in enumerate(self._laws, start=1):
            if dense is not None:
                continue
            if logp is None or lo_l is None or hi_l is None:
                raise InvariantError("a law summed atom by atom carries its log-masses and "
                                     "the losses of its bins")
            for rows, ls in (((rows_right, rows_left), lo_l),) if lo_l is hi_l else \
                    (((rows_right,), hi_l), ((rows_left,), lo_l)):
                for j in range(0, thetas.size, 8):   # chunks keep θ × atoms small
                    th = thetas[j:j + 8]
                    x = logp[None, :] + th[:, None] * ls[None, :]
                    top = x.max(axis=1)
                    val = c * (top + np.log(np.exp(x - top[:, None]).sum(axis=1)) - logm)
                    for r in rows:
                        r[k, j:j + 8] = val
        # ((0 + law₀) + law₁) + …, as the law-by-law loop added them: an accumulation
        # is in order by definition (a reduction may go pairwise)
        return np.cumsum(rows_right, axis=0)[-1], np.cumsum(rows_left, axis=0)[-1]

    def tail(self, i: int, cut: float, upper: bool) -> float:
        """Chernoff bound on the mass above (below) ``cut`` of the sum tilted by the
        i-th grid θ: P_θ(S > cut) ≤ exp(K(θ') − K(θ) − (θ' − θ)·cut) for every θ' > θ."""
        if (upper and cut >= self.s_max) or (not upper and cut <= self.s_min):
            return 0.0
        if not np.isfinite(cut):
            return 1.0
        other = slice(i + 1, None) if upper else slice(0, i)
        dt = self.thetas[other] - self.thetas[i]
        if dt.size == 0:
            return 1.0
        with np.errstate(over="ignore"):
            return float(min(1.0, np.exp(np.min(self.k[other] - self.k_low[i] - dt * cut))))

    def tails(self, i: int, cuts: np.ndarray, upper: bool) -> np.ndarray:
        """``tail`` at many cuts at once: each cut gets the bound at the nearest of 257
        evenly spaced cuts on its safe side (below it for an upper tail, above for a
        lower one; both tails are monotone in the cut), so the cost does not grow with
        the number of cuts. (``tail_index`` and ``tails_at`` split the work: the index
        depends on the cuts only and serves every θ.)"""
        return self.tails_at(i, self.tail_index(cuts, upper), upper)

    @staticmethod
    def tail_index(cuts: np.ndarray, upper: bool) -> tuple[np.ndarray, np.ndarray]:
        """The 257 evenly spaced cuts g and, per cut, the index of the nearest g on its
        safe side (see ``tails``)."""
        cuts = np.asarray(cuts, dtype=float)
        if cuts.size == 0:
            return np.zeros(0), np.zeros(0, dtype=np.intp)
        g = np.linspace(cuts.min(), cuts.max(), 257)
        # the grid index on the safe side, by arithmetic (a search costs more), then
        # corrected by one where rounding put it on the wrong side
        dg = (g[-1] - g[0]) / (g.size - 1) if g[-1] > g[0] else 1.0
        j = np.clip(np.floor((cuts - g[0]) / dg).astype(np.intp), 0, g.size - 1)
        # (corrected in place, gathering by ``np.take``: a window has many cuts, and
        # fancy indexing gathers at a third of the speed)
        if upper:
            j -= (np.take(g, j) > cuts) & (j > 0)
        else:
            j += (np.take(g, j) < cuts) & (j < g.size - 1)
            j -= (j > 0) & (np.take(g, np.maximum(j - 1, 0)) >= cuts)
        return g, j

    def tails_at(self, i: int, index: tuple[np.ndarray, np.ndarray], upper: bool) -> np.ndarray:
        """``tails`` of the i-th grid θ at the cuts indexed by ``tail_index``."""
        g, j = index
        other = slice(i + 1, None) if upper else slice(0, i)
        dt = self.thetas[other] - self.thetas[i]
        if dt.size == 0 or j.size == 0:
            return np.ones(j.shape)
        with np.errstate(over="ignore"):
            expo = np.min((self.k[other] - self.k_low[i])[:, None] - dt[:, None] * g[None, :],
                          axis=0)
            vals = np.exp(np.minimum(expo, 0.0))
        vals = np.where(g >= self.s_max if upper else g <= self.s_min, 0.0, vals)
        return np.take(vals, j)

    def outside(self, i: int, lo: float, hi: float) -> float:
        """Bound on the mass outside [lo, hi] of the sum tilted by the i-th grid θ."""
        return self.tail(i, hi, True) + self.tail(i, lo, False)

    def window(self, step: float, tail: float, refine: bool = True,
               far_tail: float = FAR_TAIL) -> tuple[int, int, float]:
        """Grid indices [lo, hi]: below lo at most ``tail`` of the mass, above hi at
        most ``far_tail`` (default ``FAR_TAIL``; P(S > hi) ≤ exp(K(t) − t·hi), t > 0);
        and the bound on the untilted mass outside. A smaller ``far_tail`` serves
        smaller δ: the pessimistic side sends the mass above hi to +∞."""
        z = self.zero
        tp, kp = self.thetas[z + 1:], self.k[z + 1:]
        hi = min(np.min((kp - np.log(far_tail)) / tp), self.s_max)
        # below lo at most ``tail`` of P (θ0 = 0) and of Q (θ0 = −1: Q's masses are
        # p·e^{−l}, the law tilted by −1, which the trade-off reads):
        # P_θ0(S < lo) ≤ exp(K(θ') − K(θ0) + (θ0 − θ')·lo) for θ' < θ0
        lo = np.inf
        for i0 in (z, int(np.argmin(np.abs(self.thetas + 1.0)))):
            d = self.thetas[i0] - self.thetas[:i0]
            cand = (np.log(tail) - self.k[:i0] + self.k_low[i0]) / d
            lo = min(lo, np.max(cand))
        lo = max(lo, self.s_min)
        if refine:
            # bisect where the window relies on it, then bound again on the finer grid
            self._refine(lo, hi)
            return self.window(step, tail, refine=False, far_tail=far_tail)
        hi_idx = min(int(np.ceil(hi / step - 1e-9)), int(round(self.s_max / step)))
        lo_idx = max(int(np.floor(lo / step + 1e-9)), int(round(self.s_min / step)))
        return lo_idx, hi_idx, self.outside(z, lo_idx * step, hi_idx * step)

    def tilts(self, lo: float, hi: float,
              penalty: Callable[[np.ndarray], np.ndarray] | None = None) -> list[int]:
        """Indices of the grid θ to compose at: θ = 0, then, scanning s over [lo, hi]
        from the middle outwards, wherever the best chosen Chernoff exponent
        K(θ) − θs exceeds the best over the grid by more than ``TILT_SPREAD``, the
        grid θ best a little beyond that s (θ > 0 on the right, θ < 0 on the left,
        where the Q-masses p·e^{−l} of the trade-off live). ``penalty(s)`` (rows θ),
        if given, is added to the exponents: the log-factor by which a tilt's other
        errors (the Fourier composition's fold) worsen its bound at s."""
        s = np.linspace(lo, hi, 400)
        expo = self.k[:, None] - self.thetas[:, None] * s[None, :]
        if penalty is not None:
            expo = expo + penalty(s)
        best = expo.min(axis=0)
        chosen = [self.zero]
        reach = 400 // (2 * MAX_TILTS)
        while len(chosen) < MAX_TILTS:
            cover = expo[chosen].min(axis=0) - best
            bad = np.flatnonzero(cover > TILT_SPREAD)
            if bad.size == 0:
                break
            # the uncovered point nearest the bulk (s = 0), and the θ best a little
            # beyond it
            j = bad[np.argmin(np.abs(s[bad]))]
            far = min(j + reach, 399) if s[j] >= 0 else max(j - reach, 0)
            far = bad[np.argmin(np.abs(bad - far))]
            pick = int(np.argmin(expo[:, far]))
            if pick in chosen or not np.isfinite(expo[pick, far]):
                pick = int(np.argmin(expo[:, j]))
                if pick in chosen or not np.isfinite(expo[pick, j]):
                    break
            chosen.append(pick)
        return sorted(chosen)


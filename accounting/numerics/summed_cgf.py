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
from typing import Optional

import numpy as np

from accounting.numerics.loss import _U, LossPMF, _blocked_log_moments

__all__ = ["SummedCGF", "FAR_TAIL", "TILT_SPREAD", "MAX_TILTS"]

#: Mass allowed beyond the top of a composed window (sent to +∞ by the pessimistic
#: side): δ is answered with full relative precision down to about this value.
FAR_TAIL = 1e-32
#: Largest relative loss e^{K(θ)−θs}/p(s) tolerated between two tilts (see ``SummedCGF.tilts``).
TILT_SPREAD = 12.0
#: At most this many tilted transforms per composition.
MAX_TILTS = 8


def _block_width(p: LossPMF, theta_max: float) -> Optional[int]:
    """Grid points a block for ``SummedCGF._evaluate`` (``_blocked_log_moments``):
    at most 128, with e^{|θ|·B·step} ≤ e^{600} at |θ| = ``theta_max`` (no overflow);
    None when blocks of 16 points would already overflow, or the law is too short."""
    width = min(128, int(600.0 / (theta_max * p.step)))
    if width < 16 or p.masses.size < 4 * width:
        return None
    return width


class SummedCGF:
    """K(θ) = Σ c_i K_i(θ) of the normalised finite parts, K_i(θ) = log Σ_j p_ij e^{θ l_ij}
    − log Σ_j p_ij, evaluated once (in log space) on a fixed grid of θ: every Chernoff
    bound and every tilt below uses grid values only, so each is exact for its θ."""

    def __init__(self, items):
        pos = np.geomspace(1e-2, 1e3, 21)
        thetas = np.concatenate([-pos[::-1], [0.0], pos])
        laws = []
        i_min = i_max = 0                       # grid indices of the extreme sums
        for p, c in items:
            keep = np.flatnonzero(p.masses > 0)
            l, m = p.losses[keep], p.masses[keep]
            i_min += c * (p.offset + int(keep[0]))
            i_max += c * (p.offset + int(keep[-1]))
            logm = math.log(float(m.sum()))
            # Large laws are binned (B grid points a bin) for speed; moving each bin's
            # mass to its top (bottom) loss bounds K above for θ > 0 (< 0) and below for
            # θ < 0 (> 0), so every bound stays rigorous; B keeps c·B·step ≤ 0.01.
            width = 1
            if p.step is not None:
                width = int(max(1, min(keep.size // 2048, 0.01 / (c * p.step))))
            if width > 1:
                b = (keep - keep[0]) // width
                m = np.bincount(b, weights=m)
                lo_l = l[0] + np.arange(m.size) * width * p.step
                hi_l = np.minimum(lo_l + (width - 1) * p.step, l[-1])
                nz = m > 0
                m, lo_l, hi_l = m[nz], lo_l[nz], hi_l[nz]
            else:
                lo_l = hi_l = l
            dense = None
            if width == 1 and p.step is not None:
                b = _block_width(p, float(np.max(np.abs(thetas))))
                if b is not None:
                    with np.errstate(divide="ignore"):
                        dense = (np.log(p.masses), p.offset * p.step, p.step, b)
            laws.append((np.log(m), lo_l, hi_l, c, logm, dense))
        self._laws = laws
        self._set(thetas, *self._evaluate(laws, thetas))
        # the same products as the window's ends, so equal indices compare equal
        step = items[0][0].step
        self.s_min, self.s_max = i_min * step, i_max * step

    def _set(self, thetas: np.ndarray, right: np.ndarray, left: np.ndarray) -> None:
        self.thetas, self._right, self._left = thetas, right, left
        self.zero = int(np.flatnonzero(thetas == 0.0)[0])
        pos_side = thetas > 0
        self.k = np.where(pos_side, right, left)       # upper bounds on K
        self.k_low = np.where(pos_side, left, right)   # lower bounds on K
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
            r_mid, l_mid = self._evaluate(self._laws, mid)
            order = np.argsort(np.concatenate([t, mid]), kind="stable")
            self._set(np.concatenate([t, mid])[order],
                      np.concatenate([self._right, r_mid])[order],
                      np.concatenate([self._left, l_mid])[order])

    @staticmethod
    def _evaluate(laws, thetas: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Σ c·K_i(θ) at ``thetas`` with each bin's mass at its top loss (right) and at
        its bottom loss (left); unbinned, both are the atoms and one pass serves.

        A law on a grid is summed by blocks of B grid points: Σ_j p_j e^{θ l_j} =
        Σ_b e^{θ l_b} Σ_t p_{b,t} r_θ^t with r_θ^t = e^{θ·t·step} (t < B), one matrix
        product for all θ and blocks, then a log-sum-exp over the blocks — B times
        fewer exponentials than atom by atom. B is chosen so that e^{|θ|·B·step}
        stays below e^{600} (no overflow); the sums are of non-negative terms, so
        their rounding is relative (≤ B·u), as in the atom-by-atom sum."""
        right = np.zeros(thetas.size)
        left = np.zeros(thetas.size)
        for logp, lo_l, hi_l, c, logm, dense in laws:
            if dense is not None:
                logp_all, l_first, step, b = dense
                with np.errstate(under="ignore"):
                    val = c * (_blocked_log_moments(logp_all, l_first, step, thetas, b) - logm)
                blocks = -(-logp_all.size // b)
                l_last = l_first + (blocks * b - 1) * step
                # rounding of the sums, the exponentials and θ·l (all relative to the
                # total, which is a sum of non-negative terms), and of the log and the
                # products with c (relative to the value), moved to each side's safe
                # side: right bounds K above for θ > 0, left for θ < 0
                eta = 2.02 * _U * c * (b + blocks + 8 + np.abs(thetas) * (
                    abs(l_first) + abs(l_last) + b * step)) + 4.0 * _U * np.abs(val)
                sign = np.where(thetas > 0, 1.0, -1.0)
                right += val + sign * eta
                left += val - sign * eta
                continue
            for arrs, ls in (((right, left), lo_l),) if lo_l is hi_l else \
                    (((right,), hi_l), ((left,), lo_l)):
                for j in range(0, thetas.size, 8):   # chunks keep θ × atoms small
                    th = thetas[j:j + 8]
                    x = logp[None, :] + th[:, None] * ls[None, :]
                    top = x.max(axis=1)
                    val = c * (top + np.log(np.exp(x - top[:, None]).sum(axis=1)) - logm)
                    for arr in arrs:
                        arr[j:j + 8] += val
        return right, left

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
        if upper:
            j = np.where(g[j] > cuts, np.maximum(j - 1, 0), j)
        else:
            j = np.where(g[j] < cuts, np.minimum(j + 1, g.size - 1), j)
            j = np.where((j > 0) & (g[np.maximum(j - 1, 0)] >= cuts), j - 1, j)
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
        return vals[j]

    def outside(self, i: int, lo: float, hi: float) -> float:
        """Bound on the mass outside [lo, hi] of the sum tilted by the i-th grid θ."""
        return self.tail(i, hi, True) + self.tail(i, lo, False)

    def window(self, step: float, tail: float, refine: bool = True) -> tuple[int, int, float]:
        """Grid indices [lo, hi]: below lo at most ``tail`` of the mass, above hi at
        most ``FAR_TAIL`` (P(S > hi) ≤ exp(K(t) − t·hi), t > 0); and the bound on
        the untilted mass outside."""
        z = self.zero
        tp, kp = self.thetas[z + 1:], self.k[z + 1:]
        hi = min(np.min((kp - np.log(FAR_TAIL)) / tp), self.s_max)
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
            return self.window(step, tail, refine=False)
        hi_idx = min(int(np.ceil(hi / step - 1e-9)), int(round(self.s_max / step)))
        lo_idx = max(int(np.floor(lo / step + 1e-9)), int(round(self.s_min / step)))
        return lo_idx, hi_idx, self.outside(z, lo_idx * step, hi_idx * step)

    def tilts(self, lo: float, hi: float) -> list[int]:
        """Indices of the grid θ to compose at: θ = 0, then, scanning s over [lo, hi]
        from the middle outwards, wherever the best chosen Chernoff exponent
        K(θ) − θs exceeds the best over the grid by more than ``TILT_SPREAD``, the
        grid θ best a little beyond that s (θ > 0 on the right, θ < 0 on the left,
        where the Q-masses p·e^{−l} of the trade-off live)."""
        s = np.linspace(lo, hi, 400)
        expo = self.k[:, None] - self.thetas[:, None] * s[None, :]
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


"""The law of one directional privacy loss with finitely many finite atoms.

``LossPMF`` holds the law of L = log dP/dQ under P: atoms l_i with P-masses p_i and a
mass at +∞ (P has mass where Q has none). The Q-masses are implied, q_i = p_i e^{−l_i},
and Q's atom at −∞ is 1 − Σ q_i. Every query is exact for the law it holds:

* profile (hockey-stick divergence; Balle, Barthe, Gaboardi 2018, arXiv:1807.01647, §2):
  δ(ε) = E_P[(1 − e^{ε−L})₊] + P(L = +∞) = Σ_{l_i>ε} p_i − e^ε Σ_{l_i>ε} p_i e^{−l_i} + p_∞;
* its inverse ε(δ), solved exactly between atoms (δ is affine in e^ε there);
* the CGF K(t) = log E_P[e^{tL}] (Mironov 2017, Def. 3 with α = 1 + t);
* the vertices of the trade-off function T(P, Q) (Dong, Roth, Su 2019, Def. 2.1):
  the Neyman–Pearson test rejects P for the smallest losses first.

A PMF on the grid {i·step} additionally composes by convolution (``compose``) and
self-composes by an FFT power (``self_compose``). ``sup_loss``, when set, is a
certified bound on the largest finite loss of the *exact* law the PMF stands for
(not of the grid PMF, whose pessimistic atoms may sit a step higher): δ(ε) = 0 for
ε ≥ sup_loss, and ε(δ) ≤ sup_loss for every δ ≥ 0 when there is no mass at +∞ (pure
DP: ε(0) is the largest loss). ``slack`` is an absolute
allowance on δ that a *lower* bound subtracts (see ``self_compose``): the exact δ of
the composed law lies in [δ_pmf − slack, δ_pmf] for an optimistic PMF.
"""

from __future__ import annotations

import functools
import math
from typing import Optional

import attrs
import numpy as np

from accounting.validation import check_count, check_real

__all__ = ["LossPMF", "log_moments", "MAX_GRID_POINTS", "BYTES_PER_POINT", "check_grid_points", "compose_pmfs",
           "composed_grid_points"]

#: Largest grid a PMF may occupy (about 1.3 GiB at the peak of a discretisation or a
#: composition); beyond it the caller must coarsen the grid.
MAX_GRID_POINTS = 1 << 22
#: bytes a grid point costs at the peak of a discretisation or composition (profile
#: values in two representations, the minorant's candidate lines, spectra): measured
#: ≈ 250, rounded up
BYTES_PER_POINT = 320


def check_grid_points(n: int, step: float, what: str = "the PLD", option: str = "step") -> int:
    """``n``, or a ValueError before anything is allocated when a grid of ``n`` points
    exceeds ``MAX_GRID_POINTS``: it names the size, the memory and the ``option`` that
    fixes it (for ``step``, the step that would fit)."""
    if n > MAX_GRID_POINTS:
        need = n * BYTES_PER_POINT / 2 ** 30
        fits = f" (step ≥ {step * n / MAX_GRID_POINTS:.2g} fits)" if option == "step" else ""
        raise ValueError(f"{what} at step {step:g} needs about {n:,} grid points (~{need:.1f} "
                         f"GiB; max {MAX_GRID_POINTS:,}); use a larger {option}{fits}")
    return n

#: Mass below which an entry of a composed PMF is dropped (tails are accounted for).
_TRUNCATION = 1e-40


def _fsum(a: np.ndarray) -> float:
    """``math.fsum`` of an array (correctly rounded), fed a list: iterating the array
    would box every element as a NumPy scalar, which doubles the time."""
    return math.fsum(np.asarray(a, dtype=float).tolist())


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
    sup_loss: Optional[float] = attrs.field(default=None, kw_only=True)
    #: informational: bound on |δ(ε) − δ_exact(ε)| from composition roundoff and
    #: window tails (already allowed for, on the safe side, in the masses)
    roundoff: float = attrs.field(default=0.0, kw_only=True, converter=float)

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
                slack: float = 0.0, *, sup_loss: Optional[float] = None,
                roundoff: float = 0.0) -> "LossPMF":
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
        return cls(losses, masses, inf_mass, slack, float(step), offset, sup_loss=sup_loss,
                   roundoff=roundoff)

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

    @property
    def max_loss(self) -> float:
        """The largest loss of the law: +∞ with mass at +∞, else its top atom with
        positive mass, capped by ``sup_loss`` (−∞ for an empty law)."""
        if self.inf_mass > 0:
            return np.inf
        pos = np.flatnonzero(self.masses > 0)
        top = float(self.losses[pos[-1]]) if pos.size else -np.inf
        return min(top, self.sup_loss) if self.sup_loss is not None else top

    def delta(self, eps: "np.ndarray | float") -> np.ndarray:
        """δ(ε) for an array of ε (±∞ allowed), minus ``slack`` (never below 0);
        exactly 0 at and above ``sup_loss``."""
        eps = np.asarray(eps, dtype=float)
        s, logu = self._tail_sums()
        j = np.searchsorted(self.losses, eps, side="right")
        with np.errstate(invalid="ignore", over="ignore"):
            inner = s[j] - np.exp(np.where(np.isfinite(eps), eps, 0.0) + logu[j])
        inner = np.where(eps == np.inf, 0.0, inner)
        inner = np.where(eps == -np.inf, s[0], inner)
        out = np.maximum(inner + self.inf_mass - self.slack, 0.0)
        if self.sup_loss is not None and self.inf_mass == 0:
            out = np.where(eps >= self.sup_loss, 0.0, out)
        return out

    def epsilon(self, delta: "np.ndarray | float") -> np.ndarray:
        """Smallest ε ≥ 0 with δ(ε) ≤ delta; +∞ where delta is below the mass at +∞.

        δ = 0 is answered exactly: the largest loss (``max_loss``, ≥ 0), +∞ when the
        law has mass at +∞. With ``sup_loss`` every answer is capped by it.
        """
        delta = np.asarray(delta, dtype=float)
        out = self._epsilon(delta)
        top = max(self.max_loss, 0.0)
        out = np.where(delta == 0, top, out)
        if self.sup_loss is not None and self.inf_mass == 0:
            out = np.minimum(out, max(self.sup_loss, 0.0))
        return out

    def _epsilon(self, delta: np.ndarray) -> np.ndarray:
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
        vals = log_moments(logp, self.losses, np.ravel(t), self.step).reshape(t.shape)
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
        lost = (1.0 - self.inf_mass) - _fsum(self.masses)
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
        lead = (1.0 - self.inf_mass) - _fsum(p)
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
        """The law of L₁ + L₂ (independent): losses add (see ``compose_pmfs``)."""
        self._require_grid(other)
        return compose_pmfs([(self, 1), (other, 1)], pessimistic=pessimistic)

    def self_compose(self, count: int, *, pessimistic: bool = True,
                     tail: float = 1e-18) -> "LossPMF":
        """The law of the sum of ``count`` independent copies (see ``compose_pmfs``)."""
        count = check_count("count", count)
        if count == 1:
            return self
        return compose_pmfs([(self, count)], pessimistic=pessimistic, tail=tail)


def log_moments(logp: np.ndarray, losses: np.ndarray, t: np.ndarray,
                step: Optional[float] = None, chunk: int = 1 << 20) -> np.ndarray:
    """log Σ_i e^{logp_i + t_j·l_i} for every order t_j (−∞ for a law without mass).

    Atoms on a grid (``step`` given, l_i = l_0 + i·step) go by blocks of B consecutive
    atoms: Σ_b p_{aB+b} e^{t·b·step} for every block a and order t is one matrix
    product of the block-normalised masses (≤ 1) with e^{t·b·step} (B·|t|·step ≤ 40, so
    nothing overflows and every term is ≥ 0: a relative error of B units of roundoff),
    then a log-sum-exp over the blocks; about 2√n exponentials an order instead of n.
    Other laws, and orders too large for blocks, take the max-shifted log-sum-exp over
    all atoms (chunks of at most ``chunk`` terms). Either way one array pass replaces a
    ``logaddexp`` reduction per order (ρ of a default-step PLD took 25 s).
    """
    t = np.asarray(t, dtype=float)
    out = np.full(t.shape, -np.inf)
    if logp.size == 0 or t.size == 0 or not np.isfinite(logp).any():
        return out
    todo = np.ones(t.shape, dtype=bool)
    if step is not None and logp.size >= 64 and np.all(np.isfinite(t)):
        span = 40.0 / (np.abs(t) * step + 1e-300)
        width = int(np.ceil(np.sqrt(logp.size)))
        # orders sorted by |t| share a block width (the largest the group allows)
        order = np.argsort(np.abs(t))
        for lo in range(0, t.size, 64):
            group = order[lo:lo + 64]
            b = int(min(width, np.floor(span[group].min())))
            if b < 8:
                break
            out[group] = _blocked_log_moments(logp, losses[0], step, t[group], b)
            todo[group] = False
    if todo.any():
        keep = np.isfinite(logp)
        lp, ls = logp[keep], losses[keep]
        idx = np.flatnonzero(todo)
        rows = max(1, chunk // lp.size)
        for j in range(0, idx.size, rows):
            tt = t[idx[j:j + rows]]
            with np.errstate(over="ignore", invalid="ignore"):
                x = lp[None, :] + tt[:, None] * ls[None, :]
                top = np.max(x, axis=1)
                finite = np.isfinite(top)
                shift = np.where(finite, top, 0.0)
                total = np.sum(np.exp(x - shift[:, None]), axis=1)
            out[idx[j:j + rows]] = np.where(finite, shift + np.log(total), top)
    return out


def _blocked_log_moments(logp: np.ndarray, l0: float, step: float, t: np.ndarray,
                         b: int) -> np.ndarray:
    """``log_moments`` of grid atoms by blocks of ``b`` (its docstring); the caller
    keeps |t|·b·step small enough that e^{t·b·step} cannot overflow (``log_moments``:
    40; the composition's CGF, ``_SummedCGF``: 600)."""
    n = logp.size
    a = -(-n // b)
    lp = np.full(a * b, -np.inf)
    lp[:n] = logp
    lp = lp.reshape(a, b)
    top = lp.max(axis=1)                                   # each block's largest log-mass
    live = np.isfinite(top)
    lp, top = lp[live], top[live]
    first = l0 + np.flatnonzero(live) * b * step           # each block's first loss
    scaled = np.exp(lp - top[:, None])                     # ≤ 1, exactly 1 at the max
    ramp = np.exp(np.arange(b)[:, None] * step * t[None, :])   # no overflow: see above
    with np.errstate(divide="ignore"):
        blocks = np.log(scaled @ ramp) + top[:, None] + first[:, None] * t[None, :]
    peak = blocks.max(axis=0)
    return peak + np.log(np.sum(np.exp(blocks - peak[None, :]), axis=0))


#: Mass allowed beyond the top of a composed window (sent to +∞ by the pessimistic
#: side): δ is answered with full relative precision down to about this value.
_FAR_TAIL = 1e-32
#: Largest relative loss e^{K(θ)−θs}/p(s) tolerated between two tilts (see ``_SummedCGF.tilts``).
_TILT_SPREAD = 12.0
#: At most this many tilted transforms per composition.
_MAX_TILTS = 8


def composed_grid_points(items: "list[tuple[LossPMF, int]]", tail: float = 1e-18) -> int:
    """Number of grid points the composition of ``items`` occupies (its Chernoff
    window), computed from the laws' CGFs without composing anything."""
    items = [(p, check_count("count", c)) for p, c in items]
    if any(p.masses.sum() <= 0 for p, _ in items):
        return 1
    lo, hi = _SummedCGF(items).window(items[0][0].step, tail)[:2]
    return hi - lo + 1


def compose_pmfs(items: "list[tuple[LossPMF, int]]", *, pessimistic: bool = True,
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
    s = K'(θ). We compose at a few θ (``_SummedCGF.tilts``: 0 for the bulk, then steps chosen so
    that the Chernoff factor e^{K(θ)−θs} is within e^{12} of its best between tilts),
    untilt, p(s) = e^{K(θ)−θs}·r_θ(s), and keep for each s the estimate with the
    smallest error bound. This is preferred to exact composition of finite supports
    because it serves every law (Gaussian mixtures as well as randomized response),
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

    * Pessimistic: p' = max(p̂, 0) + b ≥ p entrywise on the window; the mass above
      the window (≤ the Chernoff bound) goes to +∞. Then the total is brought to one
      by removing mass from the lowest losses, or adding it to the lowest kept loss:
      the result stochastically dominates the exact law (its tail sums are ≥ at every
      threshold), so its δ(ε) = E[(1 − e^{ε−L})₊] is ≥ the exact one at every ε and so
      is its trade-off, and dominance survives further composition.
    * Optimistic: p'' = max(p̂ − b − e^{K(θ)−θs}w_θ, 0) ≤ p entrywise; mass outside
      the window is dropped. Dominated, for the same reasons.

    The masses at +∞ combine as 1 − Π(1 − m_i)^{c_i}; the optimistic slacks add.
    """
    if not items:
        raise ValueError("compose_pmfs needs at least one PMF")
    tail = check_real("tail", tail, lo=0.0, hi=1e-3, lo_open=True)
    items = [(p, check_count("count", c)) for p, c in items]
    first = items[0][0]
    for p, _ in items:
        first._require_grid(p)
    step = first.step
    log_keep = sum(c * math.log1p(-min(p.inf_mass, 1.0)) if p.inf_mass < 1.0 else -np.inf
                   for p, c in items)
    inf = float(-np.expm1(log_keep))
    slack = sum(c * p.slack for p, c in items)
    sup = _summed_sup(items)
    if any(p.masses.sum() <= 0 for p, _ in items):
        return LossPMF.on_grid(step, 0, np.zeros(1), inf, slack, sup_loss=sup)
    # the finite part of the exact sum has mass F = Π m_i^{c_i}; compose the
    # normalised laws and scale by F at the end
    log_f = sum(c * math.log(float(p.masses.sum())) for p, c in items)
    if len(items) == 2 and items[0][1] == items[1][1] == 1 and \
            min(items[0][0].masses.size, items[1][0].masses.size) <= 64:
        return _direct_pair(items[0][0], items[1][0], inf, slack, sup, pessimistic)
    cgf = _SummedCGF(items)
    lo_idx, hi_idx, _ = cgf.window(step, tail)
    tilts = cgf.tilts(lo_idx * step, hi_idx * step)
    # (the optimistic side subtracts what the circle folds in; that is bounded per
    # entry below, small except near the window's ends, where the untilted or
    # oppositely tilted estimate is chosen: no wider window is needed)
    size = hi_idx - lo_idx + 1
    check_grid_points(size, step, "the composition")
    import scipy.fft   # lazy: scipy.fft (and scipy.special under it) is most of import time
    n = scipy.fft.next_fast_len(size, real=True)
    window = np.arange(lo_idx, hi_idx + 1)
    s = window * step
    # long compositions amplify the forward-FFT error by the count: use extended
    # precision for the transforms when float64 would leave a relative 1e-9 or more
    dtype = np.longdouble if sum(c for _, c in items) * _gamma(n) > 1e-9 else np.float64
    best = np.full(size, np.inf)               # log of the error bound in use at s
    est = np.zeros(size)
    fold = np.zeros(size)                      # bound on the mass folded in, at s
    best_sel = np.full(size, np.inf)           # log of both bounds together
    prepared = _prepare(items, dtype)
    on_circle = window % n
    # where the fold bounds are read, the same for every θ
    above = cgf.tail_index((window + n - 0.5) * step, True)
    below = cgf.tail_index((window - n + 0.5) * step, False)
    for i in tilts:
        theta = float(cgf.thetas[i])
        circ, e2, log_m, eta = _circular_compose(items, n, theta, dtype, prepared)
        raw = circ[on_circle]
        log_scale = log_f + log_m - theta * s   # untilting factor F·e^{K(θ)−θs}
        # tilted mass outside the window (folded in by the circle): the optimistic
        # side must allow for it; the untilting's own rounding: 8u(1 + |log|) relative
        # the circle adds to the entry at s the tilted mass at s ± n·step, ± 2n·step, …:
        # at most the tilted mass at or beyond s + n·step plus that at or below
        # s − n·step (lattice points; half a step inside to be safe from rounding),
        # far less than the whole mass outside the window where s is far from the end
        # the fold comes from (Chernoff, ``_SummedCGF.tails``)
        w = cgf.tails_at(i, above, True) + cgf.tails_at(i, below, False)
        rel = eta + 8.0 * _U * (1.0 + np.abs(log_scale))
        # (the bounds compared in log space; the values scaled linearly: a scale
        # that overflows is never kept, since θ = 0, always composed, has one ≤ 1
        # and a smaller bound there)
        with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
            scale = np.exp(log_scale)
            spread = rel * np.abs(raw)
            log_b = log_scale + np.log(e2 + spread)
            if pessimistic:
                better = log_b < best
            else:
                log_sel = log_scale + np.log(e2 + w + spread)
                better = log_sel < best_sel
                best_sel = np.where(better, log_sel, best_sel)
            est = np.where(better, raw * scale, est)
            fold = np.where(better, scale * w, fold)
        best = np.where(better, log_b, best)
    err = np.exp(best)
    carried = sum(c * p.roundoff for p, c in items)
    roundoff = carried + 2.0 * float(np.sum(err)) + math.exp(log_f) * cgf.outside(
        cgf.zero, lo_idx * step, hi_idx * step)
    if pessimistic:
        masses = np.maximum(est, 0.0) + err
        # the exact law's finite and +∞ parts total F + inf (the rest, if the inputs
        # lost mass, sits at −∞); mass above the window (exact part ≤ its Chernoff
        # bound) goes to +∞
        # (not clamped to 1: a pessimistic input may carry a little extra mass, 1e-10
        # from zeroed negative masses, and the composition must keep it)
        target = math.exp(log_f) + inf
        inf = min(1.0, inf + math.exp(log_f) * cgf.tail(cgf.zero, hi_idx * step, True))
        # the exact law has at least (p̂ − b − folded)₊ at each s: what is above that
        # may be given back to settle the total
        masses, inf, left = _settle_up(masses, inf, target,
                                       masses - np.maximum(est - err - fold, 0.0))
        # the composition of the inputs dominates the exact law, whose total is one:
        # mass beyond one is removed from the lowest losses (whole entries upwards),
        # which keeps every tail sum ≥ the exact one
        # (no sum needed when the total was settled to a target of at most one: what
        # rounding in the settling leaves above it is ~n·u, harmless and pessimistic)
        settled = left == 0.0 and target <= 1.0
        over = -1.0 if settled else _fsum(masses) + inf - 1.0
        if over > 0:
            c = np.cumsum(masses)
            masses = masses - np.minimum(masses, np.maximum(over - (c - masses), 0.0))
    else:
        masses = np.maximum(est - err - fold, 0.0)
    return _truncate(step, lo_idx, masses, inf, slack, pessimistic, sup_loss=sup,
                     roundoff=roundoff)


def _direct_pair(a: LossPMF, b: LossPMF, inf: float, slack: float, sup: Optional[float],
                 pessimistic: bool) -> LossPMF:
    """L₁ + L₂ by direct convolution, for a law with few atoms: each entry is a sum of
    at most k = min(sizes) non-negative products, so it is within a relative
    (k + 1)·u·1.01 of the exact value (Higham, Accuracy and Stability, §3.1) — full
    relative precision everywhere, tails included, without any tilting."""
    raw = np.convolve(a.masses, b.masses)
    rel = 1.01 * (min(a.masses.size, b.masses.size) + 1) * _U
    if pessimistic:
        target = _fsum(a.masses) * _fsum(b.masses) + inf
        masses, inf, _ = _settle_up(raw * (1.0 + rel), inf, target)
    else:
        masses = raw * (1.0 - rel)
    roundoff = a.roundoff + b.roundoff + 2.0 * rel * _fsum(raw)
    return _truncate(a.step, a.offset + b.offset, masses, inf, slack, pessimistic, sup_loss=sup,
                     roundoff=roundoff)


def _summed_sup(items) -> Optional[float]:
    """Σ c_i·sup_i of the components' certified largest losses (None if any is
    unknown), rounded up: the sum of bounded losses is bounded by it."""
    sups = [p.sup_loss for p, _ in items]
    if any(v is None for v in sups):
        return None
    total = math.fsum(c * v for (_, c), v in zip(items, sups))
    return float(np.nextafter(total, np.inf)) if total != 0 else 0.0


def _settle_up(masses: np.ndarray, inf: float, target: float,
               give: Optional[np.ndarray] = None) -> tuple[np.ndarray, float, float]:
    """Bring the total mass of a pessimistic law to ``target`` (that of the exact law
    above −∞) without losing dominance.

    The entries are ≥ the exact law's (and ``inf`` ≥ its mass at +∞), so every tail
    sum G'(t) is ≥ the exact G(t). A deficit (the exact law's mass below the window)
    is added to the lowest entry. An excess E is removed from the lowest losses
    upwards, at most ``give``_s from entry s, where ``give`` = p' − (a lower bound on
    the exact p) (default: the whole entry). After removal the tail sum at t is
    min(G'(t), target − Σ_{s≤t} lower_s) ≥ G(t), since the exact law has at least
    Σ_{s≤t} lower_s below t: the law stays stochastically larger, so its δ(ε) and its
    trade-off stay pessimistic, and spreading the removal keeps the Q-masses p·e^{−l}
    of the lowest losses (the trade-off near α = 0) from being cut. Returns (masses,
    inf, the excess left in place).
    """
    total = _fsum(masses) + inf
    excess = total - target
    left = max(excess, 0.0)
    if excess < 0:
        masses = masses.copy()
        masses[0] += -excess
    elif excess > 0:
        give = masses if give is None else np.clip(give, 0.0, masses)
        c = np.cumsum(give)
        taken = np.minimum(give, np.maximum(excess - (c - give), 0.0))
        masses = masses - taken
        left = max(excess - float(taken.sum()), 0.0)
        # an excess beyond the allowances (only if the inputs carried extra mass) is
        # left in place: p' ≥ p entrywise is pessimistic whatever the total
    return masses, inf, left


def _block_width(p: LossPMF, theta_max: float) -> Optional[int]:
    """Grid points a block for ``_SummedCGF._evaluate`` (``_blocked_log_moments``):
    at most 128, with e^{|θ|·B·step} ≤ e^{600} at |θ| = ``theta_max`` (no overflow);
    None when blocks of 16 points would already overflow, or the law is too short."""
    width = min(128, int(600.0 / (theta_max * p.step)))
    if width < 16 or p.masses.size < 4 * width:
        return None
    return width


class _SummedCGF:
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
        most ``_FAR_TAIL`` (P(S > hi) ≤ exp(K(t) − t·hi), t > 0); and the bound on
        the untilted mass outside."""
        z = self.zero
        tp, kp = self.thetas[z + 1:], self.k[z + 1:]
        hi = min(np.min((kp - np.log(_FAR_TAIL)) / tp), self.s_max)
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
        K(θ) − θs exceeds the best over the grid by more than ``_TILT_SPREAD``, the
        grid θ best a little beyond that s (θ > 0 on the right, θ < 0 on the left,
        where the Q-masses p·e^{−l} of the trade-off live)."""
        s = np.linspace(lo, hi, 400)
        expo = self.k[:, None] - self.thetas[:, None] * s[None, :]
        best = expo.min(axis=0)
        chosen = [self.zero]
        reach = 400 // (2 * _MAX_TILTS)
        while len(chosen) < _MAX_TILTS:
            cover = expo[chosen].min(axis=0) - best
            bad = np.flatnonzero(cover > _TILT_SPREAD)
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


def _prepare(items, dtype) -> list:
    """What ``_circular_compose`` needs of each law at every θ, computed once: log
    masses and losses in ``dtype``, log of the total mass, (max |loss|, log₂(size + 1))
    for the rounding bound, and the circle index of the first atom (before mod n)."""
    out = []
    for p, _ in items:
        with np.errstate(divide="ignore"):
            logp = np.log(p.masses.astype(dtype))
        out.append((logp, p.losses.astype(dtype), math.log(float(p.masses.sum())),
                    (float(np.abs(p.losses).max()), math.log2(p.masses.size + 1)),
                    int(p.offset)))
    return out


def _circular_compose(items, n: int, theta: float, dtype,
                      prepared: Optional[list] = None) -> tuple[np.ndarray, float, float, float]:
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
    u_in = _eps(dtype) / 2
    log_m = 0.0
    eta = 0.0
    remaining = sum(c for _, c in items)
    dropped, dropped_log = 0, -np.inf             # frequencies let go, their bound
    if prepared is None:
        prepared = _prepare(items, dtype)
    for (logp, losses, log_total, size_term, start), (p, c) in zip(prepared, items):
        x = logp + dtype(theta) * losses
        top = x.max()        # (zero masses are −∞ here and never the max)
        w = np.exp(x - top)
        tot = w.sum()
        w = w / tot
        log_m += c * (float(top + np.log(tot)) - log_total)
        eta += c * 8.0 * u_in * (2.0 + abs(theta) * size_term[0] + size_term[1])
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
        dz = dz + np.exp(lmag) * (u_terms + 2 * _U)
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
    e2 = 1.01 * (min(one / n, full / math.sqrt(n)) + g64 * (_norm(circ) + full / math.sqrt(n)))
    return circ, e2, log_m, math.expm1(eta)


def _bincount_ld(idx: np.ndarray, w: np.ndarray, n: int) -> np.ndarray:
    """``np.bincount`` for long-double weights (it would round them to float64)."""
    out = np.zeros(n, dtype=w.dtype)
    np.add.at(out, idx, w)
    return out


def _gamma(n: int, dtype=np.float64) -> float:
    """Error constant of a length-n FFT: γ = 5·log₂(n)·u (Higham, Accuracy and
    Stability of Numerical Algorithms, 2nd ed., Thm 24.2, constants rounded up); we
    use it coefficient-wise, |Δz_f| ≤ γ‖x‖₁, each output being log₂ n butterfly
    stages over the inputs."""
    return 5.0 * math.log2(max(n, 2)) * _eps(dtype) / 2


@functools.lru_cache(maxsize=None)
def _eps(dtype) -> float:
    """Machine epsilon of ``dtype`` (``np.finfo`` is slow to build for long double)."""
    return float(np.finfo(dtype).eps)


def _norm(a: np.ndarray) -> float:
    """ℓ2 norm without a BLAS call (whose threading costs more than the sum here)."""
    return float(np.sqrt(np.sum(a * a)))


#: Unit roundoff of float64.
_U = np.finfo(float).eps / 2


def _truncate(step: float, offset: int, masses: np.ndarray, inf_mass: float, slack: float,
              pessimistic: bool, floor: float = 0.0, sup_loss: Optional[float] = None,
              roundoff: float = 0.0) -> LossPMF:
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
    return LossPMF.on_grid(step, offset + lo, kept, inf_mass, slack, sup_loss=sup_loss,
                           roundoff=roundoff + left + right)

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

A PMF on the grid {i·step} additionally composes by convolution and self-composes by
an FFT power (``numerics.fourier``: ``compose_laws``, ``self_compose_law``). ``sup_loss``, when set, is a
certified bound on the largest finite loss of the *exact* law the PMF stands for
(not of the grid PMF, whose pessimistic atoms may sit a step higher): δ(ε) = 0 for
ε ≥ sup_loss, and ε(δ) ≤ sup_loss for every δ ≥ 0 when there is no mass at +∞ (pure
DP: ε(0) is the largest loss). ``bounded`` says the exact law has no mass at +∞ at
all: ``inf_mass`` is then only a pessimistic allowance for mass the exact law holds at
finite losses ≤ ``sup_loss`` (a composition's tail above its window, a profile's tail
cut off before its largest loss), so those two answers hold with it too. ``slack`` is an absolute
allowance on δ that a *lower* bound subtracts (see ``fourier.self_compose_law``): the exact δ of
the composed law lies in [δ_pmf − slack, δ_pmf] for an optimistic PMF.
"""

from __future__ import annotations

import math

import attrs
import numpy as np

from accounting.vocabulary import FloatArray, InvariantError

__all__ = ["LossPMF", "log_moments", "hockey_stick", "tail_sums", "MAX_GRID_POINTS", "BYTES_PER_POINT",
           "check_grid_points", "check_held_points", "HELD_BYTES_PER_POINT", "MAX_HELD_BYTES", "MASS_ROUNDING", "check_built_mass", "GridSizeError", "fitting_step",
           "check_law", "MAX_LOST_MASS", "grid_of"]

#: Largest grid a PMF may occupy (about 1.3 GiB at the peak of a discretisation or a
#: composition); beyond it the caller must coarsen the grid.
MAX_GRID_POINTS = 1 << 22
#: bytes a grid point costs at the peak of a discretisation or composition (profile
#: values in two representations, the minorant's candidate lines, spectra): measured
#: ≈ 250, rounded up
BYTES_PER_POINT = 320


#: bytes a grid point of a component's discretised laws costs while a composition of
#: many distinct mechanisms holds them all (the laws, their log masses for the Fourier
#: passes and the CGF's blocks): measured ≈ 33 on 1000 distinct subsampled Gaussians,
#: rounded up
HELD_BYTES_PER_POINT = 40
#: the most memory the discretised components of one composition may hold
#: (``check_held_points``)
MAX_HELD_BYTES = 4 * 2 ** 30


class GridSizeError(ValueError):
    """A grid refused for its size (``check_grid_points``): the request is valid, but
    this step (or accuracy) needs more than ``MAX_GRID_POINTS`` points. A search over
    a noise parameter may catch it and stay where grids fit."""


#: the named step is chosen for this many more points than the estimate below
_FIT_MARGIN = 1.01


def fitting_step(n: int, step: float, uses: int = 1) -> float | None:
    """A step larger than ``step`` at which a grid of ``n`` points at ``step`` fits in
    ``MAX_GRID_POINTS``, or None when no step does.

    A grid spans a width W = n·step of loss that a coarser step s′ covers with W/s′
    points, plus its two spare ends, plus — for a sum of ``uses`` laws — up to one
    point a use: each law's atoms may move by up to a step when the grid coarsens, and
    so may the sum's window (10⁷ Gaussians, σ = 1: the window holds ~0.8 points a use
    at any step, so no step fits, where W/s′ alone named 2.5). So s′ = 1.01·W/(MAX −
    uses − 2), rounded *up* to two significant digits: the number printed is itself
    one that fits, and it is larger than ``step`` (rounded to nearest, 2.01e-4 was
    printed as 2e-4, the step in use)."""
    room = MAX_GRID_POINTS - uses - 2
    if room <= 0:
        return None
    need = step * n * _FIT_MARGIN / room
    scale = 10.0 ** (math.floor(math.log10(need)) - 1)
    return math.ceil(need / scale) * scale


def check_held_points(done: int, points: int, remaining: int, advice: str) -> None:
    """A ``GridSizeError`` before more is allocated when a composition whose first
    ``done`` distinct components took ``points`` grid points would, with ``remaining``
    more of the same mean size, hold more than ``MAX_HELD_BYTES``; ``advice`` names what
    fits instead. Checked after each component, so a job too large is refused after its
    first discretisation, not after it has filled memory."""
    if done <= 0:
        return
    projected = points + remaining * points / done
    need = projected * HELD_BYTES_PER_POINT
    if need > MAX_HELD_BYTES:
        raise GridSizeError(
            f"composing {done + remaining} distinct mechanisms would hold about "
            f"{need / 2 ** 30:.1f} GiB of discretised laws ({points / done:,.0f} grid points "
            f"each), over the {MAX_HELD_BYTES / 2 ** 30:.0f} GiB limit: {advice}")


def check_grid_points(n: int, step: float, what: str = "the PLD", option: str = "step",
                      uses: int = 1) -> int:
    """``n``, or a ``GridSizeError`` (a ValueError) before anything is allocated when a
    grid of ``n`` points exceeds ``MAX_GRID_POINTS``: it names the size, the memory and
    the ``option`` that fixes it (for ``step``, a larger step that fits, or that none
    does, for a grid of a sum of ``uses`` laws: ``fitting_step``)."""
    if n > MAX_GRID_POINTS:
        need = n * BYTES_PER_POINT / 2 ** 30
        fit = fitting_step(n, step, uses) if option == "step" else None
        if option != "step":
            advice = f"use a larger {option}"
        elif fit is not None:
            advice = f"use a larger step (step ≥ {fit:.2g} fits)"
        else:
            advice = (f"no step fits: a sum of {uses:,} uses takes about one grid point a "
                      f"use at any step (account fewer uses at a time)")
        raise GridSizeError(f"{what} at step {step:g} needs about {n:,} grid points "
                            f"(~{need:.1f} GiB; max {MAX_GRID_POINTS:,}); {advice}")
    return n


#: how far above 1 the float sum of a law's masses may come (its own rounding)
MASS_ROUNDING = 1e-6


def check_built_mass(masses: np.ndarray, inf_mass: float, what: str) -> None:
    """An ``InvariantError`` when a law the library computed (``what``) has a total
    mass Σ masses + inf_mass above 1 + ``MASS_ROUNDING``: its builders keep it at most
    1 by construction, so that is a bug of the library, never the user's input. (A
    law given by the user is checked by ``LossPMF`` itself: a ValueError.) Called just
    before the law is built, so it fires wherever ``LossPMF``'s own check would."""
    total = float(np.sum(masses)) + float(inf_mass)
    if not total <= 1.0 + MASS_ROUNDING:
        raise InvariantError(f"{what} has total mass {total!r}, above 1: a law the library "
                             f"built must be at most 1 by construction")


#: the most P-mass a pessimistic law may lack (1 − Σp − p_∞): roundoff loses some,
#: growing with the compositions (2.4e-8 after 1e5 subsampled Gaussians), and a law
#: that lacks more was not made by the library (masses zeroed or scaled in a file).
#: A sanity check, not a certificate: what is missing could have raised δ by as much.
MAX_LOST_MASS = 1e-3


def check_law(law: LossPMF, where: str, pessimistic: bool) -> None:
    """A loss law as one side of a bracket holds it (a ValueError naming ``where``
    otherwise). Its total P-mass (atoms and the mass at +∞) is 1 in exact arithmetic,
    P being a probability: a law with none at all is refused, and a pessimistic one
    lacking more than ``MAX_LOST_MASS``. A pessimistic law has no ``slack`` (the
    allowance only an optimistic law subtracts from δ)."""
    total = law.total_mass
    if not total > 0.0:
        raise ValueError(f"{where}: the law carries no mass (its masses and the mass at +∞ "
                         f"sum to {total:g}); a privacy-loss law carries P-mass 1")
    if pessimistic and total < 1.0 - MAX_LOST_MASS:
        raise ValueError(f"{where}: the pessimistic law carries P-mass {total:.6g}, not 1 "
                         f"(at most {MAX_LOST_MASS:g} may be lost to roundoff)")
    if pessimistic and law.slack != 0.0:
        raise ValueError(f"{where}: a pessimistic law has no slack, got {law.slack:g} (only "
                         f"an optimistic law may subtract an allowance from δ)")


def array_fsum(a: np.ndarray) -> float:
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
    step: float | None = None
    offset: int | None = None
    sup_loss: float | None = attrs.field(default=None, kw_only=True)
    #: the exact law has no mass at +∞: ``inf_mass`` is spill below ``sup_loss``
    #: (module docstring); meaningless without ``sup_loss``
    bounded: bool = attrs.field(default=False, kw_only=True, converter=bool)
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
        if total > 1.0 + MASS_ROUNDING:
            raise ValueError(f"total mass must be at most 1, got {total}")
        # the other fields, as strictly (a saved law is read back through here): a NaN
        # or negative slack would make δ NaN or raise it, a NaN sup_loss would cap
        # nothing, and grid laws compose by their offset and step, not their losses
        for name in ("slack", "roundoff"):
            x = getattr(self, name)
            if not (math.isfinite(x) and x >= 0.0):
                raise ValueError(f"{name} must be finite and >= 0, got {x}")
        if self.sup_loss is not None and not (
                isinstance(self.sup_loss, (int, float, np.floating, np.integer))
                and not isinstance(self.sup_loss, bool) and math.isfinite(self.sup_loss)):
            raise ValueError(f"sup_loss must be a finite number or None, got {self.sup_loss!r}")
        if (self.step is None) != (self.offset is None):
            raise ValueError("step and offset go together: both set (a law on the grid "
                             "(offset + i)·step) or both None")
        if self.step is not None:
            if isinstance(self.step, bool) or not isinstance(self.step, (float, int, np.floating)) \
                    or not (math.isfinite(self.step) and self.step > 0):
                raise ValueError(f"step must be a finite number > 0, got {self.step!r}")
            if isinstance(self.offset, (bool, np.bool_)) or \
                    not isinstance(self.offset, (int, np.integer)):
                raise ValueError(f"offset must be an integer, got {self.offset!r}")
            if not np.array_equal(self.losses,
                                  (self.offset + np.arange(self.losses.size)) * self.step):
                raise ValueError(f"losses must be the grid points (offset + i)·step of "
                                 f"offset {self.offset} and step {self.step:g}")

    # ----------------------------------------------------------------- builders
    @classmethod
    def on_grid(cls, step: float, offset: int, masses: np.ndarray, inf_mass: float = 0.0,
                slack: float = 0.0, *, sup_loss: float | None = None,
                roundoff: float = 0.0, bounded: bool = False) -> LossPMF:
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
                   roundoff=roundoff, bounded=bounded)

    @classmethod
    def from_atoms(cls, losses: np.ndarray, masses: np.ndarray, inf_mass: float = 0.0) -> LossPMF:
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
        return tail_sums(self.losses, self.masses)

    @property
    def capped(self) -> bool:
        """Whether ``sup_loss`` bounds every loss of the exact law: it is set, and the
        law has no mass at +∞ or that mass is spill below it (``bounded``)."""
        return self.sup_loss is not None and (self.inf_mass == 0 or self.bounded)

    @property
    def max_loss(self) -> float:
        """The largest loss of the law: +∞ with mass at +∞ (``sup_loss`` when that mass
        is spill, ``bounded``), else its top atom with positive mass, capped by
        ``sup_loss`` (−∞ for an empty law)."""
        if self.inf_mass > 0:
            # capped implies sup_loss is set; the explicit test narrows its type
            return float(self.sup_loss) if self.capped and self.sup_loss is not None else np.inf
        pos = np.flatnonzero(self.masses > 0)
        top = float(self.losses[pos[-1]]) if pos.size else -np.inf
        return min(top, self.sup_loss) if self.sup_loss is not None else top

    def delta(self, eps: np.ndarray | float) -> np.ndarray:
        """δ(ε) for an array of ε (±∞ allowed), minus ``slack`` (never below 0);
        exactly 0 at and above ``sup_loss``."""
        eps = np.asarray(eps, dtype=float)
        inner = hockey_stick(self.losses, self.masses, eps)
        out = np.maximum(inner + self.inf_mass - self.slack, 0.0)
        if self.capped:
            out = np.where(eps >= self.sup_loss, 0.0, out)
        return out

    def epsilon(self, delta: np.ndarray | float) -> np.ndarray:
        """Smallest ε ≥ 0 with δ(ε) ≤ delta; +∞ where delta is below the mass at +∞.

        δ = 0 is answered exactly: the largest loss (``max_loss``, ≥ 0), +∞ when the
        law has mass at +∞ (not spill: ``bounded``). Where ``sup_loss`` bounds the
        exact law (``capped``) every answer is capped by it.
        """
        delta = np.asarray(delta, dtype=float)
        out = self._epsilon(delta)
        top = max(self.max_loss, 0.0)
        out = np.where(delta == 0, top, out)
        if self.capped and self.sup_loss is not None:
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

    def cgf(self, t: np.ndarray | float) -> np.ndarray:
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

    def topped_up(self) -> LossPMF:
        """This PMF with the P-mass its sums lost to roundoff (1 − Σp − m_∞ > 0, by
        ``math.fsum``) put on its largest finite loss — pessimistic, since wherever the
        exact law had it, it was no higher. The sound trade-off is built from this:
        a lost 1e-13 (a grid of 10⁴ differences of profile values, compounded by
        composition) is nothing to δ, but it is P-mass that no test pays for, so it
        shifts the start of the trade-off curve by 1e-13 in α, where the curve's slope
        is the largest likelihood ratio (e^{22} for 100 Gaussians of σ = 2): β was
        3e-4 too large at α = 3e-12."""
        lost = (1.0 - self.inf_mass) - array_fsum(self.masses)
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
        lead = (1.0 - self.inf_mass) - array_fsum(p)
        return np.concatenate([lead + np.concatenate([[0.0], np.cumsum(p)]), [1.0]])

    def tradeoff_slopes(self) -> np.ndarray:
        """−dβ/dα along the segments between the vertices of ``tradeoff_vertices``: the
        likelihood ratio e^{−l_j} of the atom each segment rejects (0 for the atom at
        +∞), exact and non-increasing — unlike differences of cumulative sums, which
        are noise where the masses are roundoff-sized."""
        with np.errstate(over="ignore"):
            return np.concatenate([np.exp(-self.losses), [0.0]])

    # -------------------------------------------------------------- composition
    def _require_grid(self, other: LossPMF | None = None) -> None:
        if self.step is None or (other is not None and other.step is None):
            raise ValueError("composition needs PMFs on a grid; discretise first")
        if other is not None and other.step is not None \
                and not np.isclose(self.step, other.step, rtol=1e-12, atol=0):
            raise ValueError(f"cannot compose PMFs with grid steps {self.step} and {other.step}; "
                             "discretise both with the same step")


def grid_of(law: LossPMF) -> tuple[float, int]:
    """The (step, offset) of a law on the grid (offset + i)·step; a TypeError for a law
    off the grid, where a caller needs grid indices (``discretise`` first)."""
    if law.step is None or law.offset is None:
        raise TypeError("a law on a grid (step and offset set) is needed here; discretise first")
    return law.step, law.offset


def tail_sums(losses: np.ndarray, masses: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """S_j = Σ_{i≥j} m_i and log U_j = log Σ_{i≥j} m_i e^{−l_i} (losses increasing),
    each with a sentinel (0, −∞) at the end."""
    s = np.append(np.cumsum(masses[::-1])[::-1], 0.0)
    with np.errstate(divide="ignore"):
        logw = np.log(masses) - losses
    logu = np.append(np.logaddexp.accumulate(logw[::-1])[::-1], -np.inf)
    return s, logu


def hockey_stick(losses: np.ndarray, masses: np.ndarray, eps: np.ndarray) -> np.ndarray:
    """Σ_{l_i > ε} m_i (1 − e^{ε − l_i}) for each ε of an array (±∞ allowed): the
    finite part of δ(ε) = E_P[(1 − e^{ε−L})₊] (Balle, Barthe, Gaboardi 2018,
    arXiv:1807.01647, §2) for non-negative weights m on increasing losses l."""
    s, logu = tail_sums(losses, masses)
    j = np.searchsorted(losses, eps, side="right")
    with np.errstate(invalid="ignore", over="ignore"):
        inner = s[j] - np.exp(np.where(np.isfinite(eps), eps, 0.0) + logu[j])
    inner = np.where(eps == np.inf, 0.0, inner)
    return np.where(eps == -np.inf, s[0], inner)


def log_moments(logp: np.ndarray, losses: np.ndarray, t: np.ndarray,
                step: float | None = None, chunk: int = 1 << 20) -> np.ndarray:
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
    out: FloatArray = np.full(t.shape, -np.inf)
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
    40; the composition's CGF, ``SummedCGF``: 600)."""
    row: FloatArray = stacked_log_moments(*grid_blocks([logp], [l0], step, b), step, t)[0]
    return row


def grid_blocks(logps: list[np.ndarray], l0s: list[float], step: float,
                b: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The part of ``_blocked_log_moments`` that does not depend on the order t, for
    one or several laws on grids of one ``step`` (log-masses ``logps``, first losses
    ``l0s``), so that a caller evaluating them at several sets of orders
    (``SummedCGF``) does it once: the live blocks (those with mass) of ``b`` grid
    atoms as rows of masses scaled by the block's largest (each ≤ 1, exactly 1 at the
    max), the log of that largest, the block's first loss, and the row at which each
    law's blocks start (every law needs a positive mass). Each law is padded to whole
    blocks with −∞, so a block never mixes laws and every entry is computed as for
    the law alone."""
    rows = np.array([-(-lp.size // b) for lp in logps], dtype=np.intp)
    at = np.concatenate([[0], np.cumsum(rows)]).astype(np.intp)
    lp: FloatArray = np.full(int(at[-1]) * b, -np.inf)
    for k, logp in enumerate(logps):
        lp[at[k] * b:at[k] * b + logp.size] = logp
    lp = lp.reshape(-1, b)
    top = lp.max(axis=1)                                   # each block's largest log-mass
    live = np.isfinite(top)
    lp, top = lp[live], top[live]
    law = np.repeat(np.arange(len(logps)), rows)[live]
    # each block's first loss: l0 + (its index in the law)·b·step
    first = np.asarray(l0s, dtype=float)[law] + (np.flatnonzero(live) - at[law]) * b * step
    scaled = np.exp(lp - top[:, None])                     # ≤ 1, exactly 1 at the max
    starts = np.searchsorted(law, np.arange(len(logps)))
    if np.any(np.diff(np.append(starts, law.size)) == 0):
        raise ValueError("every law needs a positive mass")
    return scaled, top, first, starts


def stacked_log_moments(scaled: np.ndarray, top: np.ndarray, first: np.ndarray,
                        starts: np.ndarray, step: float, t: np.ndarray) -> np.ndarray:
    """``_blocked_log_moments`` of the laws whose ``grid_blocks`` these are (law k's
    rows from ``starts[k]``): one row of log-moments per law. One ramp e^{t·j·step}
    serves them all, and all but the matrix products are array passes over all the
    laws' blocks at once. A law's value is bitwise what it is alone, for several
    orders t:

    * each law's matrix product is its own: BLAS picks its kernel, and so the order of
      its roundings, by the shape (one product of all the stacked blocks gave entries
      different in the last bits, and took 8 ms instead of 1 ms for 100 laws);
    * each law's sum over its blocks is ``np.sum`` down the columns of its own rows,
      one pass in order, as alone (with zero rows padding the shorter laws: x + 0 = x).

    With a single order NumPy sums pairwise, so that case goes law by law, and BLAS
    takes a matrix-vector product, whose roundings may depend on where the rows sit
    in memory: equal to rounding, within the same bound (``SummedCGF`` never
    evaluates one order)."""
    b = scaled.shape[1]
    ramp = np.exp(np.arange(b)[:, None] * step * t[None, :])   # no overflow: see above
    counts = np.diff(np.append(starts, scaled.shape[0]))
    bounds = list(zip(starts.tolist(), (starts + counts).tolist()))
    prod = np.empty((scaled.shape[0], t.size))
    for s, e in bounds:
        np.matmul(scaled[s:e], ramp, out=prod[s:e])
    with np.errstate(divide="ignore"):
        blocks = np.log(prod) + top[:, None] + first[:, None] * t[None, :]
    peak = np.maximum.reduceat(blocks, starts, axis=0)
    terms = np.exp(blocks - np.repeat(peak, counts, axis=0))
    if t.size > 1 and starts.size > 1 and starts.size * counts.max() <= 4 * terms.shape[0]:
        # the laws' blocks padded with zero rows to one length: one in-order sum down
        # axis 1 for all laws (when the padding at most quadruples the terms)
        width = int(counts.max())
        padded = np.zeros((starts.size * width, t.size))
        padded[np.arange(terms.shape[0]) + np.repeat(np.arange(starts.size) * width - starts,
                                                     counts)] = terms
        total = np.sum(padded.reshape(starts.size, width, t.size), axis=1)
    else:
        total = np.empty_like(peak)
        for k, (s, e) in enumerate(bounds):
            total[k] = np.sum(terms[s:e], axis=0)
    result: FloatArray = peak + np.log(total)
    return result


#: The unit roundoff u = eps/2 = 2^-53 of float64: a correctly rounded operation errs by
#: at most a relative u (Higham, Accuracy and Stability of Numerical Algorithms, §2.2).
#: One name, one meaning: ``UNIT_ROUNDOFF`` is u; a module that needs eps = 2u calls it
#: ``_EPS``.
UNIT_ROUNDOFF = np.finfo(float).eps / 2

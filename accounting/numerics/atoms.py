"""Loss laws with declared atoms: the atoms on the grid exactly, the rest by its profile.

A profile known only at finitely many points cannot tell where inside a grid cell
an atom of the loss law sits, so the optimistic (convex-minorant) law smears an atom
over the cells below it and loses O(step) of δ there, not O(step²). When the pair
declares its atoms (``Pair.loss_atoms``), the law splits into the atoms and an
atomless remainder; δ is linear in the law,

    δ(ε) = A(ε) + δ_c(ε),    A(ε) = Σ_k m_k (1 − e^{ε − l_k})₊

(hockey-stick divergence of a point mass; Balle, Barthe, Gaboardi 2018,
arXiv:1807.01647, §2), so the atoms go onto the grid exactly and only δ_c goes
through the profile route. Pessimistic: an atom between grid points a < l < b is
split between them with the P-mass fraction (1 − e^{a−l})/(1 − e^{a−b}) at b, which
keeps its P- and Q-mass and makes δ the chord of A between e^a and e^b in x = e^ε:
connect-the-dots of the atom itself (Doroshenko et al. 2022, PETS, Thm 3.1), never
below A and tighter than rounding it up. Optimistic: the atom goes down to a, the
largest grid-kinked profile below A (any mass above a would put δ > 0 = A at l).
On the grid both are the atom itself.

The profile route needs the profile of a genuine pair. With forward atoms of P-mass
M_f = Σ m_k and backward ones of Q-mass M_b (the same atoms reversed: −l_k with
m_k e^{−l_k}), the remainder has P-mass 1 − M_f and Q-mass 1 − M_b (each with the
pair's mass at ±∞). Divided by s = max(1 − M_f, 1 − M_b) and topped up with the
mass r_d = 1 − (1 − M_d)/s at +∞ in each direction, it is the pair (P_ν, Q_ν) with

    δ_ν,d(ε) = (δ_d(ε) − A_d(ε))/s + r_d,

whose discretised laws, scaled back by s with r_d taken off +∞, are the remainder's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import attrs
import numpy as np

from accounting.numerics.discretise import cut_tails
from accounting.numerics.loss import LossPMF, check_built_mass, check_grid_points, grid_of
from accounting.vocabulary import ArrayLike, Direction, FloatArray

__all__ = ["atom_profile", "atoms_on_grid", "finite_law_on_grid", "AtomSplit", "add_on_grid"]

DeltaFn = Callable[[np.ndarray, Direction], np.ndarray]

#: an atom within this many ulps of a grid point sits on it
_ON_GRID_ULPS = 64
#: log of a mass that underflows float64 (a declared 0 may stand for it)
_UNDERFLOW = -700.0
#: relative disagreement allowed between the declared backward atoms and the forward
#: ones reversed (roundoff of e^{−l})
_CONSISTENT = 1e-9


def atom_profile(losses: np.ndarray, masses: np.ndarray, eps: np.ndarray) -> np.ndarray:
    """A(ε) = Σ_k m_k (1 − e^{ε − l_k})₊, vectorised over ε (±∞ allowed), with
    −expm1 so that A keeps full relative precision just below each atom."""
    eps = np.asarray(eps, dtype=float)
    gap = np.minimum(eps[..., None] - losses, 0.0)
    with np.errstate(invalid="ignore"):
        share = -np.expm1(gap)
    share = np.where(np.isnan(share), 0.0, share)   # ε = +∞: −∞ + ∞ would be NaN
    out: FloatArray = share @ masses
    return out


def on_grid(losses: np.ndarray, step: float) -> tuple[np.ndarray, np.ndarray]:
    """(k, on): the nearest grid index k of each loss and whether the loss is k·step up
    to ``_ON_GRID_ULPS`` ulps (roundoff of Δ/b and of k·step)."""
    losses = np.asarray(losses, dtype=float)
    k = np.rint(losses / step)
    tol = _ON_GRID_ULPS * np.spacing(np.maximum(np.abs(losses), step))
    return k, np.abs(losses - k * step) <= tol


def atoms_on_grid(losses: np.ndarray, masses: np.ndarray, step: float,
                  pessimistic: bool) -> LossPMF:
    """Atoms (losses, masses) on the grid i·``step``: split between the two grid points
    around each (pessimistic) or moved down to the one below (optimistic); module
    docstring. An optimistic atom within roundoff *below* a grid point (``on_grid``)
    goes to that point instead of a whole cell down, with the δ it may add, at most
    m·(1 − e^{l − k·step}), booked as ``slack``. Pessimistic laws record the largest
    atom as ``sup_loss``."""
    losses = np.asarray(losses, dtype=float)
    masses = np.asarray(masses, dtype=float)
    slack = 0.0
    lo = np.floor(losses / step)
    lo = np.where(lo * step > losses, lo - 1, lo)            # a = lo·step ≤ l
    lo = np.where((lo + 1) * step <= losses, lo + 1, lo)     # … and l < (lo + 1)·step
    a = lo * step
    if pessimistic:
        with np.errstate(invalid="ignore"):
            frac = np.expm1(a - losses) / np.expm1(-step)
        frac = np.where(losses > a, np.clip(frac, 0.0, 1.0), 0.0)
        idx = np.concatenate([lo, lo + 1])
        w = np.concatenate([masses * (1.0 - frac), masses * frac])
    else:
        k, on = on_grid(losses, step)
        idx, w = np.where(on, k, lo), masses
        raised = on & (k * step > losses)
        slack = float(np.sum(masses[raised] * -np.expm1(losses[raised] - k[raised] * step)))
    idx = idx.astype(np.int64)
    base = int(idx.min())
    check_grid_points(int(idx.max()) - base + 1, step, "the loss atoms on the grid")
    sup = float(losses[masses > 0].max()) if pessimistic and (masses > 0).any() else None
    grid = np.bincount(idx - base, weights=w)
    check_built_mass(grid, 0.0, "loss atoms on the grid")
    return LossPMF.on_grid(step, base, grid, slack=slack, sup_loss=sup)


def finite_law_on_grid(law: LossPMF, step: float, tail: float) -> LossPMF:
    """The pessimistic grid law of a law of finitely many atoms: connect-the-dots of
    each atom (``atoms_on_grid``), computed from the atoms themselves rather than from
    differences of profile values, so that no roundoff-sized negative mass arises.
    The P-mass above the top ``tail`` goes to +∞ and that below the bottom ``tail``
    onto the lowest kept atom (as ``discretise.atoms_to_grid``: both only raise δ).
    This is what a finite pair's profile gives in exact arithmetic; through the
    profile, randomized response with p = 2.6e-97 (losses ±222.4) kept 1.9e-12 of
    P-mass above 1 (profile values noisy at 1e-12 where e^ε·p ≈ 1)."""
    if law.losses.size == 0:
        return LossPMF.on_grid(step, 0, np.zeros(1), law.inf_mass, sup_loss=law.sup_loss)
    losses, masses, inf_mass = cut_tails(law, tail, pessimistic=True)
    out = atoms_on_grid(losses, masses, step, pessimistic=True)
    sup = out.sup_loss if inf_mass == 0 else None
    check_built_mass(out.masses, inf_mass, "a finite law on the grid")
    return LossPMF.on_grid(step, grid_of(out)[1], out.masses, inf_mass, sup_loss=sup)


def _atoms(value: Iterable[ArrayLike]) -> tuple[np.ndarray, np.ndarray]:
    losses, masses = (np.asarray(v, dtype=float).ravel() for v in value)
    if losses.shape != masses.shape:
        raise ValueError("loss_atoms must return (losses, masses) of the same length")
    if not (np.all(np.isfinite(losses)) and np.all(np.isfinite(masses)) and np.all(masses >= 0)):
        raise ValueError("loss_atoms must return finite losses and finite masses ≥ 0")
    if masses.sum() > 1.0 + 1e-12:
        raise ValueError(f"loss_atoms: masses sum to {masses.sum()!r} > 1")
    order = np.argsort(losses)
    return losses[order], masses[order]


@attrs.frozen(eq=False)
class AtomSplit:
    """The declared atoms of both directions and the normalisation of the remainder."""

    forward: tuple[np.ndarray, np.ndarray] = attrs.field(converter=_atoms)
    backward: tuple[np.ndarray, np.ndarray] = attrs.field(converter=_atoms)
    label: str = "pair"

    def __attrs_post_init__(self) -> None:
        """The backward atoms must be the forward ones reversed: losses −l, masses
        m·e^{−l}, compared in log space (a mass may underflow on one side only)."""
        (lf, mf), (lb, mb) = self.forward, self.backward
        rev_l, rev_m = -lf[::-1], mf[::-1]
        ok = lb.shape == lf.shape and np.allclose(lb, rev_l, rtol=_CONSISTENT, atol=0)
        if ok:
            with np.errstate(divide="ignore"):
                log_b, want = np.log(mb), np.log(rev_m) + rev_l
            both = np.isfinite(log_b) & np.isfinite(want)
            tol = _CONSISTENT * np.maximum(1.0, np.abs(rev_l))
            # one side 0: the mass the other implies for it must underflow
            implied = np.where(np.isfinite(log_b), log_b - rev_l, want)
            ok = bool(np.all(np.abs(log_b - want)[both] <= tol[both])
                      and np.all(implied[~both] < _UNDERFLOW))
        if not ok:
            raise ValueError(f"{self.label}: loss_atoms('backward') must be the forward atoms "
                             f"reversed (losses −l, masses m·e^(−l)); got forward "
                             f"{lf.tolist()} / {mf.tolist()}, backward {lb.tolist()} / "
                             f"{mb.tolist()}")

    def on(self, step: float) -> AtomSplit:
        """The split of the atoms on the grid i·``step`` only (``on_grid``); the others
        stay in the remainder. There the profile route's joint minorant loses less
        than moving the atom a cell down, which shifts δ at every ε below it
        (Laplace at step 1e-3, Δ/b = 1/3: mean optimistic δ gap 4e-6 against 1.3e-4,
        the max 1.7e-4 either way); on the grid the split loses nothing."""
        def keep(atoms: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
            losses, masses = atoms
            sel = on_grid(losses, step)[1]
            return losses[sel], masses[sel]
        return AtomSplit(keep(self.forward), keep(self.backward), self.label)

    def _of(self, d: Direction) -> tuple[np.ndarray, np.ndarray]:
        return self.forward if d is Direction.FORWARD else self.backward

    @property
    def scale(self) -> float:
        """s = max(1 − M_f, 1 − M_b): the remainder's larger total mass (0: atoms only)."""
        return max(0.0, 1.0 - float(self.forward[1].sum()), 1.0 - float(self.backward[1].sum()))

    def floor(self, d: Direction) -> float:
        """r_d = 1 − (1 − M_d)/s, the mass the normalised remainder carries at +∞."""
        s = self.scale
        return max(0.0, 1.0 - (1.0 - float(self._of(d)[1].sum())) / s) if s > 0 else 0.0

    def remainder(self, delta: DeltaFn) -> DeltaFn:
        """δ_ν,d(ε) = (δ_d(ε) − A_d(ε))/s + r_d: the profile of the normalised remainder
        (roundoff-sized negative differences are raised to 0: δ − A ≥ 0 exactly)."""
        s = self.scale

        def delta_nu(eps: np.ndarray, d: Direction) -> np.ndarray:
            eps = np.asarray(eps, dtype=float)
            rest = np.maximum(delta(eps, d) - atom_profile(*self._of(d), eps), 0.0)
            out: np.ndarray = np.minimum(rest / s + self.floor(d), 1.0)
            return out
        return delta_nu

    def recombine(self, rest: LossPMF | None, d: Direction, step: float,
                  pessimistic: bool) -> LossPMF:
        """The direction's law on the grid: the atoms on it (``atoms_on_grid``) plus ``rest``, the discretised normalised
        remainder, scaled back by s with r_d taken off its mass at +∞.

        Pessimistic: whatever of r_d the grid law lacks at +∞ (roundoff) is not taken
        (δ only rises). Optimistic: the lack is booked as ``slack`` (δ only falls)."""
        losses, masses = self._of(d)
        parts: list[LossPMF] = []
        if masses.sum() > 0:
            parts.append(atoms_on_grid(losses, masses, step, pessimistic))
        inf_mass, slack = 0.0, sum(p.slack for p in parts)
        s, r = self.scale, self.floor(d)
        if rest is not None and s > 0:
            extra = rest.inf_mass - r
            inf_mass = max(extra, 0.0) * s
            slack += rest.slack * s + (0.0 if pessimistic else max(-extra, 0.0) * s)
            parts.append(attrs.evolve(rest, masses=rest.masses * s, inf_mass=0.0, slack=0.0))
        law = add_on_grid(parts, step)
        # the pessimistic remainder's largest loss (connect-the-dots, when it has no mass
        # at +∞) and the largest atom bound the law's
        sups = [p.sup_loss for p in parts if p.masses.sum() > 0]
        known = [x for x in sups if x is not None]
        sup = (max(known) if pessimistic and inf_mass == 0 and sups and len(known) == len(sups)
               else None)
        inf_mass = min(1.0, inf_mass)
        law = LossPMF.on_grid(step, grid_of(law)[1], law.masses, inf_mass, slack, sup_loss=sup)
        # the P-mass the sums lost to roundoff goes on the top loss (``topped_up``): a
        # pessimistic law short of 4e-16 had δ below 1 − e^ε under the whole support
        return law.topped_up() if pessimistic else _below_identity(law)


def _below_identity(law: LossPMF) -> LossPMF:
    """An optimistic law whose δ stays ≤ 1 − e^ε below its support, the least δ of any
    pair there: below the lowest loss l₀ its δ is P − e^ε·Q, which the sums' roundoff
    can lift above 1 − e^ε when its Q-mass falls short of 1 (by 2.6e-15 for Laplace).
    P-mass e^{l₀}(1 − Q) − (1 − P) is taken off the top losses, which only lowers δ."""
    import math
    if law.masses.size == 0:
        return law
    p_short = (1.0 - law.inf_mass) - math.fsum(law.masses)
    q_short = 1.0 - math.fsum(law.masses * np.exp(-law.losses))
    excess = math.exp(float(law.losses[0])) * q_short - p_short
    if excess <= 0:
        return law
    m = law.masses.copy()
    above = np.append(np.cumsum(m[::-1])[::-1][1:], 0.0)     # mass above each atom
    m = m - np.minimum(m, np.maximum(excess - above, 0.0))
    return attrs.evolve(law, masses=m)


def add_on_grid(parts: list[LossPMF], step: float) -> LossPMF:
    """The sum of sub-probability laws on the grid i·``step`` (finite atoms only)."""
    parts = [p for p in parts if p.masses.size]
    if not parts:
        return LossPMF.on_grid(step, 0, np.zeros(1))
    offsets = [grid_of(p)[1] for p in parts]
    lo = min(offsets)
    hi = max(o + p.masses.size for o, p in zip(offsets, parts))
    check_grid_points(hi - lo, step, "the loss law on the grid")
    out = np.zeros(hi - lo)
    for o, p in zip(offsets, parts):
        out[o - lo:o - lo + p.masses.size] += p.masses
    check_built_mass(out, 0.0, "a sum of laws on the grid")
    return LossPMF.on_grid(step, lo, out)

"""Exact composition of finite loss laws, with the masses in log space.

Running independent mechanisms one after another multiplies their output laws, so
the privacy loss of the product is the sum of the losses: under P its law is the
convolution of the components' laws (Dwork, Rothblum, Vadhan 2010; for finite laws
the statement of Kairouz, Oh, Viswanath, arXiv:1311.0776, §3). For laws with finitely
many atoms the convolution is a finite sum: the atoms of the product are the sums
l_a + l_b of one atom from each factor, with P-masses p_a·p_b, and the mass at +∞ is
1 − (1 − m_∞,a)(1 − m_∞,b) (the loss is +∞ as soon as one factor's is).

Log space. The masses are carried as logarithms, log p_a + log p_b, and equal sums are
merged by a log-sum-exp, so nothing underflows on the way: the largest loss of 10⁴
randomized responses at p = 0.9 has mass 0.9^{10⁴} ≈ 10^{−458}, which a product of
float masses loses — and with it the largest loss, the composition's ε(δ = 0). Only
the finished law is exponentiated (``law_from_log_masses``), and a mass below
float64's range is then merged *upwards* onto the next atom kept, the largest loss
always kept with at least the smallest subnormal mass: moving P-mass to a larger
loss only raises δ(ε) = E_P[(1 − e^{ε−L})₊] (the law still dominates), the largest
loss stays the exact one, and the masses move by less than float64 resolves.

Merging. Sums of the same atoms in another order differ by a few ulps; atoms within
``MERGE_RTOL`` (relative, absolute below 1) are one atom, kept at the cluster's
largest loss (upwards again). Each step's loss error is bounded and carried
(``ExactLaw.loss_error``): the float losses lie within it of the exact sums of the
factors' float losses, which is what a certified bracket around a law's answers
widens by. Equal factors go by repeated squaring (``law_power``: a two-atom law at
±ε gives the k + 1 atoms (2j − k)ε, not 2^k); beyond ``MAX_ATOMS`` the product is
refused (a ``ValueError`` naming the PLD accountant, which composes any pairs on a
grid with a certified bracket; exact composition of heterogeneous (ε, δ) guarantees
is #P-hard in general, Murtagh and Vadhan, arXiv:1507.03113).
"""

from __future__ import annotations

import attrs
import numpy as np

from accounting.numerics.loss import LossPMF
from accounting.validation import check_count
from accounting.vocabulary import AnyArray, FloatArray

__all__ = ["MAX_ATOMS", "MERGE_RTOL", "ExactLaw", "convolve_laws", "law_power",
           "law_from_log_masses", "exact_law", "law_delta", "check_atoms"]

#: largest support an exact product may reach (atoms of one directional law)
MAX_ATOMS = 1 << 20
#: relative distance below which two summed losses are one atom split by roundoff
#: (ε₁ + ε₂ − ε₁ ≠ ε₂ in float64); merged at the larger of the two
MERGE_RTOL = 1e-12
#: relative rounding of one float64 addition of losses (a unit of roundoff, 2^−53,
#: doubled for the sum of the two operands' own roundings)
_ADD_RTOL = 2.0 ** -52
#: log of the smallest normal float64 mass kept as it is; lighter masses are merged
#: upwards (``law_from_log_masses``)
_LOG_TINY = float(np.log(np.finfo(float).tiny))
#: the smallest positive float64, the least mass the largest loss keeps
_SUBNORMAL = float(np.nextafter(0.0, 1.0))


def check_atoms(n: int) -> None:
    """A ValueError when an exact product would have ``n`` > ``MAX_ATOMS`` atoms."""
    if n > MAX_ATOMS:
        raise ValueError(f"the exact product would have about {n:,} loss atoms (max "
                         f"{MAX_ATOMS:,}); compose on a grid instead (accounting.Accountant, "
                         f"the PLD accountant, gives a certified bracket)")


@attrs.frozen(eq=False)
class ExactLaw:
    """A finite loss law with log masses: ``losses`` strictly increasing, ``log_masses``
    their P-masses' logarithms, ``inf_mass`` the mass at +∞, and ``loss_error`` an
    absolute bound on how far each float loss lies from the exact sum of the factors'
    float losses it stands for (0 for a law taken as given)."""

    losses: FloatArray
    log_masses: FloatArray
    inf_mass: float = 0.0
    loss_error: float = 0.0
    #: an absolute bound on the error of the log masses (a relative one on the masses
    #: and on the mass at +∞), over the law taken as given
    mass_error: float = 0.0

    @classmethod
    def of(cls, law: LossPMF, loss_error: float = 0.0, mass_error: float = 0.0) -> ExactLaw:
        """The finite law ``law``, its masses' logarithms (zero masses dropped; the
        logarithm's rounding added to ``mass_error``)."""
        keep = law.masses > 0
        log_masses = np.log(np.asarray(law.masses[keep], dtype=float))
        rounding = _ADD_RTOL * (1.0 + float(np.max(np.abs(log_masses), initial=0.0)))
        return cls(np.asarray(law.losses[keep], dtype=float), log_masses,
                   float(law.inf_mass), loss_error, mass_error + rounding)

    @property
    def max_loss(self) -> float:
        """The largest finite loss (−∞ for a law with no finite atom)."""
        return float(self.losses[-1]) if self.losses.size else -np.inf

    def to_pmf(self) -> LossPMF:
        """The law as a ``LossPMF`` (``law_from_log_masses``)."""
        return law_from_log_masses(self.losses, self.log_masses, self.inf_mass)


def _merge_close(losses: FloatArray, log_masses: FloatArray
                 ) -> tuple[FloatArray, FloatArray, float]:
    """Atoms whose losses agree to ``MERGE_RTOL`` (relative, or absolute below 1) merged
    onto the cluster's largest loss, their masses by a log-sum-exp; also the largest
    distance a loss moved."""
    keep = np.isfinite(log_masses)
    order = np.argsort(losses[keep], kind="stable")
    l, lm = losses[keep][order], log_masses[keep][order]
    if l.size < 2:
        return l, lm, 0.0
    gap = np.diff(l) > MERGE_RTOL * np.maximum(1.0, np.abs(l[1:]))
    starts = np.concatenate([[0], np.flatnonzero(gap) + 1])
    ends = np.concatenate([starts[1:], [l.size]])
    top = l[ends - 1]
    # log-sum-exp per cluster, shifted by the cluster's largest log mass
    shift = np.maximum.reduceat(lm, starts)
    sizes = ends - starts
    summed = np.add.reduceat(np.exp(lm - np.repeat(shift, sizes)), starts)
    moved = float(np.max(np.repeat(top, sizes) - l))
    return top, shift + np.log(summed), moved


def convolve_laws(a: ExactLaw, b: ExactLaw) -> ExactLaw:
    """The law of L_a + L_b for independent losses: finite atoms by outer sums, log
    masses added, equal sums merged (``_merge_close``); mass at +∞ = m_a + m_b − m_a·m_b.
    The loss error adds the operands', one rounding of the largest sum and the
    largest move of a merge; the mass error the operands', the rounding of the sums
    of log masses and of the log-sum-exp merges."""
    check_atoms(a.losses.size * b.losses.size)
    losses = (a.losses[:, None] + b.losses[None, :]).ravel()
    log_masses = (a.log_masses[:, None] + b.log_masses[None, :]).ravel()
    inf_mass = min(a.inf_mass + b.inf_mass - a.inf_mass * b.inf_mass, 1.0)
    l, lm, moved = _merge_close(losses, log_masses)
    scale = float(np.max(np.abs(l))) if l.size else 0.0
    err = a.loss_error + b.loss_error + _ADD_RTOL * scale + moved
    log_scale = float(np.max(np.abs(lm))) if lm.size else 0.0
    mass_err = a.mass_error + b.mass_error + _ADD_RTOL * (4.0 + log_scale)
    return ExactLaw(l, lm, inf_mass, err, mass_err)


def law_power(law: ExactLaw, count: int) -> ExactLaw:
    """The ``count``-fold convolution power of ``law``, by repeated squaring."""
    count = check_count("count", count)
    result: ExactLaw | None = None
    base = law
    while True:
        if count & 1:
            result = base if result is None else convolve_laws(result, base)
        count >>= 1
        if not count:
            assert result is not None      # count ≥ 1 has a set bit
            return result
        base = convolve_laws(base, base)


def law_from_log_masses(losses: AnyArray, log_masses: AnyArray,
                        inf_mass: float = 0.0) -> LossPMF:
    """A ``LossPMF`` from increasing ``losses`` and their log masses: masses below
    float64's normal range merged upwards onto the next atom kept (in log space), and
    the largest loss kept with at least the smallest subnormal mass (module
    docstring); pessimistic, and the largest loss is the exact one."""
    losses = np.asarray(losses, dtype=float)
    lm = np.asarray(log_masses, dtype=float)
    if losses.size == 0:
        return LossPMF(np.zeros(0), np.zeros(0), inf_mass)
    kept = lm >= _LOG_TINY
    kept[-1] = True
    # each light atom joins the next kept atom above it
    # (the rank among the kept atoms of the first one at or above each atom)
    group: np.ndarray = np.cumsum(kept) - kept
    idx = np.flatnonzero(kept)
    shift = np.full(idx.size, -np.inf)
    np.maximum.at(shift, group, lm)
    with np.errstate(invalid="ignore"):
        summed = np.bincount(group, weights=np.exp(lm - shift[group]), minlength=idx.size)
    with np.errstate(divide="ignore"):
        log_total = shift + np.log(summed)
    masses = np.exp(log_total)
    masses[-1] = max(masses[-1], _SUBNORMAL)
    return LossPMF(losses[idx], masses, inf_mass)


def exact_law(law: LossPMF, count: int = 1) -> ExactLaw:
    """The ``count``-fold product law of a finite ``law`` (``law_power``)."""
    return law_power(ExactLaw.of(law), count)


def law_delta(law: LossPMF, eps: FloatArray | float, chunk: int = 1 << 22) -> FloatArray:
    """δ(ε) = Σ_{l_i > ε} m_i·(1 − e^{ε − l_i}) + m_∞ of a finite law, each term computed
    as m_i·(−expm1(ε − l_i)) ≥ 0: a sum of non-negative terms, accurate to a few units
    of roundoff relative (the tail-sum form S − e^ε U of ``LossPMF.delta`` cancels
    when ε sits just below an atom). ε = −∞ gives the total mass, +∞ the mass at +∞."""
    eps = np.asarray(eps, dtype=float)
    flat = eps.ravel()
    out = np.empty(flat.shape)
    l, m = law.losses, law.masses
    start = np.searchsorted(l, flat, side="right")
    for i, e in enumerate(flat):
        if e == -np.inf:
            out[i] = float(np.sum(m)) + law.inf_mass
            continue
        total = 0.0
        for lo in range(int(start[i]), l.size, chunk):
            seg = slice(lo, lo + chunk)
            total += float(np.sum(m[seg] * -np.expm1(e - l[seg])))
        out[i] = total + law.inf_mass
    return out.reshape(eps.shape)

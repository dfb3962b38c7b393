"""The exact product of pairs with finite loss laws: composition without a grid.

Running independent mechanisms one after another multiplies their output laws, so
the privacy loss of the product is the sum of the losses: under P its law is the
convolution of the components' laws (Dwork, Rothblum, Vadhan 2010; for finite laws
the statement of Kairouz, Oh, Viswanath, arXiv:1311.0776, §3). For laws with finitely
many atoms the convolution is a finite sum: the atoms of the product are the sums of
one atom from each factor, their P-masses the products, and the mass at +∞ is
1 − Π_i (1 − m_∞,i) (the loss is +∞ as soon as one factor's is). The result is the
exact law of the product — no discretisation — so its profile, ε(δ), trade-off
function and Rényi curve are exact too (up to float64: sums of the same atoms in
another order, a few ulps apart, are merged at the larger, ``MERGE_RTOL``).

Equal factors are grouped and a group of k copies of a law is summed as the k-th
convolution power by repeated squaring, merging equal losses at each step (a
two-atom law at ±ε gives the k + 1 atoms (2j − k)ε, not 2^k). The number of atoms
can still grow as the product of the factors' supports; beyond ``MAX_ATOMS`` the
product is refused with a message naming the PLD accountant, which composes any
pairs on a grid with a certified bracket (exact composition of heterogeneous (ε, δ)
guarantees is #P-hard in general, Murtagh and Vadhan, arXiv:1507.03113).
"""

from __future__ import annotations

from collections.abc import Iterable

import attrs
import numpy as np

from accounting.numerics.loss import LossPMF
from accounting.pairs.pair import LawPair, Pair
from accounting.validation import check_count
from accounting.vocabulary import FloatArray

__all__ = ["MAX_ATOMS", "FiniteLawPair", "exact_product", "convolve_laws", "law_power"]

#: largest support an exact product may reach (atoms of one directional law)
MAX_ATOMS = 1 << 20


def _check_size(n: int) -> None:
    if n > MAX_ATOMS:
        raise ValueError(f"the exact product would have about {n:,} loss atoms (max "
                         f"{MAX_ATOMS:,}); compose on a grid instead (accounting.Accountant, "
                         f"the PLD accountant, gives a certified bracket)")


#: relative distance below which two summed losses are one atom split by roundoff
#: (ε₁ + ε₂ − ε₁ ≠ ε₂ in float64); merged at the larger of the two
MERGE_RTOL = 1e-12


def _merge_close(losses: FloatArray, masses: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Atoms whose losses agree to ``MERGE_RTOL`` (relative, or absolute below 1) merged
    onto the cluster's largest loss: sums of the same atoms in another order differ by
    a few ulps, and without merging a k-fold power of a lattice law would keep up to
    2^k near-copies. Moving a loss up by ≤ 1e-12 relative keeps the law dominating."""
    keep = masses > 0
    order = np.argsort(losses[keep], kind="stable")
    l, m = losses[keep][order], masses[keep][order]
    if l.size < 2:
        return l, m
    gap = np.diff(l) > MERGE_RTOL * np.maximum(1.0, np.abs(l[1:]))
    cluster = np.concatenate([[0], np.cumsum(gap)])
    top = np.full(cluster[-1] + 1, -np.inf)
    np.maximum.at(top, cluster, l)
    # numpy's stub types bincount as integer even with float weights (it returns float64)
    return top, np.bincount(cluster, weights=m)  # type: ignore[return-value]


def convolve_laws(a: LossPMF, b: LossPMF) -> LossPMF:
    """The law of L_a + L_b for independent losses: finite atoms by outer sums (equal
    sums merged, ``_merge_close``), mass at +∞ = 1 − (1 − m_a)(1 − m_b) (computed as
    m_a + m_b − m_a·m_b)."""
    _check_size(a.losses.size * b.losses.size)
    losses = (a.losses[:, None] + b.losses[None, :]).ravel()
    masses = (a.masses[:, None] * b.masses[None, :]).ravel()
    inf_mass = a.inf_mass + b.inf_mass - a.inf_mass * b.inf_mass
    return LossPMF.from_atoms(*_merge_close(losses, masses), min(inf_mass, 1.0))


def law_power(law: LossPMF, count: int) -> LossPMF:
    """The ``count``-fold convolution power of ``law``, by repeated squaring."""
    count = check_count("count", count)
    result: LossPMF | None = None
    base = law
    while True:
        if count & 1:
            result = base if result is None else convolve_laws(result, base)
        count >>= 1
        if not count:
            assert result is not None      # count ≥ 1 has a set bit
            return result
        base = convolve_laws(base, base)


def _exact_laws(pair: Pair) -> tuple[LossPMF, LossPMF]:
    if not isinstance(pair, LawPair) or not pair.exact:
        raise TypeError(f"an exact product needs pairs with exact finite loss laws (LawPair "
                        f"with upper = lower), got {pair.describe()}; compose it on a grid "
                        f"with accounting.Accountant instead")
    return pair.upper


def exact_product(components: Iterable[tuple[Pair, int] | Pair],
                  label: str = "") -> LawPair:
    """The exact product pair of ``components`` — pairs, or (pair, count) tuples — whose
    loss laws are finite and exact (``LawPair`` with upper = lower).

    Both directions are convolved separately (the backward loss of the product is the
    sum of the backward losses). The result is a ``LawPair`` with upper = lower: exact.
    """
    items: list[tuple[Pair, int]] = []
    for item in components:
        pair, count = item if isinstance(item, tuple) else (item, 1)
        items.append((pair, check_count("count", count)))
    if not items:
        raise ValueError("exact_product needs at least one component")
    fwd: LossPMF | None = None
    bwd: LossPMF | None = None
    symmetric = True
    for pair, count in items:
        f, b = _exact_laws(pair)
        symmetric &= bool(pair.symmetric)
        fp, bp = law_power(f, count), law_power(b, count)
        fwd = fp if fwd is None else convolve_laws(fwd, fp)
        bwd = bp if bwd is None else convolve_laws(bwd, bp)
    assert fwd is not None and bwd is not None   # at least one component
    text = label or " ⊗ ".join(f"{p.describe()}^{c}" if c > 1 else p.describe()
                               for p, c in items)
    return LawPair((fwd, bwd), (fwd, bwd), text, symmetric=symmetric)


@attrs.frozen(eq=False)
class FiniteLawPair(LawPair):
    """An exact finite ``LawPair`` whose ``count``-fold product is computed exactly
    (``law_power``) while its support stays within ``MAX_ATOMS``; beyond, ``None``
    (the grid PLD then composes it, with a certified bracket)."""

    count: int = 1

    def _self_compose(self, count: int) -> Pair | None:
        count = check_count("count", count)
        if not self.exact:
            return None
        try:
            fwd, bwd = (law_power(law, count) for law in self.upper)
        except ValueError:          # the support outgrew MAX_ATOMS
            return None
        return FiniteLawPair((fwd, bwd), (fwd, bwd), f"{self.label}^{count}",
                             symmetric=self.symmetric, count=self.count * count)

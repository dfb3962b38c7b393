"""The exact product of pairs with finite loss laws: composition without a grid.

The product of independent pairs has, in each direction, the convolution of their
loss laws as its loss law (``accounting.numerics.finite``: Kairouz, Oh, Viswanath,
arXiv:1311.0776, §3, for finite laws; masses in log space, equal losses merged). For
finite laws that convolution is a finite sum, so the product's profile, ε(δ),
trade-off function and Rényi curve are exact too, up to float64: the float losses
lie within ``FiniteLawPair.loss_error`` of the exact sums, which a certified bracket
of the answers widens by (``Accountant``), and masses below float64's range are
merged onto larger losses (pessimistic, the largest loss kept exactly).

``exact_product`` is the product of several pairs; ``FiniteLawPair`` a finite pair
whose ``count``-fold product is computed exactly while its support stays within
``MAX_ATOMS`` (beyond, ``None``: the grid PLD composes it, with a certified bracket).
"""

from __future__ import annotations

from collections.abc import Iterable

import attrs
import numpy as np

from accounting.numerics.finite import ExactLaw, convolve_laws, law_power
from accounting.pairs.pair import LawPair, Pair
from accounting.validation import check_count

__all__ = ["FiniteLawPair", "exact_product", "finite_laws", "exact_laws_of"]


@attrs.frozen(eq=False)
class FiniteLawPair(LawPair):
    """An exact finite ``LawPair`` whose ``count``-fold product is computed exactly
    (``law_power``) while its support stays within ``MAX_ATOMS``; beyond, ``None``
    (the grid PLD then composes it, with a certified bracket).

    ``loss_error``: an absolute bound on how far the float losses lie from the exact
    sums of the single-use float losses (0 for a law taken as given); ``mass_error``
    the same, relative, for the masses."""

    count: int = 1
    loss_error: float = attrs.field(default=0.0, kw_only=True)
    #: a bound on the relative error of the masses (and of the mass at +∞) over the
    #: law taken as given (0 for a law taken as given)
    mass_error: float = attrs.field(default=0.0, kw_only=True)

    def _self_compose(self, count: int) -> Pair | None:
        count = check_count("count", count)
        if not self.exact:
            return None
        laws = exact_laws_of(self)
        assert laws is not None          # an exact LawPair
        try:
            fwd, bwd = (law_power(law, count) for law in laws)
        except ValueError:          # the support outgrew MAX_ATOMS
            return None
        return _pair_of(fwd, bwd, f"{self.label}^{count}", self.symmetric,
                        self.count * count)


def _pair_of(fwd: ExactLaw, bwd: ExactLaw, label: str, symmetric: bool,
             count: int = 1) -> FiniteLawPair:
    f, b = fwd.to_pmf(), bwd.to_pmf()
    # (exponentiating a log mass m adds |log m| units of roundoff)
    exp_error = 2.0 ** -52 * (1.0 + max(float(np.max(np.abs(x.log_masses), initial=0.0))
                                        for x in (fwd, bwd)))
    return FiniteLawPair((f, b), (f, b), label, symmetric=symmetric, count=count,
                         loss_error=max(fwd.loss_error, bwd.loss_error),
                         mass_error=max(fwd.mass_error, bwd.mass_error) + exp_error)


def exact_laws_of(pair: Pair) -> tuple[ExactLaw, ExactLaw] | None:
    """The (forward, backward) exact finite laws of ``pair`` — an exact ``LawPair``
    (upper = lower), with its ``loss_error`` if it carries one — or None."""
    if not isinstance(pair, LawPair) or not pair.exact:
        return None
    err = float(getattr(pair, "loss_error", 0.0))
    mass = float(getattr(pair, "mass_error", 0.0))
    fwd, bwd = (ExactLaw.of(law, err, mass) for law in pair.upper)
    return fwd, bwd


def finite_laws(components: Iterable[tuple[Pair, int]]) -> tuple[ExactLaw, ExactLaw]:
    """The exact (forward, backward) laws of the product of ``components`` ((pair,
    count), …), each an exact finite pair; a TypeError for another pair, a ValueError
    when the support would exceed ``MAX_ATOMS``. A component with a closed-form
    ``count``-fold product (randomized response's binomial law) takes it."""
    fwd: ExactLaw | None = None
    bwd: ExactLaw | None = None
    for pair, count in components:
        count = check_count("count", count)
        closed = pair._self_compose(count) if count > 1 else None
        laws = exact_laws_of(closed) if closed is not None else None
        if laws is None:
            base = exact_laws_of(pair)
            if base is None:
                raise TypeError(f"an exact product needs pairs with exact finite loss laws "
                                f"(LawPair with upper = lower), got {pair.describe()}; "
                                f"compose it on a grid with accounting.Accountant instead")
            laws = (law_power(base[0], count), law_power(base[1], count))
        fwd = laws[0] if fwd is None else convolve_laws(fwd, laws[0])
        bwd = laws[1] if bwd is None else convolve_laws(bwd, laws[1])
    if fwd is None or bwd is None:
        raise ValueError("exact_product needs at least one component")
    return fwd, bwd


def exact_product(components: Iterable[tuple[Pair, int] | Pair],
                  label: str = "") -> FiniteLawPair:
    """The exact product pair of ``components`` — pairs, or (pair, count) tuples — whose
    loss laws are finite and exact (``LawPair`` with upper = lower).

    Both directions are convolved separately (the backward loss of the product is the
    sum of the backward losses). The result is a ``FiniteLawPair`` with upper = lower:
    exact up to float64 (module docstring)."""
    items: list[tuple[Pair, int]] = []
    for item in components:
        pair, count = item if isinstance(item, tuple) else (item, 1)
        items.append((pair, check_count("count", count)))
    if not items:
        raise ValueError("exact_product needs at least one component")
    fwd, bwd = finite_laws(items)
    symmetric = all(bool(p.symmetric) for p, _ in items)
    text = label or " ⊗ ".join(f"{p.describe()}^{c}" if c > 1 else p.describe()
                               for p, c in items)
    return _pair_of(fwd, bwd, text, symmetric)

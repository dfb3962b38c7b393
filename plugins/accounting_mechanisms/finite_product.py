"""The exact product of pairs with finite loss laws: composition without a grid.

The product itself lives in the core (``accounting.pairs.finite``, over the log-space
convolution of ``accounting.numerics.finite``), where the accountant combines every
finite part of a composition into one law before anything is discretised. This
module keeps the names the mechanisms import (``exact_product``, ``FiniteLawPair``)
and the ``LossPMF``-level ``convolve_laws``/``law_power`` it has always offered.
"""

from __future__ import annotations

from accounting.numerics.finite import MAX_ATOMS, MERGE_RTOL, ExactLaw
from accounting.numerics.finite import convolve_laws as _convolve
from accounting.numerics.finite import law_power as _power
from accounting.numerics.loss import LossPMF
from accounting.pairs.finite import FiniteLawPair, exact_product

__all__ = ["MAX_ATOMS", "MERGE_RTOL", "FiniteLawPair", "exact_product", "convolve_laws",
           "law_power"]


def convolve_laws(a: LossPMF, b: LossPMF) -> LossPMF:
    """The law of L_a + L_b for independent losses (``accounting.numerics.finite``)."""
    return _convolve(ExactLaw.of(a), ExactLaw.of(b)).to_pmf()


def law_power(law: LossPMF, count: int) -> LossPMF:
    """The ``count``-fold convolution power of ``law``, by repeated squaring."""
    return _power(ExactLaw.of(law), count).to_pmf()

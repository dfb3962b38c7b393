"""Fully adaptive accounting and group privacy over the library's curves.

* ``filters``: stopping rules that keep an adaptively chosen sequence within a budget
  (Rényi and zCDP filters, Feldman–Zrnic arXiv:2008.11193; Gaussian DP filter, Smith–Thakurta
  arXiv:2210.17520);
* ``odometer``: the privacy spent so far, valid at every time at once (Rényi odometer by
  Ville's inequality, Whitehouse et al. arXiv:2203.05481);
* ``group``: the curve of datasets k neighbours apart, for every curve kind, labelled
  exact or a bound.

See ``docs/adaptive.md``.
"""

from accounting.adaptive.filters import (
    DEFAULT_ORDERS,
    BudgetExhausted,
    Decision,
    GaussianFilter,
    RDPFilter,
    ZCDPFilter,
)
from accounting.adaptive.group import group
from accounting.adaptive.odometer import RDPOdometer, odometer_epsilon

__all__ = ["BudgetExhausted", "Decision", "DEFAULT_ORDERS", "GaussianFilter", "RDPFilter",
           "RDPOdometer", "ZCDPFilter", "group", "odometer_epsilon"]

"""Randomized response: report the true bit with probability p, else its flip.

The pair is ((p, 1 − p), (1 − p, p)) on {0, 1}: the loss is ±log(p/(1−p)), exact.
Neighbouring inputs differ in the one bit (replace-one on that record); the
sensitivity parameter is not used (it must be 1).
RDP in closed form (Mironov 2017, Table II):
D_α = log[p^α(1−p)^{1−α} + (1−p)^α p^{1−α}]/(α − 1).
"""

from __future__ import annotations

import attrs
import numpy as np

from accounting.hookspecs import hookimpl
from accounting.mechanism import (Mechanism, Neighbouring, Range, as_neighbouring, parameter,
                                  positive)
from accounting.pair import LawPair, discrete_pair

__all__ = ["RandomizedResponse", "rr_cgf"]


def rr_cgf(p: float, t: np.ndarray) -> np.ndarray:
    """K(t) = log[p^{1+t}(1−p)^{−t} + (1−p)^{1+t}p^{−t}] in log space."""
    t = np.asarray(t, dtype=float)
    lp, lq = np.log(p), np.log1p(-p)
    return np.logaddexp((1 + t) * lp - t * lq, (1 + t) * lq - t * lp)


@attrs.frozen
class RandomizedResponse(Mechanism):
    """Binary randomized response, truthful with probability ``p`` ∈ (0, 1).

    Neighbouring: the one record's bit is replaced (replace-one, the default); the
    sensitivity must be 1. Under add/remove (a record present or absent, its bit
    answered or a fixed default) the same pair applies.
    """

    name = "randomized_response"
    #: declared as the one-point range {1} (the pair has no other sensitivity)
    sensitivity: float = attrs.field(default=1.0, kw_only=True, validator=positive,
                                     metadata={"range": Range(1.0, 1.0)})
    p: float = parameter(Range(0.0, 1.0, lo_open=True, hi_open=True))
    neighbouring: Neighbouring = attrs.field(default=Neighbouring.REPLACE_ONE, kw_only=True,
                                             converter=as_neighbouring)

    def __attrs_post_init__(self):
        if self.sensitivity != 1:
            raise ValueError(f"randomized_response: sensitivity must be 1, got {self.sensitivity}")

    def pair(self) -> LawPair:
        p = float(self.p)
        pair = discrete_pair(np.array([p, 1 - p]), np.array([1 - p, p]), f"RR(p={p:g})")
        return _RRPair(pair.upper, pair.lower, pair.label, p, symmetric=True)


@attrs.frozen(eq=False)
class _RRPair(LawPair):
    p: float = 0.5

    def _cgf(self, t, direction):
        return rr_cgf(self.p, t)


@hookimpl
def accounting_register_mechanisms(register):
    register(RandomizedResponse)

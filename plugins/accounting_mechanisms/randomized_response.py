"""Randomized response: report the true bit with probability p, else its flip.

The pair is ((p, 1 − p), (1 − p, p)) on {0, 1}: the loss is ±log(p/(1−p)), exact.
Neighbouring inputs differ in the one bit (replace-one on that record); the
sensitivity parameter is not used (it must be 1).
RDP in closed form (Mironov 2017, Table II):
D_α = log[p^α(1−p)^{1−α} + (1−p)^α p^{1−α}]/(α − 1).

The k-fold composition is exact and finite (``_self_compose``): with ε₀ = log(p/(1−p)),
the loss under P is (2J − k)ε₀ with J ~ Binomial(k, p), and the reverse direction has
the same law (the pair is symmetric). Every curve of the composed pair comes from that
law, the trade-off function from its atoms (exact at any FPR), its RDP as k times one.
"""

from __future__ import annotations

import math

import attrs
import numpy as np

from accounting.numerics.finite import law_from_log_masses
from accounting.numerics.loss import LossPMF
from accounting.pairs.finite import FiniteLawPair
from accounting.pairs.mechanism import (
    Mechanism,
    Neighbouring,
    Range,
    as_neighbouring,
    parameter,
    positive,
)
from accounting.pairs.pair import LawPair, Pair, discrete_pair
from accounting.registry.hookspecs import RegisterMechanism, hookimpl
from accounting.validation import check_count
from accounting.vocabulary import AnyArray, Direction, FloatArray

__all__ = ["RandomizedResponse", "rr_cgf", "rr_composed_law"]


#: relative error trusted of scipy's binomial pmf (measured against mpmath: ≤ 1.3e-12
#: up to k = 10⁵ at p = 0.6, 2.2e-13 at k = 10⁴; a tenfold margin)
BINOMIAL_MASS_ERROR = 1.3e-11


def rr_cgf(p: float, t: FloatArray) -> FloatArray:
    """K(t) = log[p^{1+t}(1−p)^{−t} + (1−p)^{1+t}p^{−t}] in log space."""
    t = np.asarray(t, dtype=float)
    lp, lq = np.log(p), np.log1p(-p)
    result: FloatArray = np.logaddexp((1 + t) * lp - t * lq, (1 + t) * lq - t * lp)
    return result


def rr_composed_law(p: float, count: int) -> LossPMF:
    """The law of the loss of ``count`` independent uses under P: atoms (2j − k)ε₀,
    ε₀ = log(p/(1−p)), with the binomial masses C(k, j)p^j(1−p)^{k−j} (scipy's binomial
    pmf, within 2e-12 relative up to k = 10⁵, and its log-pmf where the pmf
    underflows). Masses below float64's range
    are merged upwards onto the next atom kept, the largest loss kε₀ always kept
    (``numerics.finite.law_from_log_masses``: pessimistic, and ε(δ = 0) = k|ε₀|)."""
    from scipy.stats import binom  # heavy: only when a composition is asked for

    count = check_count("count", count)
    j = np.arange(count + 1)
    eps0 = math.log(p) - math.log1p(-p)
    # the pmf where it is a normal float (1e-12 relative at k = 10⁵; the log-pmf is
    # only 3e-11 there), the log-pmf where the pmf underflows
    pmf = binom.pmf(j, count, p)
    with np.errstate(divide="ignore"):
        log_masses = np.where(pmf >= np.finfo(float).tiny, np.log(pmf),
                              binom.logpmf(j, count, p))
    losses = (2.0 * j - count) * eps0
    if eps0 < 0:     # p < ½: the losses decrease in j
        losses, log_masses = losses[::-1], log_masses[::-1]
    if eps0 == 0:    # p = ½: one atom at 0
        return LossPMF(np.zeros(1), np.ones(1))
    return law_from_log_masses(losses, log_masses)


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
    #: p = ½ ignores the bit (no privacy cost); p ∈ {0, 1} (no randomisation) is
    #: refused: calibration searches p from inside the open interval
    p: float = parameter(Range(0.0, 1.0, lo_open=True, hi_open=True))
    neighbouring: Neighbouring = attrs.field(default=Neighbouring.REPLACE_ONE, kw_only=True,
                                             converter=as_neighbouring)

    def __attrs_post_init__(self) -> None:
        if self.sensitivity != 1:
            raise ValueError(f"randomized_response: sensitivity must be 1, got {self.sensitivity}")

    def sample(self, rng: np.random.Generator, shape: tuple[int, ...] | int
               ) -> tuple[AnyArray, AnyArray]:
        """The reported bit when the record's bit is 1 (x) and when it is 0 (y)."""
        p = float(self.p)
        return ((rng.random(shape) < p).astype(float),
                (rng.random(shape) >= p).astype(float))

    def pair(self) -> LawPair:
        p = float(self.p)
        pair = discrete_pair(np.array([p, 1 - p]), np.array([1 - p, p]), f"RR(p={p:g})")
        return _RRPair(pair.upper, pair.lower, pair.label, p=p, symmetric=True)


@attrs.frozen(eq=False)
class _RRPair(FiniteLawPair):
    """Randomized response used ``count`` times (its exact law; symmetric). Its losses
    (2j − k)ε₀ are one product each: within 2^−52·k|ε₀| of the exact multiples of ε₀
    (``loss_error``)."""

    p: float = 0.5

    def _cgf(self, t: FloatArray, direction: Direction) -> FloatArray:
        return self.count * rr_cgf(self.p, t)

    def sample(self, rng: np.random.Generator, shape: tuple[int, ...] | int
               ) -> tuple[AnyArray, AnyArray]:
        """The number of the ``count`` reports that agree with the bits of D: Binomial
        (count, p) under P, Binomial(count, 1 − p) under Q (a sufficient statistic)."""
        return (rng.binomial(self.count, self.p, size=shape).astype(float),
                rng.binomial(self.count, 1.0 - self.p, size=shape).astype(float))

    def _self_compose(self, count: int) -> Pair | None:
        total = self.count * check_count("count", count)
        law = rr_composed_law(self.p, total)
        lp, lq = math.log(self.p), math.log1p(-self.p)
        # ε₀ = log p − log(1 − p) is within 2^−52(|log p| + |log(1 − p)| + |ε₀|) of its
        # exact value, and each atom (2j − k)ε₀ one rounding more
        eps0 = abs(lp - lq)
        per_use = 2.0 ** -52 * (abs(lp) + abs(lq) + 2.0 * eps0)
        return _RRPair((law, law), (law, law), f"RR(p={self.p:g})^{total}", count=total,
                       p=self.p, symmetric=True, loss_error=total * per_use,
                       mass_error=BINOMIAL_MASS_ERROR)


@hookimpl
def accounting_register_mechanisms(register: RegisterMechanism) -> None:
    register(RandomizedResponse)

"""Permute-and-flip (McKenna, Sheldon, arXiv:2010.12603), accounted as pure ε-DP.

The mechanism visits the candidates in a uniformly random order and stops at
candidate r with probability exp(ε(u(x, r) − u*(x))/(2Δu)), u* the best utility; it
is ε-DP (ibid., Thm 1) and equals report-noisy-max with exponential noise (Ding et
al., arXiv:2105.07260).

It is *not* ε-BR. Two candidates with utility gap d ≥ 0 under x: the worse is picked
with probability ½e^{−εd/(2Δu)}; if each utility moves by Δu in opposite directions
under x' (gap d + 2Δu), the loss at the worse candidate is ε and at the better one
log((1 − ½e^{−εd/(2Δu)})/(1 − ½e^{−ε(d+2Δu)/(2Δu)})); at d = 0 the range is
ε + log(2 − e^{−ε}) > ε (checked in the tests). So the bounded-range composition of
Dong, Durfee, Rogers does not apply at parameter ε, and we account permute-and-flip
by what is proven: its dominating pair is ε-DP randomized response (the (ε, 0)
guarantee's pair, ``approx_dp``), composed exactly. Sound, not known to be tight.
"""

from __future__ import annotations

import attrs

from accounting.pairs.mechanism import Mechanism, Range, parameter
from accounting.pairs.pair import Pair, identical_pair
from accounting.registry.hookspecs import hookimpl

from .approx_dp import EPSILON, _one_sensitivity, approx_dp_pair

__all__ = ["PermuteAndFlip"]


@attrs.frozen
class PermuteAndFlip(Mechanism):
    """Permute-and-flip with parameter ``epsilon`` ∈ [0, 1e8] (coin probabilities
    exp(ε(u − u*)/(2Δu))): ε-DP, accounted as the (ε, 0) guarantee (module docstring;
    ε = 0 picks uniformly: no privacy cost). ``sensitivity`` is not used (it must be
    1); neighbouring: the relation Δu is taken over."""

    name = "permute_and_flip"
    sensitivity: float = attrs.field(default=1.0, kw_only=True, validator=_one_sensitivity,
                                     metadata={"range": Range(1.0, 1.0)})
    epsilon: float = parameter(EPSILON)

    def pair(self) -> Pair:
        if self.epsilon == 0:
            return identical_pair("permute-and-flip (ε = 0: no privacy loss)")
        return approx_dp_pair(float(self.epsilon), 0.0)


@hookimpl
def accounting_register_mechanisms(register):
    register(PermuteAndFlip)

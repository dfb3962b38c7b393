"""The exponential mechanism, accounted as an ε-bounded-range mechanism.

McSherry and Talwar's exponential mechanism picks outcome y with probability
∝ exp(ε·u(x, y)/(2Δu)), Δu = max over neighbours x, x' and outcomes y of
|u(x, y) − u(x', y)|. For neighbours the privacy loss is
L(y) = (ε/(2Δu))(u(x, y) − u(x', y)) − log(Z(x)/Z(x')), whose range over y is at most
(ε/(2Δu))·2Δu = ε: the mechanism is ε-BR (Dong, Durfee, Rogers, arXiv:1909.13830,
§2.1), hence ε-DP. With a *monotone* utility (u(x, y) − u(x', y) has the same sign
for every y, e.g. counts under add/remove) the range is at most ε/2: ε/2-BR.

It is accounted by the ε-BR guarantee (``bounded_range``): one use's profile is the
worst case over all ε-BR mechanisms, repeated uses compose as the PLD of the
dominating pair (adaptive, the default) or by DDR20's optimal non-adaptive
composition (``adaptive=False``: the k selections are fixed before any runs); the
RDP and zCDP curves are the ε²/8 zCDP bound (Cesar, Rogers, arXiv:2004.07223) or
pure DP's, whichever is smaller. ε = 0 picks uniformly: no privacy cost.
"""

from __future__ import annotations

import attrs

from accounting.pairs.mechanism import Mechanism, Range, parameter
from accounting.pairs.pair import Pair
from accounting.registry.hookspecs import RegisterMechanism, hookimpl

from .approx_dp import one_sensitivity
from .bounded_range import EPSILON, adaptive_field, bounded_range_pair, check_boolean

__all__ = ["ExponentialMechanism"]


@attrs.frozen
class ExponentialMechanism(Mechanism):
    """The exponential mechanism with weights exp(ε·u/(2Δu)) (module docstring).

    ``epsilon`` ∈ [0, 1e8]: the ε of the weights, the utility's sensitivity Δu
    entering through them (``sensitivity`` is not used; it must be 1).
    ``monotone`` (default False): the utility moves in one direction between
    neighbours, which halves the BR parameter. ``adaptive`` (default True): see
    ``bounded_range``. Neighbouring: the relation Δu is taken over.
    """

    name = "exponential_mechanism"
    sensitivity: float = attrs.field(default=1.0, kw_only=True, validator=one_sensitivity,
                                     metadata={"range": Range(1.0, 1.0)})
    epsilon: float = parameter(EPSILON)
    monotone: bool = attrs.field(default=False, kw_only=True, validator=check_boolean)
    adaptive: bool = adaptive_field()

    @property
    def br_epsilon(self) -> float:
        """The BR parameter: ε, or ε/2 for a monotone utility."""
        return float(self.epsilon) / (2.0 if self.monotone else 1.0)

    def pair(self) -> Pair:
        return bounded_range_pair(self.br_epsilon, self.adaptive, "exponential mechanism")


@hookimpl
def accounting_register_mechanisms(register: RegisterMechanism) -> None:
    register(ExponentialMechanism)

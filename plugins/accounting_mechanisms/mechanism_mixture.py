"""A mixture of mechanisms: run mechanism i with probability w_i.

With (P_i, Q_i) the dominating pair of mechanism i, the mixture that also releases
which mechanism ran has the pair (Σ_i w_i P_i ⊗ 1_i, Σ_i w_i Q_i ⊗ 1_i) on the
disjoint union of the outputs; the mixture that hides the index is a post-processing
of it, so this pair dominates both (and is exact for the first). Its privacy loss on
branch i is branch i's loss, so every quantity is the w-average of the branches'
(conditioning on the revealed index; the hockey-stick divergence of a disjoint
union is the weighted sum of the parts', Balle, Barthe, Gaboardi 2018,
arXiv:1807.01647, whose subsampling analysis decomposes mixtures the same way):

  δ(ε) = Σ_i w_i δ_i(ε)   (each direction; bounds average to bounds),
  e^{K(t)} = Σ_i w_i e^{K_i(t)}   (the Rényi moments average),

and ρ* ≤ max_i ρ_i (e^{K} ≤ max_i e^{K_i}). A branch that never runs is left out
(probabilities are > 0); one non-private branch (δ_i ≡ 1) makes δ(ε) ≥ w_i.

The branches are nested mechanisms (like ``poisson_subsampled``'s ``base``): they
must all declare the neighbouring relation the mixture is accounted under.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import attrs
import numpy as np

from accounting.pairs.mechanism import (
    Mechanism,
    Neighbouring,
    Range,
    as_neighbouring,
    probabilities_for,
)
from accounting.pairs.pair import Pair, not_provided
from accounting.registry.hookspecs import RegisterMechanism, hookimpl
from accounting.vocabulary import Direction, Exactness, FloatArray

from .approx_dp import entries_in, one_sensitivity, scalar_or_tuple

if TYPE_CHECKING:
    from accounting.registry.registry import Registry

__all__ = ["MechanismMixture", "MixturePair"]

#: each branch probability in (0, 1] (a branch of probability 0 is left out)
PROBABILITY = Range(0.0, 1.0, lo_open=True)
#: how far the probabilities may sum from 1 before they are refused (then normalised)


@attrs.frozen
class MixturePair(Pair):
    """The index-revealing mixture Σ_i w_i (P_i, Q_i) of ``pairs`` with ``weights``."""

    pairs: tuple[Pair, ...]
    weights: tuple[float, ...]

    @property
    def exact(self) -> bool:  # type: ignore[override]
        return all(p.exact for p in self.pairs)

    @property
    def symmetric(self) -> bool:  # type: ignore[override]
        return all(p.symmetric for p in self.pairs)

    def _live(self) -> list[tuple[float, Pair]]:
        return [(w, p) for w, p in zip(self.weights, self.pairs) if w > 0]

    def _average(self, values: Iterable[tuple[float, FloatArray]]) -> FloatArray:
        total: FloatArray = np.zeros(())
        for w, v in values:
            total = total + w * np.asarray(v, dtype=float)
        return total

    def _profile(self, eps: FloatArray, direction: Direction) -> FloatArray:
        return np.clip(self._average((w, p._profile(eps, direction)) for w, p in self._live()),
                       0.0, 1.0)

    def _profile_lower(self, eps: FloatArray, direction: Direction) -> FloatArray:
        return np.clip(self._average((w, p._profile_lower(eps, direction))
                                     for w, p in self._live()), 0.0, 1.0)

    def provides(self, primitive: str) -> bool:
        """A Rényi moment of the mixture needs that moment of every branch."""
        if primitive in ("cgf", "cgf_lower"):
            return all(p.provides(primitive) for _, p in self._live())
        return super().provides(primitive)

    def _cgfs(self, t: FloatArray, direction: Direction, lower: bool) -> list[FloatArray]:
        name = "cgf_lower" if lower else "cgf"
        if not self.provides(name):
            raise not_provided(self, name)
        return [np.log(w) + np.asarray(p.cgf_lower(t, direction) if lower
                                       else p._cgf(t, direction), dtype=float)
                for w, p in self._live()]

    def _cgf(self, t: FloatArray, direction: Direction) -> FloatArray:
        result: FloatArray = np.logaddexp.reduce(np.stack(self._cgfs(t, direction, lower=False)), axis=0)
        return result

    def cgf_lower(self, t: FloatArray, direction: Direction) -> FloatArray:
        result: FloatArray = np.logaddexp.reduce(np.stack(self._cgfs(t, direction, lower=True)), axis=0)
        return result

    def cgf_exactness(self) -> Exactness:
        labels = [p.cgf_exactness() for _, p in self._live()]
        for worst in (Exactness.NUMERICAL, Exactness.UPPER):
            if worst in labels:
                return worst
        return Exactness.EXACT

    def rho_bound(self, direction: Direction) -> float | None:
        rhos = []
        for _, p in self._live():
            r = p._rho(direction)
            r = p.rho_bound(direction) if r is None else r
            if r is None:
                return None
            rhos.append(r)
        return max(rhos)

    def describe(self) -> str:
        return " ⊕ ".join(f"{w:g}·{p.describe()}" for w, p in zip(self.weights, self.pairs))


def _mechanisms(value: Any) -> tuple[Mechanism, ...]:
    items = (value,) if isinstance(value, Mechanism) else tuple(value)
    for i, m in enumerate(items):
        if not isinstance(m, Mechanism):
            raise TypeError(f"mechanisms[{i}] must be a Mechanism, got {type(m).__name__}")
    if not items:
        raise ValueError("mechanisms must have at least one entry")
    return items


# the probability vector's converter is a named function (not scalar_or_tuple(...) calls in
# the field) so that mypy's attrs plugin reads the constructor's argument types
def _probs(value: Any) -> tuple[float, ...]:
    return scalar_or_tuple("probs")(value)


@attrs.frozen
class MechanismMixture(Mechanism):
    """Runs ``mechanisms[i]`` with probability ``probs[i]`` (probabilities > 0 summing
    to 1 within 1e-9, then normalised exactly); see the module docstring.

    ``neighbouring`` must be the relation every branch declares (add/remove by
    default). ``sensitivity`` is not used (1): each branch has its own.
    """

    name = "mechanism_mixture"
    sensitivity: float = attrs.field(default=1.0, kw_only=True, validator=one_sensitivity,
                                     metadata={"range": Range(1.0, 1.0)})
    mechanisms: tuple[Mechanism, ...] = attrs.field(converter=_mechanisms)
    probs: tuple[float, ...] = attrs.field(converter=_probs,
                               validator=[entries_in(PROBABILITY),
                                          probabilities_for("mechanisms")],
                               metadata={"range": PROBABILITY})
    neighbouring: Neighbouring = attrs.field(default=Neighbouring.ADD_REMOVE, kw_only=True,
                                             converter=as_neighbouring)

    def __attrs_post_init__(self) -> None:
        for i, m in enumerate(self.mechanisms):
            if m.neighbouring is not self.neighbouring:
                raise ValueError(f"mechanisms[{i}] ({type(m).__name__}) declares "
                                 f"{m.neighbouring.value} neighbouring but the mixture is "
                                 f"accounted under {self.neighbouring.value}; pass "
                                 f"neighbouring={m.neighbouring.value!r} or rebuild the branch")

    def pair(self) -> MixturePair:
        return self.pair_in(None)

    def pair_in(self, registry: Registry | None = None) -> MixturePair:
        """The mixture of the components' pairs, each looked up in ``registry``."""
        total = math.fsum(self.probs)
        return MixturePair(tuple(m.pair_in(registry) for m in self.mechanisms),
                           tuple(w / total for w in self.probs))


@hookimpl
def accounting_register_mechanisms(register: RegisterMechanism) -> None:
    register(MechanismMixture)

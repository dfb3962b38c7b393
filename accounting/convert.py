"""The converter graph: registered edges ``source kind → target kind``, each labelled.

``convert(curve, Target)`` finds the best path — fewest lossy edges, then fewest
edges — among the converters of a registry (the core's own and every plugin's),
applies it, and records the path and its combined label in the result's
``provenance``. Chains whose labels contradict (an upper bound followed by a lower
bound) are never taken.
"""

from __future__ import annotations

import heapq
import itertools
from typing import TYPE_CHECKING, Any, Callable, Optional

import attrs

from .curve import Curve, Exactness

if TYPE_CHECKING:
    from .plugins import Registry

__all__ = ["Converter", "convert", "find_path"]


@attrs.frozen
class Converter:
    """One edge: ``func(curve, **options) -> target curve``."""

    source: type
    target: type
    func: Callable[..., Curve] = attrs.field(eq=False)
    exactness: Exactness
    name: str
    plugin: str = "core"

    def __call__(self, curve: Curve, **options: Any) -> Curve:
        out = self.func(curve, **options)
        if not isinstance(out, self.target):
            raise TypeError(f"converter {self.name} ({self.plugin}) returned "
                            f"{type(out).__name__}, not {self.target.__name__}")
        if self.exactness is Exactness.LOWER:
            # what a lower-bound edge computes is only a lower side; `Curve._side`
            # refuses upper-side (default) queries on a curve whose label is LOWER
            out = attrs.evolve(out, lower=out.upper)
        return attrs.evolve(out, provenance=curve.provenance.then(self.name, self.exactness))


def find_path(converters: list[Converter], source: type, target: type,
              start: Exactness = Exactness.EXACT,
              allow_lower: bool = False) -> Optional[list[Converter]]:
    """Cheapest valid path from ``source`` to ``target`` (Dijkstra over (kind, label)).

    Lower-bound edges are taken only with ``allow_lower``: by default a conversion
    never trades a sound answer for an optimistic one.
    """
    if source is target:
        return []
    counter = itertools.count()
    heap: list = [((0, 0), next(counter), source, start, [])]
    seen: set = set()
    while heap:
        cost, _, kind, label, path = heapq.heappop(heap)
        if kind is target:
            return path
        if (kind, label) in seen:
            continue
        seen.add((kind, label))
        for edge in converters:
            if not issubclass(kind, edge.source):
                continue
            if edge.exactness is Exactness.LOWER and not allow_lower:
                continue
            combined = label.then(edge.exactness)
            if combined is None:
                continue
            lossy = 0 if edge.exactness is Exactness.EXACT else 1
            heapq.heappush(heap, ((cost[0] + lossy, cost[1] + 1), next(counter),
                                  edge.target, combined, path + [edge]))
    return None


def convert(curve: Curve, target: type, *, registry: Optional["Registry"] = None,
            allow_lower: bool = False, **options: Any) -> Curve:
    """Convert ``curve`` to the kind ``target`` along the best registered path
    (lower-bound edges only with ``allow_lower``)."""
    if not isinstance(curve, Curve):
        raise TypeError(f"expected a curve, got {type(curve).__name__}")
    if not (isinstance(target, type) and issubclass(target, Curve)):
        raise TypeError(f"target must be a curve class such as PLD or RDP, got {target!r}")
    if isinstance(curve, target):
        return curve
    if registry is None:
        from .plugins import default_registry
        registry = default_registry()
    path = find_path(registry.converters, type(curve), target, curve.provenance.exactness,
                     allow_lower or curve.provenance.exactness is Exactness.LOWER)
    if path is None:
        raise ValueError(f"no converter path from {type(curve).__name__} to {target.__name__} "
                         f"(starting from a {curve.provenance.exactness.value})")
    for edge in path:
        curve = edge(curve, **options)
    return curve

"""The converter graph: edges ``source kind → target kind``, each labelled.

The edges (``edges(registry)``) are the core's own (``converters.CONVERTERS``) and
those plugins registered on a registry; a plugin edge named like a core one is
refused (recorded in ``registry.errors`` naming its plugin). ``convert(curve,
Target)`` finds the best path — fewest lossy edges, then fewest plugin edges, then
fewest edges — among them, applies it, and records the path and its combined label
in the result's ``provenance``. Chains
whose labels contradict (an upper bound followed by a lower bound) are never taken.

Precedence (a plugin edge never silently replaces a built-in path):

* the search runs first over the **built-in** edges (the core's and those of the
  plugins shipped with this distribution); third-party edges are considered only
  when no built-in path exists, and then built-in edges still win every tie;
* ``via="edge name"`` (or a tuple of names) asks for a path through the named
  edges: that is how a user opts into a third-party shortcut where a built-in path
  exists.

Every edge's output is checked (``check_curve``): it must be a curve of the target
kind; a third-party edge's output is also probed at a few points (no NaN, δ and β
in [0, 1], monotone where the curve must be). A third-party edge that raises or
fails the check is recorded in ``registry.errors`` naming its plugin (with a
warning) and the search is run again without it, which falls back to the built-in
route; a failing built-in edge raises.
"""

from __future__ import annotations

import heapq
import inspect
import itertools
import warnings
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import attrs
import numpy as np

from accounting.curves.converters import CONVERTERS, HOME_KINDS
from accounting.curves.curve import Curve
from accounting.curves.pld import PLD
from accounting.curves.profile import PrivacyProfile
from accounting.curves.rdp import RDP
from accounting.curves.tradeoff import TradeOff
from accounting.curves.zcdp import ZCDP
from accounting.registry.registry import default_registry, plugin_code, reserve
from accounting.vocabulary import Exactness

if TYPE_CHECKING:
    from accounting.registry.registry import Registry

__all__ = ["Converter", "ConverterError", "CORE", "edges", "home_kind", "convert", "find_path",
           "check_curve"]


class ConverterError(RuntimeError):
    """A converter returned something that is not a valid curve of its target kind."""

    def __init__(self, converter: Converter, message: str):
        super().__init__(f"converter {converter.name!r} (plugin {converter.plugin!r}) "
                         f"{message}")
        self.converter = converter
        self.detail = f"converter {converter.name!r} {message}"


@attrs.frozen
class Converter:
    """One edge: ``func(curve, **options) -> target curve``.

    ``builtin`` marks the core's edges and those of this distribution's plugins
    (by default: those of the plugin ``"core"``); see the module docstring for what
    it changes.
    """

    source: type
    target: type
    func: Callable[..., Curve] = attrs.field(eq=False)
    exactness: Exactness
    name: str
    plugin: str = "core"
    builtin: bool = attrs.field(kw_only=True,
                                default=attrs.Factory(lambda self: self.plugin == "core",
                                                      takes_self=True))

    @property
    def options(self) -> frozenset[str] | None:
        """The keyword options ``func`` takes by name, or None when it takes any
        (``**options``: it is then responsible for refusing those it does not know,
        as the core's edges do with ``converters.check_options``)."""
        try:
            params = inspect.signature(self.func).parameters.values()
        except (TypeError, ValueError):   # no signature to inspect
            return None
        if any(p.kind is p.VAR_KEYWORD for p in params):
            return None
        named = [p for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
        return frozenset(p.name for p in named[1:] if p.kind is p.POSITIONAL_OR_KEYWORD) | \
            frozenset(p.name for p in named if p.kind is p.KEYWORD_ONLY)

    def __call__(self, curve: Curve, **options: Any) -> Curve:
        if self.builtin:
            out = self.func(curve, **options)
        else:
            try:
                with plugin_code():
                    out = self.func(curve, **options)
            except KeyboardInterrupt:
                raise
            except BaseException as exc:  # a plugin's failure, whatever it is
                raise ConverterError(self, f"raised {type(exc).__name__}: "
                                           f"{' '.join(str(exc).split())}") from exc
        problem = check_curve(out, self.target, probe=not self.builtin)
        if problem is not None:
            raise ConverterError(self, f"labelled {self.exactness.value} returned {problem}")
        if self.exactness is Exactness.LOWER:
            # what a lower-bound edge computes is only a lower side; `Curve._side`
            # refuses upper-side (default) queries on a curve whose label is LOWER
            # (the kind is the edge's target, known at run time only; every kind has a
            # provenance, and a LOWER edge's target has sides: ``check_curve`` above)
            out = attrs.evolve(out, lower=out.upper)  # type: ignore[call-arg]
        return attrs.evolve(out, provenance=curve.provenance.then(  # type: ignore[call-arg]
            self.name, self.exactness))


#: the core's own edges (``converters.CONVERTERS``), built in, of the plugin "core"
CORE: tuple[Converter, ...] = tuple(Converter(*row) for row in CONVERTERS)
# a plugin's converter named like one of these is refused when it registers
reserve("converter", (c.name for c in CORE), "core")


def edges(registry: Registry | None = None) -> list[Converter]:
    """Every edge of the graph: the core's, then those registered on ``registry``
    (default: the process-wide one). A registered edge named like a core edge is
    refused, once: dropped from the registry and recorded as an error of its plugin."""
    if registry is None:
        registry = default_registry()
    core = {c.name for c in CORE}
    out = list(CORE)
    for record in registry.converters:
        if record.name in core:
            registry.refuse(record, f"converter name {record.name!r} is already registered by "
                                    f"plugin 'core' (built-in); this registration is refused")
            continue
        source, target, func, exactness = record.value
        out.append(Converter(source, target, func, exactness, record.name, record.plugin,
                             builtin=record.builtin))
    return out


def home_kind(query: str) -> type:
    """The kind whose own formula answers ``query`` (``converters.HOME_KINDS``)."""
    return HOME_KINDS[query]


# ------------------------------------------------------------------ output checks
_PROBE_EPS = np.array([-1.0, 0.0, 0.25, 1.0, 3.0, 10.0])
_PROBE_DELTA = np.array([1e-9, 1e-5, 1e-2])
_PROBE_ALPHA_TO = np.array([0.0, 0.01, 0.25, 0.5, 0.75, 1.0])
_PROBE_ALPHA_RDP = np.array([1.25, 2.0, 8.0, 32.0])
_SLACK = 1e-9


def _probe(curve: object) -> str | None:
    """Query a curve at a few points through its public methods; what is wrong, if
    anything. Only the properties every valid curve has are checked."""
    kind = type(curve).__name__
    sides = [s for s in ("upper", "lower") if getattr(curve, s, None) is not None]
    # (duck-typed: any kind with φ and its error bound, a plugin's too)
    phi_of = getattr(curve, "phi", None)
    if not sides and callable(phi_of):
        # a characteristic function has no sides: φ(0) = 1 and |φ(t)| ≤ 1, to within
        # its own error bound
        t = np.array([0.0, 0.5, 2.0])
        for direction in ("forward", "backward"):
            phi = np.asarray(phi_of(t, direction))
            slack = np.asarray(getattr(curve, "error")(t, direction)) + _SLACK  # noqa: B009
            if abs(phi[0] - 1.0) > slack[0] or np.any(np.abs(phi) > 1.0 + slack):
                return f"a {kind} with φ(0) ≠ 1 or |φ| > 1 ({direction})"
        return None
    if "upper" not in sides:
        return f"a {kind} with no upper side"
    for bound in sides:
        for direction in ("forward", "backward"):
            where = f"({bound} side, {direction})"
            if isinstance(curve, (PrivacyProfile, PLD)):
                d = np.asarray(curve.delta(_PROBE_EPS, direction, bound), dtype=float)
                if np.any(np.isnan(d)) or np.any(d < -_SLACK) or np.any(d > 1 + _SLACK):
                    return f"a {kind} with δ(ε) = {d.tolist()} at ε = {_PROBE_EPS.tolist()} " \
                           f"{where}: not in [0, 1]"
                if np.any(np.diff(d) > _SLACK):
                    return f"a {kind} whose δ(ε) increases in ε {where}"
                e = np.asarray(curve.epsilon(_PROBE_DELTA, direction, bound), dtype=float)
                if np.any(np.isnan(e)) or np.any(e < 0):
                    return f"a {kind} with ε(δ) = {e.tolist()} {where}"
            elif isinstance(curve, TradeOff):
                b = np.asarray(curve.beta(_PROBE_ALPHA_TO, direction, bound), dtype=float)
                if np.any(np.isnan(b)) or np.any(b < -_SLACK) or np.any(b > 1 + _SLACK):
                    return f"a {kind} with β(α) = {b.tolist()} {where}: not in [0, 1]"
                if np.any(np.diff(b) > _SLACK):
                    return f"a {kind} whose β(α) increases in α {where}"
            elif isinstance(curve, RDP):
                r = np.asarray(curve.rdp(_PROBE_ALPHA_RDP, direction, bound), dtype=float)
                if np.any(np.isnan(r)) or np.any(r < -_SLACK):
                    return f"a {kind} with D_α = {r.tolist()} at α = " \
                           f"{_PROBE_ALPHA_RDP.tolist()} {where}"
                if np.any(np.diff(r) < -_SLACK * np.maximum(1.0, np.abs(r[1:]))):
                    return f"a {kind} whose D_α decreases in α {where}"
            elif isinstance(curve, ZCDP):
                rho = float(curve.rho(direction, bound))
                if np.isnan(rho) or rho < 0:
                    return f"a {kind} with ρ = {rho} {where}"
    return None


def check_curve(curve: Any, kind: type, *, probe: bool = True) -> str | None:
    """What is wrong with ``curve`` as a curve of ``kind``; None if nothing.

    Always: it is an instance of ``kind``. With ``probe``: it is queried at a few
    points (δ(ε) and ε(δ), β(α), D_α, ρ on each side it has and in each direction)
    and must give no NaN, δ and β in [0, 1], δ and β non-increasing, D_α ≥ 0 and
    non-decreasing; a ``validate()`` method of the curve, if it has one, is called
    too. A query that raises is reported as the problem.
    """
    if not isinstance(curve, kind):
        return f"{type(curve).__name__}, not {kind.__name__}"
    if not probe:
        return None
    try:
        validate = getattr(curve, "validate", None)
        if callable(validate):
            validate()
        with np.errstate(all="ignore"):
            return _probe(curve)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:
        return f"a {type(curve).__name__} that fails when queried " \
               f"({type(exc).__name__}: {' '.join(str(exc).split())})"


# ------------------------------------------------------------------ path search
def find_path(converters: list[Converter], source: type, target: type,
              start: Exactness = Exactness.EXACT,
              allow_lower: bool = False,
              required: Iterable[str] = ()) -> list[Converter] | None:
    """Cheapest valid path from ``source`` to ``target`` (Dijkstra over (kind, label)).

    Cost: lossy edges, then third-party (non-built-in) edges, then edges. Lower-bound
    edges are taken only with ``allow_lower``: by default a conversion never trades a
    sound answer for an optimistic one. ``required`` names edges the path must use.
    """
    required = tuple(dict.fromkeys(required))
    full = (1 << len(required)) - 1
    if source is target and not required:
        return []
    counter = itertools.count()
    heap: list[tuple[tuple[int, int, int], int, type, Exactness, int, list[Converter]]] = [
        ((0, 0, 0), next(counter), source, start, 0, [])]
    seen: set[tuple[type, Exactness, int]] = set()
    while heap:
        cost, _, kind, label, used, path = heapq.heappop(heap)
        if kind is target and used == full:
            return path
        if (kind, label, used) in seen:
            continue
        seen.add((kind, label, used))
        for edge in converters:
            if not issubclass(kind, edge.source):
                continue
            if edge.exactness is Exactness.LOWER and not allow_lower:
                continue
            combined = label.then(edge.exactness)
            if combined is None:
                continue
            mark = used
            if edge.name in required:
                mark |= 1 << required.index(edge.name)
            lossy = 0 if edge.exactness is Exactness.EXACT else 1
            foreign = 0 if edge.builtin else 1
            heapq.heappush(heap, ((cost[0] + lossy, cost[1] + foreign, cost[2] + 1),
                                  next(counter), edge.target, combined, mark, path + [edge]))
    return None


def _choose(converters: list[Converter], source: type, target: type, start: Exactness,
            allow_lower: bool, via: tuple[str, ...]) -> list[Converter] | None:
    """The precedence rule of the module docstring."""
    builtin = [c for c in converters if c.builtin]
    if via:
        chosen = [c for c in converters if c.builtin or c.name in via]
        return find_path(chosen, source, target, start, allow_lower, via)
    path = find_path(builtin, source, target, start, allow_lower)
    if path is None and len(builtin) < len(converters):
        path = find_path(converters, source, target, start, allow_lower)
    return path


def _via(via: str | Iterable[str] | None, converters: list[Converter]) -> tuple[str, ...]:
    if via is None:
        return ()
    names = (via,) if isinstance(via, str) else tuple(via)
    known = {c.name for c in converters}
    for name in names:
        if not isinstance(name, str) or name not in known:
            raise ValueError(f"via: unknown converter {name!r}; registered: "
                             f"{', '.join(sorted(known)) or 'none'}")
    return names


def convert(curve: Curve, target: type, *, registry: Registry | None = None,
            allow_lower: bool = False, via: str | Iterable[str] | None = None,
            **options: Any) -> Curve:
    """Convert ``curve`` to the kind ``target`` along the best registered path
    (lower-bound edges only with ``allow_lower``; third-party edges only where no
    built-in path exists, or through the edges named in ``via``)."""
    if not isinstance(curve, Curve):
        raise TypeError(f"expected a curve, got {type(curve).__name__}")
    if not (isinstance(target, type) and issubclass(target, Curve)):
        raise TypeError(f"target must be a curve class such as PLD or RDP, got {target!r}")
    if registry is None:
        registry = default_registry()
    known = edges(registry)
    via = _via(via, known)
    if isinstance(curve, target) and not via:
        if options:
            # nothing runs, so an option (a typo such as ``stpe``, or even ``step``)
            # would be silently ignored: refuse it
            names = ", ".join(repr(k) for k in sorted(options))
            raise TypeError(f"convert() got unexpected keyword argument"
                            f"{'s' if len(options) > 1 else ''} {names}; allowed here: none "
                            f"(the curve is already of kind {target.__name__}, so no "
                            f"converter runs and every option would be ignored)")
        return curve
    start = curve.provenance.exactness
    allow = allow_lower or start is Exactness.LOWER
    failed: list[str] = []
    while True:
        usable = [c for c in known if c.name not in failed]
        path = _choose(usable, type(curve), target, start, allow,
                       tuple(v for v in via if v not in failed))
        if path is None:
            why = f"; failed on the way: {', '.join(failed)}" if failed else ""
            through = f" through {', '.join(via)}" if via else ""
            raise ValueError(f"no converter path from {type(curve).__name__} to "
                             f"{target.__name__}{through} (starting from a {start.value}){why}")
        plan = _share_options(path, options)
        try:
            out = curve
            for edge, opts in plan:
                out = edge(out, **opts)
            return out
        except ConverterError as exc:
            edge = exc.converter
            if edge.builtin:
                raise
            failed.append(edge.name)
            _record(registry, edge.plugin, f"{exc.detail}; not used, the conversion is "
                                           f"done without it")


def _share_options(path: list[Converter], options: dict[str, Any]
                   ) -> list[tuple[Converter, dict[str, Any]]]:
    """Each edge of ``path`` with the options it takes: all of them for an edge taking
    ``**options`` (which refuses what it does not know), else those it names. An
    option that no edge of the path takes would be silently ignored: TypeError naming
    it and the options the path takes."""
    plan = [(edge, options if edge.options is None
             else {k: v for k, v in options.items() if k in edge.options}) for edge in path]
    if all(edge.options is not None for edge in path):
        known = frozenset[str]().union(*(edge.options or () for edge in path))
        unknown = sorted(set(options) - known)
        if unknown:
            names = ", ".join(repr(k) for k in unknown)
            raise TypeError(f"convert() got unexpected keyword argument"
                            f"{'s' if len(unknown) > 1 else ''} {names}; allowed on the path "
                            f"{' → '.join(e.name for e in path)}: "
                            f"{', '.join(sorted(known)) or 'none'}")
    return plan


def _record(registry: Registry, plugin: str, message: str) -> None:
    record = getattr(registry, "record_error", None)
    if callable(record):
        record(plugin, message)
    else:
        warnings.warn(f"plugin {plugin!r}: {message}", RuntimeWarning, stacklevel=3)

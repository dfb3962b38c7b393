"""A mechanism written down: ``MechanismSpec`` (its registered name and every parameter)
and ``Unwritten`` (a pair, or a mechanism with no written form, kept as it is).

A spec holds every parameter, defaults included, in the types a document holds them
(floats, ints, bools, strings, tuples of floats, nested specs), so equal mechanisms give
equal specs. Equality and hashing go by the canonical JSON of the spec (``key``, sorted
keys, no spaces); the hash is the first 8 bytes of its sha256, the same in every
process (``str`` hashing is salted).
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import attrs

from accounting.ledger.parameters import (
    build_mechanism,
    coerce_parameter,
    parameter_kind,
)
from accounting.pairs.mechanism import Mechanism, Neighbouring
from accounting.pairs.pair import Pair

if TYPE_CHECKING:
    from accounting.registry.registry import Registry

__all__ = ["MechanismSpec", "Unwritten", "stable_hash", "component"]

_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


def stable_hash(text: str) -> int:
    """A hash of ``text`` that is the same in every process (``str`` hashing is salted):
    the first 8 bytes of its sha256, as a signed integer."""
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big", signed=True)


def _describe_value(attribute: attrs.Attribute[Any], value: Any, where: str) -> Any:
    """A live parameter value as written in a document (and held by a spec): the same
    coercion as reading one, so a value reads back as it was written."""
    if parameter_kind(attribute) == "mechanism":
        return MechanismSpec.of(value)
    out = coerce_parameter(attribute, value, label=where)
    return out.value if isinstance(out, Neighbouring) else out


def _plain(value: Any) -> Any:
    """A spec value as plain JSON-ready data."""
    if isinstance(value, MechanismSpec):
        return value.to_dict()
    if isinstance(value, tuple):
        return list(value)
    return value


def _sorted_params(p: Any) -> tuple[tuple[str, Any], ...]:
    return tuple(sorted(dict(p).items() if isinstance(p, Mapping) else p))


def _key_of(spec: MechanismSpec) -> str:
    return json.dumps(spec.to_dict(), sort_keys=True, separators=(",", ":"), allow_nan=True)


def _hash_of(spec: MechanismSpec) -> int:
    return stable_hash(spec.key)


@attrs.frozen(eq=False, repr=False)
class MechanismSpec:
    """A mechanism written down: its registered ``name`` and every parameter it holds,
    ``params`` = ((name, value), …) sorted by name. Values are floats, ints, bools,
    strings (``neighbouring`` as ``"add_remove"``/``"replace_one"``), tuples of floats
    and nested ``MechanismSpec``s.

    Build one from a live mechanism (``of``) or by name (``build``): both hold every
    parameter, defaults included, so equal mechanisms give equal specs. Equality and
    hashing go by the canonical JSON (``key``, computed by its field's default when
    the spec is built); the hash is stable across processes.
    """

    name: str
    params: tuple[tuple[str, Any], ...] = attrs.field(converter=_sorted_params)
    _live: Mechanism | None = attrs.field(default=None, alias="live")
    key: str = attrs.field(init=False, default=attrs.Factory(_key_of, takes_self=True))
    _hash: int = attrs.field(init=False, repr=False,
                             default=attrs.Factory(_hash_of, takes_self=True))

    @classmethod
    def of(cls, mechanism: Mechanism) -> MechanismSpec:
        """The description of the live ``mechanism`` (TypeError if it has no registered
        name or a parameter a document cannot hold)."""
        if not isinstance(mechanism, Mechanism):
            raise TypeError(f"expected a Mechanism, got {type(mechanism).__name__}")
        kind = type(mechanism)
        name = getattr(kind, "name", "")
        if not isinstance(name, str) or not _NAME.match(name):
            raise TypeError(f"{kind.__name__} has no registered name (name = {name!r}), so "
                            f"it cannot be written down")
        params = tuple(sorted(
            (a.name, _describe_value(a, getattr(mechanism, a.name), f"{name}.{a.name}"))
            for a in kind.parameters().values()))
        return cls(name, params, live=mechanism)

    @classmethod
    def build(cls, name: str, registry: Registry | None = None, **params: Any) -> MechanismSpec:
        """The spec of mechanism ``name`` with ``params`` (checked; defaults filled in)."""
        return cls.of(build_mechanism(registry, name, params))

    def mechanism(self, registry: Registry | None = None) -> Mechanism:
        """The live mechanism: the one this spec was made from, else built by name through
        ``registry`` (default: the process's registry; remembered for the specs used
        most recently, since a spec read from a document is asked again and again)."""
        if self._live is not None:
            return self._live
        if registry is None:
            return _live_of(self)
        return _build(self, registry)

    def to_dict(self) -> dict[str, Any]:
        """``{"name": …, <every parameter>: …}``, plain data (what ``key`` is the
        canonical JSON of, and what a document holds for the mechanism)."""
        return {"name": self.name, **{k: _plain(v) for k, v in self.params}}

    def describe(self) -> str:
        def show(v: Any) -> str:
            if isinstance(v, MechanismSpec):
                return v.describe()
            if isinstance(v, float):
                return f"{v:.10g}"
            if isinstance(v, tuple):
                return "[" + ", ".join(show(x) for x in v) + "]"
            return str(v)
        return f"{self.name}(" + ", ".join(f"{k}={show(v)}" for k, v in self.params) + ")"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, MechanismSpec):
            return NotImplemented
        return self.key == other.key

    def __hash__(self) -> int:
        return self._hash

    def __repr__(self) -> str:
        return f"MechanismSpec({self.describe()})"


def _build(spec: MechanismSpec, registry: Registry | None) -> Mechanism:
    """The mechanism of a spec, built by name through ``registry``."""
    values = {k: (v.mechanism(registry) if isinstance(v, MechanismSpec) else v)
              for k, v in spec.params}
    return build_mechanism(registry, spec.name, values)


@functools.lru_cache(maxsize=1024)
def _live_of(spec: MechanismSpec) -> Mechanism:
    """``_build`` through the default registry, remembered for the specs used most
    recently (mechanisms are immutable values, so equal specs may share one; a given
    ``Registry`` is not hashable, so only the default one is remembered). Kept here
    rather than on the frozen spec, which is never changed once built."""
    return _build(spec, None)


@attrs.frozen(repr=False)
class Unwritten:
    """A composed ``Pair`` (or a mechanism that cannot be written down): usable in a
    ledger's computations, but a ledger holding one cannot be saved."""

    value: Any

    def describe(self) -> str:
        return self.value.describe() if hasattr(self.value, "describe") else repr(self.value)

    def __repr__(self) -> str:
        return f"Unwritten({self.describe()})"


@functools.lru_cache(maxsize=256)
def _spec_of(mechanism: Mechanism) -> MechanismSpec | Unwritten:
    """``MechanismSpec.of``, remembered for the mechanisms composed most recently (an
    accountant fed one step at a time describes the same mechanism again and again)."""
    try:
        return MechanismSpec.of(mechanism)
    except (TypeError, ValueError):   # no registered name or an unwritable parameter
        return Unwritten(mechanism)


def component(item: Any) -> MechanismSpec | Unwritten:
    """A ledger entry's component: a spec (a mechanism that can be written down, or a
    spec as given) or ``Unwritten`` (a pair, or a mechanism that cannot)."""
    if isinstance(item, (MechanismSpec, Unwritten)):
        return item
    if isinstance(item, Mechanism):
        try:
            return _spec_of(item)
        except TypeError:       # an unhashable parameter: nothing to remember it by
            return Unwritten(item)
    if isinstance(item, Pair):
        return Unwritten(item)
    raise TypeError(f"a ledger entry must be a Mechanism, a Pair or a MechanismSpec, "
                    f"got {type(item).__name__}")

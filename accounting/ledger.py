"""The ledger: a composition written down as one frozen, hashable value.

A ``Ledger`` is a multiset of mechanisms with counts. Each mechanism is named by its
registered name and *every* parameter it holds (defaults included), and may nest —
a subsampling wrapper's ``base`` is itself a mechanism description. Equal
compositions are equal ledgers: entries of one mechanism merge (their counts add),
and equality and hashing ignore the order of entries, so ``a + b == b + a`` and both
hash alike — in every process (``hash`` and ``digest()`` come from the canonical
JSON, sha256, not from Python's salted string hash). A ledger also remembers the
order in which its mechanisms first came: that order fixes the floating-point order
of the computation (``pair()``, an ``Accountant``) and is kept by its document, so
a reloaded ledger gives the same ε to the last bit. ``canonical()`` is the same
ledger in canonical order (by name, then by the canonical JSON of each mechanism).

Building one (the constructor API other modules and bridges use)::

    Ledger()                                    # empty
    Ledger([(mechanism, count), ...])           # Mechanism objects (or MechanismSpecs)
    Ledger.of(mechanism, count=1)               # one entry
    Ledger.from_mechanisms([m1, (m2, 5), ...])  # mechanisms, or (mechanism, count)
    Ledger.build("gaussian", 3, sigma=1.0)      # by registered name, through the registry
    a + b, a * n, n * a                         # compose, repeat

Reading one: ``entries`` ((component, count), …), ``count`` (total uses),
``len`` (distinct entries), ``mechanisms()`` ((live Mechanism or Pair, count), …),
``pair()`` (the ``ComposedPair``), ``describe()``.

A ``Pair`` (or a mechanism whose parameters cannot be written down) may be composed
too: it is kept as an ``Unwritten`` entry, used like any other, but a ledger holding
one cannot be saved — ``to_dict`` refuses it naming the entry.

Document (``to_dict``/``to_json``/``to_toml``; schema 1)::

    {"kind": "ledger", "schema": 1,
     "entries": [{"mechanism": {"name": "poisson_subsampled", "q": 0.01,
                                "base": {"name": "gaussian", "sigma": 1.1, ...}, ...},
                  "count": 1000}, ...]}

Reading a document (``from_dict``/``from_json``/``from_toml``) never unpickles and never
executes anything: every mechanism is looked up by name in a registry and built by
its own validated constructor. Unknown keys, unknown mechanisms, wrong parameters,
missing parameters that have no default, and missing or wrong counts (every entry
needs its ``count``, which is never taken as 1) are refused with a
``ValueError``/``TypeError`` whose message begins with the path inside the document,
e.g. ``entries[2].mechanism.base.sigma`` or ``entries[0].count: missing``.
Floats are written with Python's shortest round-trip ``repr`` (JSON and TOML alike),
so every parameter reads back bit for bit.

Compatibility promise (schema 1):

* A document records every parameter of every mechanism, defaults included, so its
  meaning never depends on a default that a later release might change.
* Every later release reads a schema-1 document as the same composition: the same
  mechanisms, parameters and counts. If the layout or the meaning of a parameter
  ever changes, the schema number is raised and schema-1 documents are still read
  as they were meant (converted on reading) or refused with an error naming the
  version — never silently reinterpreted.
* A mechanism may gain a parameter only with a default that reproduces its old
  behaviour; a document written before the parameter existed reads with that default.
* A document of a newer schema than the reader knows is refused (naming both
  versions), and so is any key the reader does not know: nothing is skipped silently.
* What is promised is the composition, not a number: an ε computed from it may move
  within the stated accuracy when the numerics improve (the PLD grid step is part of
  an accountant's document, see ``accounting.serialization``).
* A mechanism from a plugin is named by its registered name; reading the document
  needs that plugin installed (else: unknown mechanism, naming the path).
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import numbers
import re
import types
from typing import Any, Iterable, Iterator, Mapping, Optional, Sequence

import attrs

from accounting.pairs.composed import ComposedPair
from accounting.pairs.mechanism import Mechanism, Neighbouring, as_neighbouring
from accounting.registry.registry import default_registry
from accounting.pairs.pair import Pair
from accounting.validation import MAX_COUNT, check_count, check_depth

__all__ = ["Ledger", "MechanismSpec", "Unwritten", "SCHEMA", "MAX_MECHANISM_DEPTH",
           "parameter_kind", "coerce_parameter", "build_mechanism", "check_schema",
           "check_keys", "toml_dumps", "ordered_parameters", "parse_json"]

#: the document layout version written by this release (see the module docstring)
SCHEMA = 1
#: how deep mechanisms may nest (a wrapper's ``base`` = 1 level)
MAX_MECHANISM_DEPTH = 4

_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


# ------------------------------------------------------------------ parameters
def parameter_kind(attribute: attrs.Attribute) -> str:
    """How a mechanism parameter is written: ``"float"``, ``"int"``, ``"bool"``,
    ``"str"``, ``"neighbouring"``, ``"vector"`` (a sequence of numbers, annotated
    ``tuple``) or ``"mechanism"`` (another mechanism, e.g. the base of a subsampling
    wrapper: a table with its ``name`` and parameters) — from the attrs annotation,
    which may be a string under ``from __future__ import annotations``."""
    t = attribute.type
    name = t if isinstance(t, str) else getattr(t, "__name__", "")
    if attribute.name == "neighbouring" or t is Neighbouring or name == "Neighbouring":
        return "neighbouring"
    if t is Mechanism or name == "Mechanism":
        return "mechanism"
    if t is tuple or name == "tuple" or name.startswith("tuple["):
        return "vector"
    if t is bool or name == "bool":
        return "bool"
    if t is int or name == "int":
        return "int"
    if t is str or name == "str":
        return "str"
    return "float"


def _type_name(value: Any) -> str:
    return {bool: "boolean", str: "string", int: "integer", float: "number"}.get(
        type(value), type(value).__name__)


def coerce_parameter(attribute: attrs.Attribute, value: Any, registry: Any = None,
                     _depth: int = 0, *, label: Optional[str] = None,
                     path: Optional[str] = None) -> Any:
    """``value`` (from a document, TOML or the command line) as the parameter's type; a
    ``TypeError`` naming the parameter (``label``, default its name) if the type is
    wrong. Range checks are the mechanism's own (its attrs validators). A
    ``"mechanism"`` parameter is a table ``{name = "…", <its parameters>}`` built
    through ``registry`` (``path``: its path in a document, for messages)."""
    kind = parameter_kind(attribute)
    name = label or attribute.name
    if kind == "mechanism":
        if isinstance(value, Mechanism):
            return value
        if isinstance(value, MechanismSpec):
            return value.mechanism(registry)
        if not isinstance(value, Mapping) or "name" not in value:
            raise TypeError(f"{name} must be a table with the mechanism's name and "
                            f"parameters, e.g. {{name = \"gaussian\", sigma = 1.0}}, got "
                            f"{_type_name(value)} {value!r}")
        if _depth >= MAX_MECHANISM_DEPTH:
            raise ValueError(f"{name}: mechanisms nested more than {MAX_MECHANISM_DEPTH} deep "
                             f"are not accepted")
        inner = dict(value)
        inner_name = inner.pop("name")
        if path is not None and not isinstance(inner_name, str):
            raise TypeError(f"{path}.name must be a string, got {_type_name(inner_name)} "
                            f"{inner_name!r}")
        return build_mechanism(registry, inner_name, inner, path=path, _depth=_depth + 1)
    if kind == "vector":
        if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Sequence) \
                or not value:
            raise TypeError(f"{name} must be a non-empty list of numbers, got "
                            f"{_type_name(value)} {value!r}")
        for i, v in enumerate(value):
            if isinstance(v, bool) or not isinstance(v, numbers.Real):
                raise TypeError(f"{name}[{i}] must be a number, got {_type_name(v)} {v!r}")
        return tuple(float(v) for v in value)
    if kind == "neighbouring":
        if not isinstance(value, (str, Neighbouring)):
            raise TypeError(f"{name} must be 'add_remove' or 'replace_one', "
                            f"got {_type_name(value)} {value!r}")
        try:
            return as_neighbouring(value)
        except ValueError:
            raise ValueError(f"{name} must be 'add_remove' or 'replace_one', "
                             f"got {value!r}") from None
    if kind == "bool":
        if not isinstance(value, bool):
            raise TypeError(f"{name} must be true or false, got {_type_name(value)} {value!r}")
        return value
    if kind == "str":
        if not isinstance(value, str):
            raise TypeError(f"{name} must be a string, got {_type_name(value)} {value!r}")
        return value
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number, got {_type_name(value)} {value!r}")
    if kind == "int":
        if not isinstance(value, numbers.Integral):
            raise TypeError(f"{name} must be an integer, got {value!r}")
        return int(value)
    return float(value)


def ordered_parameters(params: Mapping[str, attrs.Attribute]) -> list[attrs.Attribute]:
    """A mechanism's own parameters first, then the shared keyword-only ones."""
    return sorted(params.values(), key=lambda a: a.kw_only)


def _check_ranges(cls: type, kwargs: Mapping[str, Any], path: str) -> None:
    """The declared ``Range`` of each given parameter, checked before the mechanism is
    built so that a refusal names the parameter's path in the document. Ranges
    relative to another field (``per``) see that field's given or default value."""
    known = cls.parameters()
    values = {n: a.default for n, a in known.items()
              if a.default is not attrs.NOTHING and not isinstance(a.default, attrs.Factory)}
    values.update(kwargs)
    view = types.SimpleNamespace(**values)
    ranges = cls.ranges()
    # plain ranges first: a relative range needs its unit (say sensitivity) checked
    for key in sorted(kwargs, key=lambda k: getattr(ranges.get(k), "per", None) is not None):
        rng, value = ranges.get(key), kwargs[key]
        if rng is None or isinstance(value, (Mechanism, Neighbouring, str, bool)):
            continue
        if isinstance(value, tuple):
            for i, v in enumerate(value):
                rng.check(f"{path}.{key}[{i}]", v, view)
        else:
            rng.check(f"{path}.{key}", value, view)


def build_mechanism(registry: Any, name: Any, params: Mapping[str, Any], *,
                    path: Optional[str] = None, _depth: int = 0) -> Mechanism:
    """The mechanism registered as ``name`` with ``params`` (values as read from a
    document, TOML or the command line), every parameter checked.

    Messages: with ``path`` (a position in a document, e.g. ``entries[0].mechanism``)
    each names the path of the offending value; without, they begin with the
    mechanism's name (how workload files and the command line report them).
    Raises ``ValueError`` (unknown mechanism or parameter, missing parameter, value
    out of range) or ``TypeError`` (wrong type).
    """
    registry = registry or default_registry()
    try:
        cls = registry.mechanism(name)
    except (TypeError, ValueError) as exc:
        if path is None:
            raise
        raise type(exc)(f"{path}.name: {exc}") from None
    where = name if path is None else f"{path} ({name})"
    known = cls.parameters()
    kwargs = {}
    for key, value in params.items():
        if key not in known:
            names = ", ".join(a.name for a in ordered_parameters(known))
            where_key = (f"{name}: unknown parameter {key!r}" if path is None else
                         f"{path}.{key}: unknown parameter {key!r} of {name!r}")
            raise ValueError(f"{where_key} (its parameters: {names})")
        label = key if path is None else f"{path}.{key}"
        try:
            kwargs[key] = coerce_parameter(known[key], value, registry, _depth, label=label,
                                           path=None if path is None else label)
        except (TypeError, ValueError) as exc:
            if path is not None:
                raise
            raise type(exc)(f"{name}: {exc}") from None
    missing = [a.name for a in ordered_parameters(known)
               if a.default is attrs.NOTHING and a.name not in kwargs]
    if missing:
        raise ValueError(f"{where}: missing parameter{'s' if len(missing) > 1 else ''} "
                         f"{', '.join(missing)}")
    if path is not None:
        _check_ranges(cls, kwargs, path)
    try:
        return cls(**kwargs)
    except (TypeError, ValueError) as exc:
        # prefixed once: a mechanism's own message may already begin with its name
        text = str(exc)
        if text.startswith(f"{name}: "):
            text = text[len(name) + 2:]
        raise type(exc)(f"{where}: {text}") from None


def _describe_value(attribute: attrs.Attribute, value: Any, where: str) -> Any:
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


# ------------------------------------------------------------------ components
@attrs.frozen(eq=False, repr=False)
class MechanismSpec:
    """A mechanism written down: its registered ``name`` and every parameter it holds,
    ``params`` = ((name, value), …) sorted by name. Values are floats, ints, bools,
    strings (``neighbouring`` as ``"add_remove"``/``"replace_one"``), tuples of floats
    and nested ``MechanismSpec``s.

    Build one from a live mechanism (``of``) or by name (``build``): both hold every
    parameter, defaults included, so equal mechanisms give equal specs. Equality and
    hashing go by the canonical JSON (``key``); the hash is stable across processes.
    """

    name: str
    params: tuple = attrs.field(converter=lambda p: tuple(sorted(
        dict(p).items() if isinstance(p, Mapping) else p)))
    _live: Optional[Mechanism] = attrs.field(default=None, alias="live")
    key: str = attrs.field(init=False)
    _hash: int = attrs.field(init=False, repr=False)

    def __attrs_post_init__(self) -> None:
        key = json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"), allow_nan=True)
        object.__setattr__(self, "key", key)
        object.__setattr__(self, "_hash", _stable_hash(key))

    @classmethod
    def of(cls, mechanism: Mechanism) -> "MechanismSpec":
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
    def build(cls, name: str, registry: Any = None, **params: Any) -> "MechanismSpec":
        """The spec of mechanism ``name`` with ``params`` (checked; defaults filled in)."""
        return cls.of(build_mechanism(registry, name, params))

    def mechanism(self, registry: Any = None) -> Mechanism:
        """The live mechanism: the one this spec was made from, else built by name through
        ``registry`` (default: the process's registry)."""
        if self._live is not None:
            return self._live
        values = {k: (v.mechanism(registry) if isinstance(v, MechanismSpec) else v)
                  for k, v in self.params}
        live = build_mechanism(registry, self.name, values)
        object.__setattr__(self, "_live", live)
        return live

    def to_dict(self) -> dict:
        """``{"name": …, <every parameter>: …}``, JSON-ready."""
        return {"name": self.name, **{k: _plain(v) for k, v in self.params}}

    def describe(self) -> str:
        def show(v):
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

    def __getstate__(self) -> dict:
        return {"name": self.name, "params": self.params, "_live": self._live}

    def __setstate__(self, state: dict) -> None:
        for k, v in state.items():
            object.__setattr__(self, k, v)
        self.__attrs_post_init__()


@attrs.frozen(repr=False)
class Unwritten:
    """A composed ``Pair`` (or a mechanism that cannot be written down): usable in a
    ledger's computations, but a ledger holding one cannot be saved."""

    value: Any

    def describe(self) -> str:
        return self.value.describe() if hasattr(self.value, "describe") else repr(self.value)

    def __repr__(self) -> str:
        return f"Unwritten({self.describe()})"


def _stable_hash(text: str) -> int:
    """A hash of ``text`` that is the same in every process (``str`` hashing is salted)."""
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big", signed=True)


@functools.lru_cache(maxsize=256)
def _spec_of(mechanism: Mechanism) -> "MechanismSpec | Unwritten":
    """``MechanismSpec.of``, remembered for the mechanisms composed most recently (an
    accountant fed one step at a time describes the same mechanism again and again)."""
    try:
        return MechanismSpec.of(mechanism)
    except (TypeError, ValueError):   # no registered name or an unwritable parameter
        return Unwritten(mechanism)


def _component(item: Any) -> "MechanismSpec | Unwritten":
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


# ---------------------------------------------------------------------- ledger
def _entries(value: Iterable) -> tuple:
    """Merge equal components (counts add), keeping the order each was first seen."""
    if isinstance(value, (str, bytes, Mapping)):
        raise TypeError(f"entries must be (mechanism, count) pairs, got {type(value).__name__}")
    merged: dict = {}
    for i, item in enumerate(value):
        if not (isinstance(item, tuple) and len(item) == 2):
            raise TypeError(f"entries[{i}] must be a (mechanism, count) pair, got {item!r:.80}")
        comp = _component(item[0])
        count = check_count(f"entries[{i}] count", item[1])
        total = merged.get(comp, 0) + count
        if total > MAX_COUNT:
            raise ValueError(f"entries[{i}]: the count of {comp.describe()} would reach "
                             f"{total:.6g}, beyond {MAX_COUNT} (2^53)")
        merged[comp] = total
    return tuple(merged.items())


@attrs.frozen(eq=False, repr=False)
class Ledger:
    """A composition: ((component, count), …), merged and in canonical order.

    See the module docstring for how to build, read, save and load one.
    """

    entries: tuple = attrs.field(default=(), converter=_entries)
    #: the canonical JSON, computed once (the hash and the digest need it)
    _canonical: Optional[str] = attrs.field(init=False, default=None, eq=False, repr=False)

    # ---------------------------------------------------------------- building
    @classmethod
    def of(cls, mechanism: "Mechanism | Pair | MechanismSpec", count: int = 1) -> "Ledger":
        """``count`` uses of ``mechanism``."""
        return cls(((mechanism, count),))

    @classmethod
    def from_mechanisms(cls, items: Iterable) -> "Ledger":
        """A ledger from mechanisms (each once) or (mechanism, count) pairs."""
        return cls(tuple(item if isinstance(item, tuple) else (item, 1) for item in items))

    @classmethod
    def build(cls, name: str, count: int = 1, *, registry: Any = None,
              **params: Any) -> "Ledger":
        """``count`` uses of the mechanism registered as ``name`` with ``params``."""
        return cls.of(build_mechanism(registry, name, params), count)

    def __add__(self, other: "Ledger") -> "Ledger":
        if not isinstance(other, Ledger):
            return NotImplemented
        # both hold valid components and counts already: merge without re-checking them
        merged = dict(self.entries)
        for comp, count in other.entries:
            total = merged.get(comp, 0) + count
            if total > MAX_COUNT:
                raise ValueError(f"the count of {comp.describe()} would reach {total:.6g}, "
                                 f"beyond {MAX_COUNT} (2^53)")
            merged[comp] = total
        out = object.__new__(Ledger)
        object.__setattr__(out, "entries", tuple(merged.items()))
        object.__setattr__(out, "_canonical", None)
        return out

    def __mul__(self, n: int) -> "Ledger":
        if isinstance(n, bool) or not isinstance(n, numbers.Integral):
            return NotImplemented
        n = check_count("n", n)
        return Ledger(tuple((c, k * n) for c, k in self.entries))

    __rmul__ = __mul__

    # ----------------------------------------------------------------- reading
    def __len__(self) -> int:
        return len(self.entries)

    def __iter__(self) -> Iterator:
        return iter(self.entries)

    def __bool__(self) -> bool:
        return bool(self.entries)

    @property
    def count(self) -> int:
        """Total number of uses."""
        return sum(c for _, c in self.entries)

    @property
    def writable(self) -> bool:
        """Whether every entry can be written down (no ``Unwritten`` entry)."""
        return all(isinstance(c, MechanismSpec) for c, _ in self.entries)

    def mechanisms(self, registry: Any = None) -> tuple:
        """((live Mechanism or Pair, count), …) in the ledger's order."""
        return tuple((c.value if isinstance(c, Unwritten) else c.mechanism(registry), n)
                     for c, n in self.entries)

    def pairs(self, registry: Any = None) -> tuple:
        """((Pair, count), …) in the ledger's order."""
        return tuple((m.pair() if isinstance(m, Mechanism) else m, n)
                     for m, n in self.mechanisms(registry))

    def pair(self, registry: Any = None):
        """The ``ComposedPair`` of the whole composition."""
        if not self.entries:
            raise ValueError("the ledger is empty: nothing to compose")
        return ComposedPair(self.pairs(registry))

    def describe(self) -> str:
        if not self.entries:
            return "(empty)"
        return " ⊗ ".join(c.describe() + (f" × {n}" if n != 1 else "")
                          for c, n in self.entries)

    def __repr__(self) -> str:
        text = self.describe()
        return f"Ledger({text if len(text) <= 200 else text[:197] + '...'})"

    def canonical(self) -> "Ledger":
        """The same composition with its entries in canonical order: described mechanisms
        by name, then by their canonical JSON; then unwritten ones in the order they came."""
        return _sorted(self)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Ledger):
            return NotImplemented
        return dict(self.entries) == dict(other.entries)

    def __hash__(self) -> int:
        if self.writable:
            return _stable_hash(self.canonical_json())
        return hash(frozenset(self.entries))

    # ----------------------------------------------------------- documents
    def _check_writable(self) -> None:
        for i, (c, _) in enumerate(self.entries):
            if isinstance(c, Unwritten):
                raise TypeError(f"entries[{i}].mechanism: {c.describe()} is a "
                                f"{type(c.value).__name__} with no written form (no "
                                f"registered name and parameters); compose registered "
                                f"mechanisms to save a ledger")

    def entries_dict(self) -> list:
        """The ``entries`` list of the document."""
        self._check_writable()
        return [{"mechanism": c.to_dict(), "count": n} for c, n in self.entries]

    def to_dict(self) -> dict:
        """The document: ``{"kind": "ledger", "schema": 1, "entries": […]}``."""
        return {"kind": "ledger", "schema": SCHEMA, "entries": self.entries_dict()}

    def canonical_json(self) -> str:
        """The canonical document as JSON (entries in canonical order, sorted keys, no
        spaces): the same text for equal ledgers; what ``digest`` hashes."""
        if self._canonical is None:
            text = json.dumps(self.canonical().to_dict(), sort_keys=True,
                              separators=(",", ":"), allow_nan=True)
            object.__setattr__(self, "_canonical", text)
        return self._canonical

    def digest(self) -> str:
        """sha256 (hex) of ``canonical_json()``: the same for equal ledgers in every
        process and on every machine."""
        return hashlib.sha256(self.canonical_json().encode()).hexdigest()

    def to_json(self, **kwargs: Any) -> str:
        """The document as JSON (``kwargs`` go to ``json.dumps``, e.g. ``indent=2``).
        A non-finite parameter (JSON has none) is refused naming its path."""
        doc = self.to_dict()
        _check_finite(doc, "")
        return json.dumps(doc, allow_nan=False, **kwargs)

    def to_toml(self) -> str:
        """The document as TOML (one ``[[entries]]`` table per entry)."""
        return toml_dumps(self.to_dict())

    @classmethod
    def from_dict(cls, data: Any, registry: Any = None) -> "Ledger":
        """The ledger of a document (see the module docstring); every problem is a
        ValueError/TypeError naming its path in the document."""
        check_depth(data, "the document")
        check_keys(data, "", ("kind", "schema", "entries"), required=("schema", "entries"))
        check_schema(data, "", "ledger")
        return cls.from_entries(data["entries"], "entries", registry)

    @classmethod
    def from_entries(cls, entries: Any, path: str = "entries",
                     registry: Any = None) -> "Ledger":
        """The ledger of a document's ``entries`` list found at ``path``: each entry a
        table with its ``mechanism`` and its ``count`` (an integer in [1, 2^53]), both
        required."""
        check_depth(entries, path)
        if not isinstance(entries, list):
            raise TypeError(f"{path} must be a list of entries, got {_type_name(entries)}")
        out = []
        for i, entry in enumerate(entries):
            where = f"{path}[{i}]"
            check_keys(entry, where, ("mechanism", "count"), required=("mechanism",))
            count = entry.get("count")
            if count is not None:
                if isinstance(count, bool) or not isinstance(count, int):
                    raise TypeError(f"{where}.count must be an integer, got "
                                    f"{_type_name(count)} {count!r}")
                if not 1 <= count <= MAX_COUNT:
                    raise ValueError(f"{where}.count must be in [1, 2^53], got {count}")
            doc = entry["mechanism"]
            mpath = f"{where}.mechanism"
            if not isinstance(doc, Mapping):
                raise TypeError(f"{mpath} must be a table with the mechanism's name and "
                                f"parameters, got {_type_name(doc)}")
            if "name" not in doc:
                raise ValueError(f"{mpath}.name: missing (a mechanism is written as its "
                                 f"registered name and parameters)")
            name = doc["name"]
            if not isinstance(name, str):
                raise TypeError(f"{mpath}.name must be a string, got {_type_name(name)} "
                                f"{name!r}")
            params = {k: v for k, v in doc.items() if k != "name"}
            mechanism = build_mechanism(registry, name, params, path=mpath)
            if count is None:
                # the count is part of the composition a document records (every entry
                # written has one): a missing count is refused, never read as 1
                raise ValueError(f"{where}.count: missing (every entry states how many "
                                 f"times its mechanism is used)")
            out.append((mechanism, count))
        return cls(tuple(out))

    @classmethod
    def from_json(cls, text: "str | bytes", registry: Any = None) -> "Ledger":
        return cls.from_dict(parse_json(text), registry)

    @classmethod
    def from_toml(cls, text: str, registry: Any = None) -> "Ledger":
        import tomllib
        if not isinstance(text, str):
            raise TypeError(f"from_toml needs a str, got {type(text).__name__}")
        check_depth(text, "the TOML document")
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ValueError(f"invalid TOML: {exc}") from None
        return cls.from_dict(data, registry)


def _sorted(ledger: Ledger) -> Ledger:
    order = {c: i for i, (c, _) in enumerate(ledger.entries)}
    out = object.__new__(Ledger)
    object.__setattr__(out, "entries", tuple(sorted(ledger.entries, key=lambda kv: (
        (0, kv[0].name, kv[0].key, 0) if isinstance(kv[0], MechanismSpec)
        else (1, "", "", order[kv[0]])))))
    object.__setattr__(out, "_canonical", None)
    return out


# ------------------------------------------------------------ document helpers
def check_keys(doc: Any, path: str, allowed: Sequence[str],
               required: Sequence[str] = ()) -> None:
    """``doc`` is a table with only ``allowed`` keys and every ``required`` one; else a
    TypeError/ValueError naming ``path`` (``""`` is the document itself)."""
    where = path or "the document"
    if not isinstance(doc, Mapping):
        raise TypeError(f"{where} must be a table (a JSON object), got {_type_name(doc)}")
    for key in doc:
        if key not in allowed:
            at = f"{path}.{key}" if path else str(key)
            raise ValueError(f"{at}: unknown key {key!r} (allowed: {', '.join(allowed)})")
    for key in required:
        if key not in doc:
            at = f"{path}.{key}" if path else key
            raise ValueError(f"{at}: missing")


def check_schema(doc: Mapping, path: str, kind: str, newest: int = SCHEMA) -> int:
    """The document's ``schema`` (an integer from 1 to ``newest``) and, if present, its
    ``kind`` (must be ``kind``); else an error naming the path."""
    at = f"{path}." if path else ""
    found = doc.get("kind", kind)
    if found != kind:
        raise ValueError(f"{at}kind: this is a {found!r} document, not a {kind!r} one")
    version = doc["schema"]
    if isinstance(version, bool) or not isinstance(version, int):
        raise TypeError(f"{at}schema must be an integer, got {_type_name(version)} {version!r}")
    if version < 1:
        raise ValueError(f"{at}schema must be at least 1, got {version}")
    if version > newest:
        raise ValueError(f"{at}schema: version {version} is newer than this release reads "
                         f"(up to {newest}); upgrade accounting-dp to read it")
    return version


def _check_finite(value: Any, path: str) -> None:
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{path or 'the document'}: {value!r} cannot be written as JSON "
                         f"(use TOML, which has inf and nan)")
    if isinstance(value, Mapping):
        for k, v in value.items():
            _check_finite(v, f"{path}.{k}" if path else str(k))
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            _check_finite(v, f"{path}[{i}]")


def parse_json(text: "str | bytes", source: str = "invalid JSON") -> Any:
    """JSON text parsed strictly: NaN/Infinity (not JSON), duplicate keys and nesting
    deeper than ``MAX_DEPTH`` (json recurses once per level) refused; ``source``
    names the text in that refusal."""
    if not isinstance(text, (str, bytes, bytearray)):
        raise TypeError(f"expected JSON text, got {type(text).__name__}")
    check_depth(text, source)

    def constant(name: str) -> Any:
        raise ValueError(f"invalid JSON: {name} is not a JSON number")

    def pairs(items: list) -> dict:
        out: dict = {}
        for k, v in items:
            if k in out:
                raise ValueError(f"invalid JSON: duplicate key {k!r}")
            out[k] = v
        return out
    try:
        return json.loads(text, parse_constant=constant, object_pairs_hook=pairs)
    except json.JSONDecodeError as exc:
        raise ValueError(f"invalid JSON: {exc}") from None


_json_loads = parse_json


# -------------------------------------------------------------------- TOML out
def _toml_str(s: str) -> str:
    out = ['"']
    for ch in s:
        o = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif o < 0x20 or o == 0x7F:
            out.append(f"\\u{o:04X}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _toml_key(k: str) -> str:
    return k if re.fullmatch(r"[A-Za-z0-9_-]+", k) else _toml_str(k)


def _toml_value(v: Any, path: str) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        if not -2 ** 63 <= v < 2 ** 63:
            raise ValueError(f"{path}: integer {v} does not fit TOML's 64 bits")
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)        # shortest round-trip form: reads back bit for bit
    if isinstance(v, str):
        return _toml_str(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_toml_value(x, f"{path}[{i}]") for i, x in enumerate(v)) + "]"
    if isinstance(v, Mapping):
        return "{" + ", ".join(f"{_toml_key(str(k))} = {_toml_value(x, f'{path}.{k}')}"
                               for k, x in v.items()) + "}"
    if v is None:
        raise ValueError(f"{path}: TOML has no null")
    raise TypeError(f"{path}: {type(v).__name__} cannot be written as TOML")


def toml_dumps(doc: Mapping[str, Any]) -> str:
    """A document as TOML: scalars and inline tables at the top, each list of tables as
    an array of tables (``[[entries]]``), nested tables inline."""
    head, tails = [], []
    for k, v in doc.items():
        if isinstance(v, list) and v and all(isinstance(x, Mapping) for x in v):
            for i, item in enumerate(v):
                lines = [f"[[{_toml_key(k)}]]"]
                lines += [f"{_toml_key(str(ik))} = {_toml_value(iv, f'{k}[{i}].{ik}')}"
                          for ik, iv in item.items()]
                tails.append("\n".join(lines))
        else:
            head.append(f"{_toml_key(k)} = {_toml_value(v, k)}")
    return "\n\n".join(["\n".join(head)] + tails) + "\n"

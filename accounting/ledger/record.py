"""The ``Ledger`` record: a composition written down as one frozen, hashable value.

See ``accounting.ledger`` for what a ledger is, how to build and read one, and its
document's compatibility promise. Its entries are ((component, count), …): components
are ``MechanismSpec``s (or ``Unwritten`` pairs), merged (equal ones' counts add) in
the order each first came; equality and hashing ignore that order.
"""

from __future__ import annotations

import functools
import hashlib
import json
import numbers
import warnings
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, TypeAlias

import attrs

from accounting.ledger.document import (
    SCHEMA,
    entries_document,
    ledger_document,
    read_entries,
    read_ledger_document,
)
from accounting.ledger.parameters import build_mechanism
from accounting.ledger.spec import MechanismSpec, Unwritten, component, stable_hash
from accounting.ledger.text import json_text, parse_json, parse_toml, toml_dumps
from accounting.pairs.composed import ComposedPair
from accounting.pairs.mechanism import Mechanism
from accounting.pairs.pair import Pair
from accounting.validation import MAX_COUNT, check_count

if TYPE_CHECKING:
    from accounting.registry.registry import Registry

__all__ = ["Ledger"]

#: a ledger's component: a mechanism written down, or a pair kept as it is
Component: TypeAlias = "MechanismSpec | Unwritten"
#: ((component, count), …), merged, in the order each component first came
Entries: TypeAlias = "tuple[tuple[MechanismSpec | Unwritten, int], ...]"


def _entries(value: Iterable[Any]) -> Entries:
    """Merge equal components (counts add), keeping the order each was first seen."""
    if isinstance(value, (str, bytes, Mapping)):
        raise TypeError(f"entries must be (mechanism, count) pairs, got {type(value).__name__}")
    merged: dict[Component, int] = {}
    for i, item in enumerate(value):
        if not (isinstance(item, tuple) and len(item) == 2):
            raise TypeError(f"entries[{i}] must be a (mechanism, count) pair, got {item!r:.80}")
        comp = component(item[0])
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

    entries: Entries = attrs.field(default=(), converter=_entries)

    # ---------------------------------------------------------------- building
    @classmethod
    def of(cls, mechanism: Mechanism | Pair | MechanismSpec, count: int = 1) -> Ledger:
        """``count`` uses of ``mechanism``."""
        return cls(((mechanism, count),))

    @classmethod
    def from_mechanisms(cls, items: Iterable[Any]) -> Ledger:
        """A ledger from mechanisms (each once) or (mechanism, count) pairs."""
        return cls(tuple(item if isinstance(item, tuple) else (item, 1) for item in items))

    @classmethod
    def build(cls, name: str, count: int = 1, *, registry: Registry | None = None,
              **params: Any) -> Ledger:
        """``count`` uses of the mechanism registered as ``name`` with ``params``."""
        return cls.of(build_mechanism(registry, name, params), count)

    def __add__(self, other: Ledger) -> Ledger:
        if not isinstance(other, Ledger):
            return NotImplemented
        merged = dict(self.entries)
        for comp, count in other.entries:
            total = merged.get(comp, 0) + count
            if total > MAX_COUNT:
                raise ValueError(f"the count of {comp.describe()} would reach {total:.6g}, "
                                 f"beyond {MAX_COUNT} (2^53)")
            merged[comp] = total
        return Ledger(tuple(merged.items()))

    def __mul__(self, n: int) -> Ledger:
        if isinstance(n, bool) or not isinstance(n, numbers.Integral):
            return NotImplemented
        n = check_count("n", n)
        return Ledger(tuple((c, k * n) for c, k in self.entries))

    __rmul__ = __mul__

    # ----------------------------------------------------------------- reading
    def __len__(self) -> int:
        return len(self.entries)

    def __iter__(self) -> Iterator[tuple[Component, int]]:
        return iter(self.entries)

    def __bool__(self) -> bool:
        return bool(self.entries)

    @property
    def count(self) -> int:
        """Total number of uses."""
        return sum(c for _, c in self.entries)

    def mechanisms(self, registry: Registry | None = None) -> tuple[tuple[Any, int], ...]:
        """((live Mechanism or Pair, count), …) in the ledger's order."""
        return tuple((c.value if isinstance(c, Unwritten) else c.mechanism(registry), n)
                     for c, n in self.entries)

    def pairs(self, registry: Registry | None = None) -> tuple[tuple[Pair, int], ...]:
        """((Pair, count), …) in the ledger's order."""
        return tuple((m.pair() if isinstance(m, Mechanism) else m, n)
                     for m, n in self.mechanisms(registry))

    def pair(self, registry: Registry | None = None) -> ComposedPair:
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

    def canonical(self) -> Ledger:
        """The same composition with its entries in canonical order: described mechanisms
        by name, then by their canonical JSON; then unwritten ones in the order they came."""
        return Ledger(_sorted(self.entries))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Ledger):
            return NotImplemented
        return dict(self.entries) == dict(other.entries)

    def __hash__(self) -> int:
        if self.writable:
            return stable_hash(self.canonical_json())
        return hash(frozenset(self.entries))

    # -------------------------------------------------------- identity
    @property
    def writable(self) -> bool:
        """Whether every entry can be written down (no ``Unwritten`` entry)."""
        return all(isinstance(c, MechanismSpec) for c, _ in self.entries)

    def canonical_json(self) -> str:
        """The canonical document as JSON (entries in canonical order, sorted keys, no
        spaces): the same text for equal ledgers; what ``digest`` hashes (remembered
        for the ledgers asked most recently, by their entries)."""
        if not self.writable:
            # refused naming the entry, before the entries are hashed for the memo
            entries_document(_sorted(self.entries))
        return _canonical_json(self.entries)

    def digest(self) -> str:
        """sha256 (hex) of ``canonical_json()``: the same for equal ledgers in every
        process and on every machine."""
        return hashlib.sha256(self.canonical_json().encode()).hexdigest()

    # ------------------------------------------ documents (deprecated routes)
    def entries_dict(self) -> list[dict[str, Any]]:
        """Deprecated: the ``entries`` list of the document
        (``accounting.ledger.document.entries_document``)."""
        _deprecated("Ledger.entries_dict()")
        return entries_document(self.entries)

    def to_dict(self) -> dict[str, Any]:
        """Deprecated: the document; use ``accounting.save`` (or
        ``accounting.serialization.to_document``)."""
        _deprecated("Ledger.to_dict()")
        return ledger_document(self)

    def to_json(self, **kwargs: Any) -> str:
        """Deprecated: the document as JSON; use ``accounting.save`` (or
        ``accounting.serialization.dumps``)."""
        _deprecated("Ledger.to_json()")
        return json_text(ledger_document(self), **kwargs)

    def to_toml(self) -> str:
        """Deprecated: the document as TOML; use ``accounting.save`` (or
        ``accounting.serialization.dumps(obj, format="toml")``)."""
        _deprecated("Ledger.to_toml()")
        return toml_dumps(ledger_document(self))

    @classmethod
    def from_dict(cls, data: Any, registry: Registry | None = None) -> Ledger:
        """Deprecated: use ``accounting.load`` (or
        ``accounting.serialization.from_document``)."""
        _deprecated("Ledger.from_dict()", "load")
        return cls(read_ledger_document(data, registry))

    @classmethod
    def from_entries(cls, entries: Any, path: str = "entries",
                     registry: Registry | None = None) -> Ledger:
        """Deprecated: the ledger of a document's ``entries`` list found at ``path``."""
        _deprecated("Ledger.from_entries()", "load")
        return cls(read_entries(entries, path, registry))

    @classmethod
    def from_json(cls, text: str | bytes, registry: Registry | None = None) -> Ledger:
        """Deprecated: use ``accounting.load`` (or ``accounting.serialization.loads``)."""
        _deprecated("Ledger.from_json()", "load")
        return cls(read_ledger_document(parse_json(text), registry))

    @classmethod
    def from_toml(cls, text: str, registry: Registry | None = None) -> Ledger:
        """Deprecated: use ``accounting.load`` (or
        ``accounting.serialization.loads(text, format="toml")``)."""
        _deprecated("Ledger.from_toml()", "load")
        return cls(read_ledger_document(parse_toml(text), registry))


def _deprecated(what: str, verb: str = "save") -> None:
    warnings.warn(f"{what} is deprecated and will be removed in the next release; use "
                  f"accounting.{verb} (or the functions of accounting.serialization)",
                  DeprecationWarning, stacklevel=3)


@functools.lru_cache(maxsize=256)
def _canonical_json(entries: Entries) -> str:
    """``Ledger.canonical_json`` by the ledger's entries (an accountant asks for the
    hash of the same ledger again and again; the record itself is never changed)."""
    ordered = _sorted(entries)
    return json.dumps({"kind": "ledger", "schema": SCHEMA,
                       "entries": entries_document(ordered)},
                      sort_keys=True, separators=(",", ":"), allow_nan=True)


def _sorted(entries: Entries) -> Entries:
    """Entries in canonical order: described mechanisms by name, then by their
    canonical JSON; then unwritten ones in the order they came."""
    order = {c: i for i, (c, _) in enumerate(entries)}
    return tuple(sorted(entries, key=lambda kv: (
        (0, kv[0].name, kv[0].key, 0) if isinstance(kv[0], MechanismSpec)
        else (1, "", "", order[kv[0]]))))

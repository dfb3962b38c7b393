"""The ledger's document (schema 1) and the checks every saved document shares.

Layout:

    {"kind": "ledger", "schema": 1,
     "entries": [{"mechanism": {"name": "poisson_subsampled", "q": 0.01,
                                "base": {"name": "gaussian", "sigma": 1.1, ...}, ...},
                  "count": 1000}, ...]}

Reading one (``ledger_from_document``) never unpickles and never executes anything:
every mechanism is looked up by name in a registry and built by its own validated
constructor. Unknown keys, unknown mechanisms, wrong parameters, missing parameters
that have no default, and missing or wrong counts (every entry needs its ``count``,
which is never taken as 1) are refused with a ``ValueError``/``TypeError`` whose
message begins with the path inside the document, e.g.
``entries[2].mechanism.base.sigma`` or ``entries[0].count: missing``.

``check_keys`` and ``check_schema`` are the checks of every kind of document (ledger,
accountant, curve, audit report; see ``accounting.serialization``, the one public
place to save and load). The compatibility promise is in ``accounting.ledger``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from accounting.ledger.parameters import build_mechanism, type_name
from accounting.ledger.spec import Unwritten
from accounting.pairs.mechanism import Mechanism
from accounting.validation import MAX_COUNT, check_depth

if TYPE_CHECKING:
    from accounting.registry.registry import Registry

__all__ = ["SCHEMA", "check_keys", "check_schema", "entries_document", "ledger_document",
           "read_ledger_document", "read_entries", "accountant_document",
           "read_accountant_document"]

#: (mechanism, count), … as read from a document, in its order (``Ledger(entries)``)
Entries = tuple[tuple[Mechanism, int], ...]

#: the document layout version written by this release (see ``accounting.ledger``)
SCHEMA = 1


def check_keys(doc: Any, path: str, allowed: Sequence[str],
               required: Sequence[str] = ()) -> None:
    """``doc`` is a table with only ``allowed`` keys and every ``required`` one; else a
    TypeError/ValueError naming ``path`` (``""`` is the document itself)."""
    where = path or "the document"
    if not isinstance(doc, Mapping):
        raise TypeError(f"{where} must be a table (a JSON object), got {type_name(doc)}")
    for key in doc:
        if key not in allowed:
            at = f"{path}.{key}" if path else str(key)
            raise ValueError(f"{at}: unknown key {key!r} (allowed: {', '.join(allowed)})")
    for key in required:
        if key not in doc:
            at = f"{path}.{key}" if path else key
            raise ValueError(f"{at}: missing")


def check_schema(doc: Mapping[str, Any], path: str, kind: str, newest: int = SCHEMA) -> int:
    """The document's ``schema`` (an integer from 1 to ``newest``) and, if present, its
    ``kind`` (must be ``kind``); else an error naming the path."""
    at = f"{path}." if path else ""
    found = doc.get("kind", kind)
    if found != kind:
        raise ValueError(f"{at}kind: this is a {found!r} document, not a {kind!r} one")
    version = doc["schema"]
    if isinstance(version, bool) or not isinstance(version, int):
        raise TypeError(f"{at}schema must be an integer, got {type_name(version)} {version!r}")
    if version < 1:
        raise ValueError(f"{at}schema must be at least 1, got {version}")
    if version > newest:
        raise ValueError(f"{at}schema: version {version} is newer than this release reads "
                         f"(up to {newest}); upgrade accounting-dp to read it")
    return version


# ------------------------------------------------------------------ writing
def entries_document(entries: Any) -> list[dict[str, Any]]:
    """The ``entries`` list of a ledger's document from its ``entries``, in their order
    (which fixes the floating-point order of the computation, so a reloaded ledger
    gives the same ε to the last bit); a TypeError naming the entry if one has no
    written form."""
    for i, (c, _) in enumerate(entries):
        if isinstance(c, Unwritten):
            raise TypeError(f"entries[{i}].mechanism: {c.describe()} is a "
                            f"{type(c.value).__name__} with no written form (no "
                            f"registered name and parameters); compose registered "
                            f"mechanisms to save a ledger")
    return [{"mechanism": c.to_dict(), "count": n} for c, n in entries]


def ledger_document(ledger: Any) -> dict[str, Any]:
    """The document of ``ledger``: ``{"kind": "ledger", "schema": 1, "entries": […]}``."""
    return {"kind": "ledger", "schema": SCHEMA, "entries": entries_document(ledger.entries)}


# ------------------------------------------------------------------ reading
def read_ledger_document(data: Any, registry: Registry | None = None) -> Entries:
    """The entries of a ledger's document (see the module docstring), for
    ``Ledger(entries)``; every problem is a ValueError/TypeError naming its path in
    the document."""
    check_depth(data, "the document")
    check_keys(data, "", ("kind", "schema", "entries"), required=("schema", "entries"))
    check_schema(data, "", "ledger")
    return read_entries(data["entries"], "entries", registry)


def read_entries(entries: Any, path: str = "entries", registry: Registry | None = None) -> Entries:
    """The entries of a document's ``entries`` list found at ``path``: each entry a
    table with its ``mechanism`` and its ``count`` (an integer in [1, 2^53]), both
    required."""
    check_depth(entries, path)
    if not isinstance(entries, list):
        raise TypeError(f"{path} must be a list of entries, got {type_name(entries)}")
    out = []
    for i, entry in enumerate(entries):
        where = f"{path}[{i}]"
        check_keys(entry, where, ("mechanism", "count"), required=("mechanism",))
        count = entry.get("count")
        if count is not None:
            if isinstance(count, bool) or not isinstance(count, int):
                raise TypeError(f"{where}.count must be an integer, got "
                                f"{type_name(count)} {count!r}")
            if not 1 <= count <= MAX_COUNT:
                raise ValueError(f"{where}.count must be in [1, 2^53], got {count}")
        doc = entry["mechanism"]
        mpath = f"{where}.mechanism"
        if not isinstance(doc, Mapping):
            raise TypeError(f"{mpath} must be a table with the mechanism's name and "
                            f"parameters, got {type_name(doc)}")
        if "name" not in doc:
            raise ValueError(f"{mpath}.name: missing (a mechanism is written as its "
                             f"registered name and parameters)")
        name = doc["name"]
        if not isinstance(name, str):
            raise TypeError(f"{mpath}.name must be a string, got {type_name(name)} "
                            f"{name!r}")
        params = {k: v for k, v in doc.items() if k != "name"}
        mechanism = build_mechanism(registry, name, params, path=mpath)
        if count is None:
            # the count is part of the composition a document records (every entry
            # written has one): a missing count is refused, never read as 1
            raise ValueError(f"{where}.count: missing (every entry states how many "
                             f"times its mechanism is used)")
        out.append((mechanism, count))
    return tuple(out)


# --------------------------------------------------------------- accountant
def accountant_document(step: float, ledger: Any) -> dict[str, Any]:
    """An accountant's document: ``{"kind": "accountant", "schema": 1, "step": …,
    "ledger": {"entries": […]}}``, everything that determines its answers (the grid
    step and the composition, not cached curves)."""
    return {"kind": "accountant", "schema": SCHEMA, "step": step,
            "ledger": {"entries": entries_document(ledger.entries)}}


def read_accountant_document(data: Any, registry: Registry | None = None) -> tuple[float, Entries]:
    """(step, entries) of an accountant's document; each problem is a ValueError or
    TypeError naming its path (``ledger.entries[0].mechanism.sigma``)."""
    check_depth(data, "the document")
    check_keys(data, "", ("kind", "schema", "step", "ledger"),
               required=("schema", "step", "ledger"))
    check_schema(data, "", "accountant")
    step = data["step"]
    if isinstance(step, bool) or not isinstance(step, (int, float)):
        raise TypeError(f"step must be a number, got {type(step).__name__} {step!r}")
    check_keys(data["ledger"], "ledger", ("entries",), required=("entries",))
    return float(step), read_entries(data["ledger"]["entries"], "ledger.entries", registry)

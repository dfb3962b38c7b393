"""Save and reload: versioned documents for ledgers, accountants, curves and audit reports.

The one way to save: ``save(obj, path)`` writes one document, as JSON or TOML (from
the suffix, ``.json``/``.toml``, or ``format=``), ``load(path)`` reads it back (also
``accounting.save``/``accounting.load``); ``to_document``/``from_document`` do the
same with dicts, ``dumps``/``loads`` with text. This module is the home of the
to/from-document code of every kind; the records carry none (their ``to_dict``/
``to_json``/``to_toml``/``from_*`` are deprecated routes here). ``Accountant.
state_dict``/``load_state_dict`` stay because PyTorch and the Opacus bridge ask for
those names. Pickling is possible only because Dask transports objects between
processes; it is not a way to save (a pickle executes code when read). Every document is a JSON object with ``kind`` (``"ledger"``, ``"accountant"``,
``"curve"`` or ``"audit_report"``) and ``schema`` (the layout version, 1 here; the
compatibility promise of ``accounting.ledger`` covers every kind).

* A ledger or an accountant is its ``to_dict`` (``accounting.ledger``,
  ``Accountant.to_dict``): mechanisms by registered name and every parameter, the
  counts, the grid step. Reloading gives the same ε to the last bit.
* A curve is written as its contents, exactly: a PLD as the arrays of its loss laws
  (grid offset and step, masses, mass at +∞, slack, certified largest loss) and its
  provenance; a zCDP curve as its ρ's; a privacy profile or trade-off curve built on
  loss laws as those laws and the vertices derived from them. Arrays are stored as
  base64 of their little-endian float64 (or int64, bool) bytes, so every bit comes
  back; scalar floats as JSON numbers (Python's round-trip ``repr``), with ±∞ and NaN
  as ``{"float": "inf"}`` etc. since JSON has none. A curve that holds Python
  functions — an RDP curve (its CGF is code), a profile given by a function — has
  no such form and is refused with a TypeError naming the part; save the ledger or
  the accountant that computes it instead.
* An audit report is written by its auditor plugin (``to_dict(exact=True)``) and read
  back through the auditor registered under the name the document records.

Reading never unpickles and never executes code: objects are rebuilt only from an
allow-list of the library's own classes (``CURVE_TYPES``; a plugin passes its own
list for its reports), by their validating constructors; mechanisms only through the
registry. Unknown kinds, keys, types and malformed arrays are refused with a
ValueError/TypeError naming the path inside the document (``curve.upper[0].masses``).
A file is read only if it is a regular file of at most ``MAX_DOCUMENT_BYTES``.
"""

from __future__ import annotations

import base64
import enum
import math
import os
import stat
import tempfile
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

import attrs
import numpy as np

from accounting.accountant import Accountant
from accounting.ledger import Ledger
from accounting.ledger.document import (
    SCHEMA,
    accountant_document,
    check_keys,
    check_schema,
    ledger_document,
    read_accountant_document,
    read_ledger_document,
)
from accounting.ledger.text import json_text, parse_json, parse_toml, toml_dumps
from accounting.validation import check_depth

if TYPE_CHECKING:
    from accounting.registry.registry import Registry

__all__ = ["save", "load", "dumps", "loads", "to_document", "from_document", "encode",
           "decode", "decode_report", "curve_types", "SavedReport", "MAX_DOCUMENT_BYTES", "read_text_file",
           "check_writable_file", "FORMATS", "parse_json", "toml_dumps", "json_text"]

#: a record class decoded by ``decode_report``
_T = TypeVar("_T")

#: the text formats of a saved document, by file suffix
FORMATS = {".json": "json", ".toml": "toml"}

#: the largest document read (bytes): a PLD of a few million grid points fits
MAX_DOCUMENT_BYTES = 1 << 30

_DTYPES = {"float64": np.float64, "int64": np.int64, "bool": np.bool_}
_SPECIAL = {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}
_TAGS = ("type", "ndarray", "float", "dict", "enum")


def curve_types() -> dict[str, type]:
    """The allow-list of classes a curve document may hold, by the name it is written
    under (curves, their sides, loss laws, provenance and its exactness label)."""
    from accounting.curves import profile, tradeoff
    from accounting.curves.curve import Provenance
    from accounting.curves.pld import PLD
    from accounting.curves.zcdp import ZCDP
    from accounting.numerics.loss import LossPMF
    from accounting.vocabulary import Exactness
    return {"PLD": PLD, "ZCDP": ZCDP, "PrivacyProfile": profile.PrivacyProfile,
            "LawSide": profile.LawSide, "TradeOff": tradeoff.TradeOff,
            "VertexSide": tradeoff.VertexSide, "OwnLaw": tradeoff._OwnLaw,
            "ReverseLaw": tradeoff._ReverseLaw, "LossPMF": LossPMF,
            "Provenance": Provenance, "Exactness": Exactness}


# ---------------------------------------------------------------------- encode
def _at(path: str, key: Any) -> str:
    return f"{path}.{key}" if path else str(key)


def encode(obj: Any, types: Mapping[str, type], path: str = "") -> Any:
    """``obj`` as JSON-ready data: numbers, strings, lists (tuples), ``{"dict": …}``,
    arrays ``{"ndarray": dtype, "shape": […], "base64": …}``, non-finite floats
    ``{"float": "inf"}``, enums ``{"enum": name, "value": …}`` and instances of the
    attrs classes of ``types`` ``{"type": name, <init fields>}``. Anything else is a
    TypeError naming ``path``."""
    if obj is None or isinstance(obj, (bool, str)):
        return obj
    if isinstance(obj, np.bool_):
        return bool(obj)
    if isinstance(obj, (int, np.integer)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        x = float(obj)
        if math.isfinite(x):
            return x
        return {"float": "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")}
    if isinstance(obj, np.ndarray):
        name = {np.dtype(v): k for k, v in _DTYPES.items()}.get(obj.dtype)
        if name is None:
            raise TypeError(f"{path or 'the object'}: an array of dtype {obj.dtype} cannot be "
                            f"saved (float64, int64 and bool can)")
        data = np.ascontiguousarray(obj, dtype=np.dtype(_DTYPES[name]).newbyteorder("<"))
        return {"ndarray": name, "shape": list(obj.shape),
                "base64": base64.b64encode(data.tobytes()).decode("ascii")}
    if isinstance(obj, (tuple, list)):
        return [encode(v, types, f"{path}[{i}]") for i, v in enumerate(obj)]
    if isinstance(obj, dict):
        for k in obj:
            if not isinstance(k, str):
                raise TypeError(f"{path}: a dict key must be a string to be saved, got {k!r}")
        return {"dict": {k: encode(v, types, _at(path, k)) for k, v in obj.items()}}
    names = {cls: name for name, cls in types.items()}
    name = names.get(type(obj))
    if isinstance(obj, enum.Enum) and name is not None:
        return {"enum": name, "value": encode(obj.value, types, _at(path, "value"))}
    if name is not None and attrs.has(type(obj)):
        out: dict[str, Any] = {"type": name}
        for a in attrs.fields(type(obj)):
            if a.init:
                key = a.alias or a.name
                if key in _TAGS:
                    raise TypeError(f"{path}: field {key!r} of {name} clashes with a tag")
                out[key] = encode(getattr(obj, a.name), types, _at(path, key))
        return out
    what = type(obj).__name__
    if callable(obj) or any(callable(getattr(obj, a.name, None))
                            for a in (attrs.fields(type(obj)) if attrs.has(type(obj)) else ())):
        raise TypeError(f"{path or 'the object'}: {what} holds Python functions (a closed "
                        f"form or a conversion), which have no saved form; save the ledger or "
                        f"the accountant that computes this curve instead")
    raise TypeError(f"{path or 'the object'}: {what} cannot be saved (allowed: numbers, "
                    f"strings, arrays and {', '.join(sorted(types))})")


# ---------------------------------------------------------------------- decode
def decode(doc: Any, types: Mapping[str, type], path: str = "") -> Any:
    """The inverse of ``encode``: lists come back as tuples, objects through their
    constructors (which validate them). Every problem names ``path``; a document
    nested more than ``validation.MAX_DEPTH`` deep is refused before it is read (the
    reading recurses once per level)."""
    check_depth(doc, path or "the document")
    return _decode(doc, types, path)


def decode_report(doc: Any, types: Mapping[str, type], cls: type[_T], what: str) -> _T:
    """An auditor's report of class ``cls`` from its exact form (``to_dict(exact=True)``),
    decoded with ``types``; the summary form (``to_dict()``: no ``"type"``, a
    ``"decision"``) is refused with a message saying what to reload, and anything that
    decodes to another class is a TypeError naming ``what``."""
    if isinstance(doc, dict) and "type" not in doc and "decision" in doc:
        raise ValueError("this is the summary form of a report (to_dict()); reload "
                         "one written with to_dict(exact=True) or accounting.save")
    report = decode(doc, types, "report")
    if not isinstance(report, cls):
        raise TypeError(f"report: expected {what}, got {type(report).__name__}")
    return report


def _decode(doc: Any, types: Mapping[str, type], path: str) -> Any:
    where = path or "the document"
    if doc is None or isinstance(doc, (bool, str, int, float)):
        return doc
    if isinstance(doc, list):
        return tuple(_decode(v, types, f"{path}[{i}]") for i, v in enumerate(doc))
    if not isinstance(doc, Mapping):
        raise TypeError(f"{where}: unexpected {type(doc).__name__}")
    tags = [t for t in _TAGS if t in doc]
    if len(tags) != 1:
        raise ValueError(f"{where}: a table must be tagged with exactly one of "
                         f"{', '.join(_TAGS)}, got keys {sorted(doc)}")
    tag = tags[0]
    if tag == "float":
        check_keys(doc, path, ("float",))
        if doc["float"] not in _SPECIAL:
            raise ValueError(f"{_at(path, 'float')} must be 'inf', '-inf' or 'nan', got "
                             f"{doc['float']!r}")
        return _SPECIAL[doc["float"]]
    if tag == "dict":
        check_keys(doc, path, ("dict",))
        inner = doc["dict"]
        if not isinstance(inner, Mapping):
            raise TypeError(f"{_at(path, 'dict')} must be a table")
        return {k: _decode(v, types, _at(path, k)) for k, v in inner.items()}
    if tag == "ndarray":
        return _decode_array(doc, path)
    name = doc[tag]
    cls = types.get(name) if isinstance(name, str) else None
    if cls is None:
        raise ValueError(f"{_at(path, tag)}: unknown {tag} {name!r} (known: "
                         f"{', '.join(sorted(types))})")
    if tag == "enum":
        check_keys(doc, path, ("enum", "value"), required=("value",))
        if not (isinstance(cls, type) and issubclass(cls, enum.Enum)):
            raise ValueError(f"{_at(path, 'enum')}: {name!r} is not an enumeration")
        try:
            return cls(doc["value"])
        except ValueError:
            raise ValueError(f"{_at(path, 'value')}: {doc['value']!r} is not a {name} "
                             f"(one of {', '.join(repr(e.value) for e in cls)})") from None
    if not attrs.has(cls):
        raise ValueError(f"{_at(path, 'type')}: {name!r} is not an object type")
    fields = {(a.alias or a.name): a for a in attrs.fields(cls) if a.init}
    check_keys(doc, path, ("type", *fields))
    kwargs = {k: _decode(v, types, _at(path, k)) for k, v in doc.items() if k != "type"}
    try:
        return cls(**kwargs)
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"{where} ({name}): {exc}") from None


def _decode_array(doc: Mapping[str, Any], path: str) -> np.ndarray:
    check_keys(doc, path, ("ndarray", "shape", "base64"), required=("shape", "base64"))
    name, shape, data = doc["ndarray"], doc["shape"], doc["base64"]
    if name not in _DTYPES:
        raise ValueError(f"{_at(path, 'ndarray')}: dtype must be one of "
                         f"{', '.join(_DTYPES)}, got {name!r}")
    if not isinstance(shape, list) or not all(
            isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in shape):
        raise TypeError(f"{_at(path, 'shape')} must be a list of non-negative integers, "
                        f"got {shape!r}")
    if not isinstance(data, str):
        raise TypeError(f"{_at(path, 'base64')} must be a string")
    try:
        raw = base64.b64decode(data.encode("ascii"), validate=True)
    except (ValueError, UnicodeEncodeError):
        raise ValueError(f"{_at(path, 'base64')}: not valid base64") from None
    dtype = np.dtype(_DTYPES[name]).newbyteorder("<")
    size = math.prod(shape)
    if len(raw) != size * dtype.itemsize:
        raise ValueError(f"{_at(path, 'base64')}: {len(raw)} bytes, but shape {shape} of "
                         f"{name} needs {size * dtype.itemsize}")
    return np.frombuffer(raw, dtype=dtype).astype(_DTYPES[name]).reshape(shape)


# ------------------------------------------------------------------- documents
@runtime_checkable
class SavedReport(Protocol):
    """What an auditor's report offers to be saved: the auditor's registered name,
    ``to_dict(exact=True)`` (a lossless form) and the class method ``from_dict``."""

    auditor: str

    def to_dict(self, exact: bool = False) -> dict[str, Any]: ...


def to_document(obj: Any) -> dict[str, Any]:
    """The versioned document of a Ledger, Accountant, curve or audit report."""
    from accounting.curves.curve import Curve
    if isinstance(obj, Ledger):
        return ledger_document(obj)
    if isinstance(obj, Accountant):
        return accountant_document(obj.step, obj.ledger)
    if isinstance(obj, Curve):
        return {"kind": "curve", "schema": SCHEMA, "curve": encode(obj, curve_types(), "curve")}
    if isinstance(obj, SavedReport) and isinstance(obj.auditor, str):
        return {"kind": "audit_report", "schema": SCHEMA, "auditor": obj.auditor,
                "report": obj.to_dict(exact=True)}
    raise TypeError(f"cannot save a {type(obj).__name__}: save a Ledger, an Accountant, a "
                    f"curve or an audit report")


def from_document(doc: Any, registry: Registry | None = None) -> Any:
    """The object of a document written by ``to_document``."""
    if not isinstance(doc, Mapping):
        raise TypeError(f"the document must be a table (a JSON object), got "
                        f"{type(doc).__name__}")
    check_depth(doc, "the document")
    kind = doc.get("kind")
    if kind == "ledger":
        return Ledger(read_ledger_document(doc, registry))
    if kind == "accountant":
        step, entries = read_accountant_document(doc, registry)
        return Accountant.of(Ledger(entries), step=step)
    if kind == "curve":
        check_keys(doc, "", ("kind", "schema", "curve"), required=("schema", "curve"))
        check_schema(doc, "", "curve")
        curve = decode(doc["curve"], curve_types(), "curve")
        from accounting.curves.curve import Curve
        if not isinstance(curve, Curve):
            raise TypeError(f"curve: a {type(curve).__name__} is not a curve")
        return curve
    if kind == "audit_report":
        check_keys(doc, "", ("kind", "schema", "auditor", "report"),
                   required=("schema", "auditor", "report"))
        check_schema(doc, "", "audit_report")
        from accounting.registry.registry import default_registry
        registry = registry or default_registry()
        name = doc["auditor"]
        auditor = registry.auditors.get(name) if isinstance(name, str) else None
        if auditor is None:
            raise ValueError(f"auditor: no auditor {name!r} is registered (registered: "
                             f"{', '.join(sorted(registry.auditors)) or 'none'})")
        reader = getattr(auditor, "report_from_dict", None)
        if reader is None:
            raise ValueError(f"auditor: the auditor {name!r} cannot read reports back")
        return reader(doc["report"])
    raise ValueError(f"kind: unknown document kind {kind!r} (known: ledger, accountant, "
                     f"curve, audit_report)")


def _format(format: Any, path: Any = None) -> str:
    """``format`` checked (``"json"`` or ``"toml"``), else the one of ``path``'s suffix."""
    if format is None:
        if path is None:
            return "json"
        suffix = os.path.splitext(os.fspath(path))[1].lower()
        if suffix not in FORMATS:
            raise ValueError(f"{path}: cannot tell the format from the suffix {suffix!r} "
                             f"(known: {', '.join(FORMATS)}); give format='json' or "
                             f"format='toml'")
        return FORMATS[suffix]
    if format not in FORMATS.values():
        raise ValueError(f"format must be 'json' or 'toml', got {format!r}")
    return str(format)


def dumps(obj: Any, *, format: str = "json", **json_options: Any) -> str:
    """``to_document(obj)`` as text: JSON (``json_options`` go to ``json.dumps``; a
    non-finite float is refused, JSON has none) or TOML (``format="toml"``)."""
    fmt = _format(format)
    if fmt == "toml":
        if json_options:
            raise TypeError(f"dumps(format='toml') takes no JSON options, got "
                            f"{', '.join(sorted(json_options))}")
        return toml_dumps(to_document(obj))
    return json_text(to_document(obj), **json_options)


def loads(text: str | bytes, registry: Registry | None = None, *, format: str = "json") -> Any:
    """The object of text written by ``dumps``: strict JSON (no NaN/Infinity literals,
    no duplicate keys) or TOML (``format="toml"``)."""
    fmt = _format(format)
    doc = parse_toml(text) if fmt == "toml" else parse_json(text)
    return from_document(doc, registry)


def save(obj: Any, path: str | os.PathLike[str], *, format: str | None = None) -> None:
    """Write ``obj`` (a Ledger, Accountant, curve or audit report) to ``path``, as JSON
    or TOML: ``format`` (``"json"``, ``"toml"``), else from the suffix (``.json``,
    ``.toml``; any other is refused). The one way to save; ``load`` reads it back.
    TOML has no null, so a document holding one (a curve without a lower side) is
    refused as TOML, naming the path, before the file is opened: save it as JSON."""
    fmt = _format(format, path)
    text = dumps(obj, indent=1) if fmt == "json" else dumps(obj, format="toml")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text if fmt == "toml" else text + "\n")


def load(path: str | os.PathLike[str], registry: Registry | None = None, *,
         format: str | None = None) -> Any:
    """Read back what ``save`` wrote (format as for ``save``): never unpickles, never
    executes anything."""
    text = read_text_file(path, MAX_DOCUMENT_BYTES, "document")   # a regular file first
    fmt = _format(format, path)
    doc = parse_toml(text) if fmt == "toml" else parse_json(text, str(path))
    return from_document(doc, registry)


def read_text_file(path: str | os.PathLike[str], limit: int, what: str = "file",
                   hint: str = "file") -> str:
    """The UTF-8 text of ``path``: a regular file of at most ``limit`` bytes (a FIFO, a
    device or a directory is refused before it is opened, so reading cannot block or
    run forever); a ValueError naming the file and ``what`` it is otherwise (``hint``:
    what to give instead of a FIFO or a device). Shared with workload files."""
    source = str(path)
    try:
        info = os.stat(path)
        if not stat.S_ISREG(info.st_mode):
            kind = ("a directory" if stat.S_ISDIR(info.st_mode) else
                    "a FIFO" if stat.S_ISFIFO(info.st_mode) else
                    "a device" if stat.S_ISCHR(info.st_mode) or stat.S_ISBLK(info.st_mode)
                    else "not a regular file")
            raise ValueError(f"{source}: cannot read {what} ({kind}; give a regular {hint})")
        if info.st_size > limit:
            raise ValueError(f"{source}: {what} too large ({info.st_size} bytes; at most "
                             f"{limit} are read)")
        with open(path, "rb") as fh:
            raw = fh.read(limit + 1)
    except OSError as exc:
        raise ValueError(f"{source}: cannot read {what} "
                         f"({exc.strerror or type(exc).__name__})") from None
    except ValueError as exc:
        if str(exc).startswith(f"{source}: "):
            raise
        # e.g. an embedded NUL in the path
        raise ValueError(f"{source!r}: cannot read {what} ({exc})") from None
    if len(raw) > limit:
        raise ValueError(f"{source}: {what} too large (more than {limit} bytes)")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{source}: not a UTF-8 text file (invalid byte at offset "
                         f"{exc.start})") from None


def check_writable_file(path: str | os.PathLike[str], what: str = "file",
                        hint: str = "a file") -> None:
    """Refuse, before any work, a place where a file cannot be written: a ValueError
    ``"{what}: …"`` naming ``path`` and the reason. ``path`` must name a file (not be
    empty or a directory) in a folder that exists and takes a new file (tried with a
    temporary file, removed at once: writing atomically needs one there too); if it
    exists it must be a regular file (a FIFO would block, and replacing a device
    would destroy it). ``hint``: what to give instead. Shared by every writer of the
    command line (``--output``, ``--plot``)."""
    text = os.fspath(path) if isinstance(path, os.PathLike) else path
    if not isinstance(text, str) or not text:
        raise ValueError(f"{what}: give a file name ({hint}), got {text!r}")
    folder = os.path.dirname(os.path.abspath(text))
    try:
        if os.path.isdir(text) or text.endswith(os.sep):
            raise ValueError(f"{what}: {text} is a directory; give {hint}")
        if os.path.lexists(text) and not stat.S_ISREG(os.stat(text).st_mode):
            raise ValueError(f"{what}: {text} is not a regular file; give {hint}")
        if not os.path.isdir(folder):
            raise ValueError(f"{what}: cannot write {text}: no such directory {folder}")
        fd, probe = tempfile.mkstemp(prefix=".probe-", dir=folder)
        os.close(fd)
        os.remove(probe)
    except OSError as exc:
        raise ValueError(f"{what}: cannot write {text}: cannot create a file in {folder} "
                         f"({exc.strerror or type(exc).__name__})") from None
    except ValueError as exc:
        if str(exc).startswith(f"{what}: "):
            raise
        # e.g. an embedded NUL in the path
        raise ValueError(f"{what}: cannot write {text!r} ({exc})") from None

"""Document text: the strict JSON reader and the TOML writer of the saved documents.

* ``parse_json``: JSON parsed strictly — NaN/Infinity literals (not JSON), duplicate
  keys and nesting deeper than ``validation.MAX_DEPTH`` refused, so a document means
  one thing.
* ``json_text``: a document as JSON, a non-finite float refused naming its path (JSON
  has none; TOML has ``inf`` and ``nan``).
* ``toml_dumps``: a document as TOML (written by hand: ``tomllib`` only reads). Floats
  are written with Python's shortest round-trip ``repr``, JSON and TOML alike, so every
  value reads back bit for bit.

These sit with the ledger (its floor) because the ledger's deprecated ``to_json``/
``to_toml`` still use them; users and the rest of the library reach them through
``accounting.serialization``, their one public home.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

from accounting.validation import check_depth

__all__ = ["parse_json", "json_text", "toml_dumps", "check_finite", "parse_toml"]


def check_finite(value: Any, path: str) -> None:
    """A ValueError naming the path of the first non-finite float in ``value`` (JSON
    has no inf or nan)."""
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{path or 'the document'}: {value!r} cannot be written as JSON "
                         f"(use TOML, which has inf and nan)")
    if isinstance(value, Mapping):
        for k, v in value.items():
            check_finite(v, f"{path}.{k}" if path else str(k))
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            check_finite(v, f"{path}[{i}]")


def parse_json(text: str | bytes, source: str = "invalid JSON") -> Any:
    """JSON text parsed strictly: NaN/Infinity (not JSON), duplicate keys and nesting
    deeper than ``MAX_DEPTH`` (json recurses once per level) refused; ``source``
    names the text in that refusal."""
    if not isinstance(text, (str, bytes, bytearray)):
        raise TypeError(f"expected JSON text, got {type(text).__name__}")
    check_depth(text, source)

    def constant(name: str) -> Any:
        raise ValueError(f"invalid JSON: {name} is not a JSON number")

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for k, v in items:
            if k in out:
                raise ValueError(f"invalid JSON: duplicate key {k!r}")
            out[k] = v
        return out
    try:
        return json.loads(text, parse_constant=constant, object_pairs_hook=pairs)
    except json.JSONDecodeError as exc:
        raise ValueError(f"invalid JSON: {exc}") from None


def json_text(doc: Any, **json_options: Any) -> str:
    """``doc`` as JSON text (``json_options`` go to ``json.dumps``, e.g. ``indent=2``);
    a non-finite float is refused naming its path."""
    check_finite(doc, "")
    return json.dumps(doc, allow_nan=False, **json_options)


def parse_toml(text: Any) -> Any:
    """TOML text parsed by ``tomllib`` (inline tables nested deeper than
    ``validation.MAX_DEPTH`` refused first: the parser recurses once per level)."""
    import tomllib
    if not isinstance(text, str):
        raise TypeError(f"from_toml needs a str, got {type(text).__name__}")
    check_depth(text, "the TOML document")
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"invalid TOML: {exc}") from None


# ------------------------------------------------------------------- TOML out
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


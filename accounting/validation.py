"""Argument checks shared by every public entry point.

Each check names the parameter and the allowed range in its message, so that a bad
value fails at the boundary rather than as a NaN deep inside the numerics.
"""

from __future__ import annotations

import numbers
import re
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from accounting.vocabulary import FloatArray

__all__ = [
    "check_real",
    "check_positive",
    "check_probability",
    "check_count",
    "check_array",
    "check_options",
    "check_depth",
    "MAX_COUNT",
    "MAX_DEPTH",
]

#: Largest count accepted anywhere (2^53: every integer up to it is exact in float64,
#: and the closed forms scale by count in float64). Beyond it an n-fold composition has
#: no meaningful float64 answer, so it is refused instead of overflowing deep inside.
MAX_COUNT = 2 ** 53

#: The deepest nesting of lists and tables accepted in any document read (ledgers,
#: accountants, curves, audit reports, workloads, sweeps, resumed sweep rows, inline
#: tables on the command line). The library's own documents nest at most about 10
#: deep; the parsers (json, tomllib) and the readers after them recurse once per level,
#: so without a limit a deep document is a RecursionError rather than a refusal.
MAX_DEPTH = 64


def check_real(name: str, value: Any, *, lo: float = -np.inf, hi: float = np.inf,
               lo_open: bool = False, hi_open: bool = False,
               allow_inf: bool = False) -> float:
    """Return ``value`` as a float after checking it is a real number in the range.

    ``lo_open``/``hi_open`` make the corresponding end exclusive.
    """
    if isinstance(value, bool) or not isinstance(value, (numbers.Real, np.floating, np.integer)):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__} ({value!r})")
    x = float(value)
    if np.isnan(x):
        raise ValueError(f"{name} must be a number, got NaN")
    if np.isinf(x) and not allow_inf:
        raise ValueError(f"{name} must be finite, got {x}")
    _check_range(name, np.asarray(x), lo, hi, lo_open, hi_open)
    return x


def check_positive(name: str, value: Any, *, allow_inf: bool = False) -> float:
    """A real number > 0."""
    return check_real(name, value, lo=0.0, lo_open=True, allow_inf=allow_inf)


def check_probability(name: str, value: Any, *, lo_open: bool = True,
                      hi_open: bool = True) -> float:
    """A real number in (0, 1) by default; the ends can be closed."""
    return check_real(name, value, lo=0.0, hi=1.0, lo_open=lo_open, hi_open=hi_open)


def check_count(name: str, value: Any, *, minimum: int = 1, maximum: int = MAX_COUNT) -> int:
    """An integer in [``minimum``, ``maximum``] (floats with an integral value are accepted)."""
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be an integer, got bool")
    if isinstance(value, (numbers.Integral, np.integer)):
        n = int(value)
    elif isinstance(value, (numbers.Real, np.floating)) and float(value).is_integer():
        # typeshed's numbers.Real declares no __int__/__trunc__, which every Real has
        n = int(value)  # type: ignore[arg-type]
    else:
        raise TypeError(f"{name} must be an integer, got {type(value).__name__} ({value!r})")
    if n < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {n}")
    if n > maximum:
        raise ValueError(f"{name} must be an integer <= {maximum} (at most {maximum:.6g}), "
                         f"got {n:.6g}")
    return n


def check_array(name: str, value: Any, *, lo: float = -np.inf, hi: float = np.inf,
                lo_open: bool = False, hi_open: bool = False,
                allow_inf: bool = False) -> FloatArray:
    """Return ``value`` as a float64 array (0-d for scalars) checked elementwise.

    Strings, bytes, booleans and complex numbers are refused (TypeError), never
    coerced: ``'1e-5'`` is not a δ and ``True`` is not 1."""
    try:
        raw = np.asarray(value)
        # a list mixing numbers with bools or strings is cast silently by numpy: look
        # at its entries as Python objects
        items = np.asarray(value, dtype=object) if isinstance(value, (list, tuple)) else raw
        bad = [v for v in items.ravel() if isinstance(v, (str, bytes, bool, np.bool_))
               or not isinstance(v, numbers.Real)] if items.dtype.kind == "O" else []
        if raw.dtype.kind in "USbc" or bad:
            kind = {"U": "strings", "S": "bytes", "b": "booleans", "c": "complex numbers"}.get(
                raw.dtype.kind, f"an entry {bad[0]!r:.40}" if bad else "")
            raise TypeError(f"{name} must be a real number or an array of real numbers, "
                            f"got {kind} ({type(value).__name__})")
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError) as err:
        if isinstance(err, TypeError) and str(err).startswith(name):
            raise
        raise TypeError(f"{name} must be a real number or an array of real numbers, "
                        f"got {type(value).__name__}") from None
    if np.isnan(arr).any():
        raise ValueError(f"{name} must not contain NaN")
    if not allow_inf and np.isinf(arr).any():
        raise ValueError(f"{name} must be finite")
    _check_range(name, arr, lo, hi, lo_open, hi_open)
    return arr


def _check_range(name: str, arr: FloatArray, lo: float, hi: float,
                 lo_open: bool, hi_open: bool) -> None:
    bad_lo = (arr <= lo) if lo_open else (arr < lo)
    bad_hi = (arr >= hi) if hi_open else (arr > hi)
    if np.any(bad_lo) or np.any(bad_hi):
        left = "(" if lo_open or lo == -np.inf else "["
        right = ")" if hi_open or hi == np.inf else "]"
        bad = arr[bad_lo | bad_hi] if arr.ndim else arr
        shown = float(np.ravel(bad)[0])
        raise ValueError(f"{name} must be in {left}{lo:g}, {hi:g}{right}, got {shown:g}")


def check_options(where: str, options: Mapping[str, Any], allowed: Iterable[str]) -> None:
    """Refuse keyword options outside ``allowed``: a TypeError naming each unknown one
    and the allowed ones (a misspelt option must never silently fall back to a default)."""
    allowed = sorted(allowed)
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        listed = ", ".join(repr(k) for k in unknown)
        ok = ", ".join(allowed) if allowed else "none"
        raise TypeError(f"{where} got unknown option{'s' if len(unknown) > 1 else ''} "
                        f"{listed}; allowed: {ok}")


# where a string or comment that began with the key ends (escapes skipped; a
# single-line string also ends at a newline, where the parser refuses it), written
# as unrolled loops so that a long string is one run of a character class
_QUOTED_END = {'"': re.compile(r'[^"\\\n]*(?:\\.[^"\\\n]*)*(?:"|(?=\n)|\Z)'),
               "'": re.compile(r"[^'\n]*(?:'|(?=\n)|\Z)"),
               '"""': re.compile(r'[^"\\]*(?:(?:\\.|"(?!""))[^"\\]*)*(?:"""|\Z)', re.DOTALL),
               "'''": re.compile(r"[^']*(?:'(?!'')[^']*)*(?:'''|\Z)"),
               "#": re.compile(r"[^\n]*")}


def _unquoted(text: str) -> str:
    """``text`` without its strings and comments (JSON or TOML). TOML's rules serve
    both: a quote or ``#`` outside a JSON string is a syntax error that the JSON
    parser meets before anything after it."""
    parts, pos = [], 0
    nxt = {c: text.find(c) for c in "\"'#"}
    while True:
        found = [(i, c) for c, i in nxt.items() if i >= 0]
        if not found:
            break
        start, c = min(found)
        token = c * 3 if c != "#" and text.startswith(c * 3, start) else c
        parts.append(text[pos:start])
        pos = start + len(token)
        end = text.find('"', pos) if token == '"' else -1
        if end >= 0 and text.find("\\", pos, end) < 0 and text.find("\n", pos, end) < 0:
            pos = end + 1        # the common string, without escapes: at str.find speed
        else:
            closing = _QUOTED_END[token].match(text, pos)
            assert closing is not None    # every pattern may end at \Z: it always matches
            pos = closing.end()
        for k, i in nxt.items():
            if 0 <= i < pos:
                nxt[k] = text.find(k, pos)
    parts.append(text[pos:])
    return "".join(parts)


def _text_depth(text: str) -> int:
    """How deep JSON or TOML ``text`` nests, at most: its brackets, plus the dots of a
    TOML dotted key (``a.b.c = 1``, ``[a.b.c]``), each of which nests one level up to
    the next ``=``, ``,``, bracket or line end (a JSON number holds one dot at most).
    Dotted keys count because tomllib's work on one grows with its length squared."""
    a = np.frombuffer(_unquoted(text).encode("utf-8", "surrogatepass"), np.uint8)
    if a.size == 0:
        return 0
    step = np.zeros(a.size, np.int64)
    step[(a == ord("[")) | (a == ord("{"))] = 1
    step[(a == ord("]")) | (a == ord("}"))] = -1
    # a surplus closing bracket is an error the parser meets before any bracket after
    # it, so the running sum may dip below zero without hiding a deep part it reads
    brackets = np.cumsum(step)
    dots = np.cumsum(a == ord("."))
    ends = (step != 0) | (a == ord("=")) | (a == ord(",")) | (a == ord("\n"))
    last = np.maximum.accumulate(np.where(ends, np.arange(a.size), 0))
    key_dots = dots - np.where(last > 0, dots[last], 0)
    return int(max(brackets.max(), (brackets + key_dots).max()))


def _data_depth(value: Any) -> Iterable[int]:
    """The depth of every list, tuple and table in parsed data, walked with an
    explicit stack (the data may be deeper than Python's recursion limit)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, Mapping):
            children: Iterable[Any] = item.values()
        elif isinstance(item, (list, tuple)):
            children = item
        else:
            continue
        yield depth
        if depth <= MAX_DEPTH:
            stack.extend((child, depth + 1) for child in children)


def check_depth(document: Any, where: str) -> None:
    """Refuse ``document`` nested more than ``MAX_DEPTH`` deep: a ValueError naming
    ``where`` (the file, or the document's place). ``document`` is JSON or TOML text
    (``str``/``bytes``, checked before it is parsed, since both parsers recurse) or
    parsed data (lists, tuples and tables; TOML's dotted keys and table headers nest
    without brackets, so TOML is checked both ways). Neither check recurses."""
    if isinstance(document, (bytes, bytearray)):
        # latin-1 maps every byte to one character: the ASCII brackets and quotes of
        # UTF-8, and the code units of UTF-16/32 (which json.loads also reads), stay
        document = bytes(document).decode("latin-1")
    deep = (_text_depth(document) > MAX_DEPTH if isinstance(document, str) else
            any(d > MAX_DEPTH for d in _data_depth(document)))
    if deep:
        raise ValueError(f"{where}: nested too deeply (lists and tables more than "
                         f"{MAX_DEPTH} levels inside one another; no document needs as "
                         f"many)")

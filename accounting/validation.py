"""Argument checks shared by every public entry point.

Each check names the parameter and the allowed range in its message, so that a bad
value fails at the boundary rather than as a NaN deep inside the numerics.
"""

from __future__ import annotations

import numbers
from typing import Any, Iterable, Mapping

import numpy as np

__all__ = [
    "check_real",
    "check_positive",
    "check_probability",
    "check_count",
    "check_array",
    "check_options",
    "MAX_COUNT",
]

#: Largest count accepted anywhere (2^53: every integer up to it is exact in float64,
#: and the closed forms scale by count in float64). Beyond it an n-fold composition has
#: no meaningful float64 answer, so it is refused instead of overflowing deep inside.
MAX_COUNT = 2 ** 53


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
        n = int(value)
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
                allow_inf: bool = False) -> np.ndarray:
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


def _check_range(name: str, arr: np.ndarray, lo: float, hi: float,
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

"""Timing helper shared by the benchmark scripts (run them as ``python benchmarks/X.py``,
which puts this folder on ``sys.path``)."""

from __future__ import annotations

import time
from typing import Any, Callable


def timed(fn: Callable[[], Any], repeat: int = 1) -> tuple[Any, float]:
    """``fn()``'s result and its best wall-clock time over ``repeat`` runs, in seconds."""
    best, out = float("inf"), None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return out, best

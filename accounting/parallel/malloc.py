"""Worker processes whose allocator was tuned for small objects: undo it for arrays.

A Dask nanny starts its workers with ``MALLOC_TRIM_THRESHOLD_=65536`` (the default
of ``distributed.nanny.pre-spawn-environ``), to hand memory back to the system
early. Setting that variable also freezes glibc's mmap threshold at 128 KiB, so
every numpy temporary above it is a fresh ``mmap``, faulted in and zeroed page by
page, and freed with ``munmap``: measured here, a PLD calibration ran 2–3× slower in
such a worker than in a plain process. ``tune_allocator`` raises the two thresholds
back to glibc's own dynamic ceiling (32 MiB for mmap, twice that for trimming),
once per process, and only where the variable is set and the C library is glibc.
It changes speed and peak memory, never a result.
"""

from __future__ import annotations

import ctypes
import os
import sys

__all__ = ["tune_allocator"]

#: mallopt parameters (glibc malloc.h)
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
#: glibc's ceiling of the dynamic mmap threshold on 64-bit (DEFAULT_MMAP_THRESHOLD_MAX)
_MMAP_THRESHOLD = 32 * 2 ** 20

_done = False


def tune_allocator() -> bool:
    """Raise glibc's mmap and trim thresholds if ``MALLOC_TRIM_THRESHOLD_`` froze them;
    whether it did (False on other systems, or when the variable is not set)."""
    global _done
    if _done or not sys.platform.startswith("linux") or \
            "MALLOC_TRIM_THRESHOLD_" not in os.environ:
        return False
    _done = True
    try:
        libc = ctypes.CDLL(None)
        mallopt = libc.mallopt
    except (OSError, AttributeError):     # not glibc (musl has no mallopt)
        return False
    ok = mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD) == 1
    return bool(ok and mallopt(_M_TRIM_THRESHOLD, 2 * _MMAP_THRESHOLD) == 1)

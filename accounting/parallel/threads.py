"""Thread caps: N workers on N cores must not each start N BLAS threads.

numpy and scipy call a BLAS (OpenBLAS, MKL, …) and sometimes OpenMP, whose thread
pools default to one thread per core. A pool of N worker processes then runs N²
threads on N cores, and dense linear algebra slows down several-fold instead of
speeding up (an n = 1000 audit took 22–46 s with default OpenBLAS threading against
0.5–1 s with one thread on a shared 2-core machine). Every task of
``accounting.parallel`` therefore runs with its BLAS and OpenMP pools capped by
``threadpoolctl`` (a runtime dependency), in the serial engine too: a reduction
computed by one thread or by several may differ in the last bit, and results must
be bit-identical whatever the engine.

FFTs: the library calls ``scipy.fft`` without ``workers=``, which runs one thread;
numpy's FFT is single-threaded. The environment variables set by
``cap_process_threads`` also reach libraries loaded later and child processes.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any

from accounting.validation import check_count

__all__ = ["THREAD_VARIABLES", "check_threads", "limited_threads", "cap_process_threads"]

#: environment variables read by BLAS/OpenMP runtimes when they start
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                    "BLIS_NUM_THREADS", "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS")
#: the most threads a task may ask for
MAX_THREADS = 1024


def check_threads(threads: Any) -> int:
    """``threads`` as an int in [1, ``MAX_THREADS``]; a TypeError/ValueError naming it."""
    return check_count("threads", threads, maximum=MAX_THREADS)


@contextlib.contextmanager
def limited_threads(threads: int) -> Iterator[None]:
    """Cap the BLAS and OpenMP pools of this process to ``threads`` inside the block."""
    from threadpoolctl import threadpool_limits
    with threadpool_limits(limits=check_threads(threads)):
        yield


def cap_process_threads(threads: int) -> None:
    """Cap this (worker) process for good: the environment variables, for runtimes not
    loaded yet, and the pools already loaded. Meant for a worker's initializer; a
    task still runs inside ``limited_threads`` for the libraries its imports load."""
    threads = check_threads(threads)
    for name in THREAD_VARIABLES:
        os.environ[name] = str(threads)
    from threadpoolctl import threadpool_limits
    threadpool_limits(limits=threads)

"""Resources of an audit: memory estimated before any kernel matrix is built, BLAS threads.

The kernel statistics (D̂ on all samples, the λ sweep, the finite-sample RKRDP test)
work on dense Gram matrices: for n_p and n_q samples the n × n form holds K_xx, K_xy,
K_yy, the eigenvectors of K_yy, K̃_x, W, S and M = K̃_x − SSᵀ at once, about

    8 bytes × (4 n_p² + 2 n_q² + 3 n_p n_q)

(float64; the count follows ``estimator._Prepared`` and ``kernel.rbf_grams``). It is
compared with a budget *before* anything is allocated, and refused with the number
and the options that avoid it. Everything else in the auditor (witnesses, counts) is
linear in n: kernel witnesses use at most ``kernel_points`` training points per side
and score the held-out samples in row blocks.

BLAS threads: the dense eigensolvers oversubscribe a shared machine badly (an
n = 8000 audit took twice as long with default threading as with one thread). The
auditor caps them with ``threadpoolctl`` when it is installed; without it the cap is a
no-op and the report says so (set ``OPENBLAS_NUM_THREADS``/``OMP_NUM_THREADS`` before
starting Python instead).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

__all__ = ["MemoryBudgetError", "kernel_bytes", "check_memory", "format_bytes",
           "thread_limit", "DEFAULT_MEMORY_BUDGET"]

#: default memory budget of the kernel statistics: 2 GiB
DEFAULT_MEMORY_BUDGET = 2 * 2 ** 30


class MemoryBudgetError(ValueError):
    """A computation would need more memory than ``memory_budget`` allows."""


def kernel_bytes(n_p: int, n_q: int) -> int:
    """Bytes of float64 work arrays of the n × n kernel statistics at sizes (n_p, n_q)."""
    return 8 * (4 * n_p * n_p + 2 * n_q * n_q + 3 * n_p * n_q)


def format_bytes(b: float) -> str:
    """``b`` bytes in GiB/MiB with 3 significant digits."""
    if b >= 2 ** 30:
        return f"{b / 2 ** 30:.3g} GiB"
    return f"{b / 2 ** 20:.3g} MiB"


def check_memory(what: str, needed: int, budget: float, fix: str) -> None:
    """Refuse ``what`` when it needs more than ``budget`` bytes, naming ``fix``."""
    if needed > budget:
        raise MemoryBudgetError(
            f"{what} needs about {format_bytes(needed)} of memory (dense n × n float64 "
            f"matrices), above memory_budget = {format_bytes(budget)}; {fix}, or raise "
            f"memory_budget (bytes)")


def threads_capped() -> bool:
    """Whether ``thread_limit`` can cap BLAS threads (``threadpoolctl`` importable)."""
    try:
        import threadpoolctl  # noqa: F401
    except ImportError:
        return False
    return True


@contextlib.contextmanager
def thread_limit(threads: int | None) -> Iterator[None]:
    """Cap the BLAS threads to ``threads`` inside the block (None: no cap).

    Uses ``threadpoolctl`` when installed (it should be a runtime dependency of the
    plugin); otherwise it changes nothing.
    """
    if threads is None:
        yield
        return
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        yield
        return
    with threadpool_limits(limits=int(threads), user_api="blas"):
        yield

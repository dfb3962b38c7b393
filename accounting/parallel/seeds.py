"""Seeds per task: results independent of how the tasks are spread over workers.

Task i of a run seeded with ``seed`` gets the i-th child of
``numpy.random.SeedSequence(seed)`` — the same stream as ``SeedSequence(seed).spawn(n)[i]``
for any n > i, built directly as ``SeedSequence(seed, spawn_key=(i,))`` so that a
worker needs only (seed, i), and a resumed run gives task i the seed it had the first
time. Children are independent streams by the construction of numpy's
``SeedSequence`` (its spawn key is hashed into the state), so the result of task i depends on (seed, i, its
configuration) and on nothing else: not the engine, not the number of workers, not
the order in which tasks finish.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from accounting.validation import check_count

__all__ = ["resolve_seed", "task_seed", "task_rng"]

#: SeedSequence entropy is any non-negative integer; we accept up to 2^128 − 1
MAX_SEED = 2 ** 128 - 1


def resolve_seed(seed: Any | None) -> int:
    """``seed`` checked (an integer in [0, 2^128 − 1]), or fresh entropy when None —
    returned so that the run can be reported and repeated."""
    if seed is None:
        entropy = np.random.SeedSequence().entropy
        assert isinstance(entropy, int)   # drawn fresh, it is one integer
        return entropy
    return check_count("seed", seed, minimum=0, maximum=MAX_SEED)


def task_seed(seed: int, index: int) -> np.random.SeedSequence:
    """The seed sequence of task ``index``: ``SeedSequence(seed).spawn(index + 1)[index]``."""
    return np.random.SeedSequence(seed, spawn_key=(int(index),))


def task_rng(seed: int, index: int) -> np.random.Generator:
    """A PCG64 generator on ``task_seed(seed, index)``."""
    return np.random.default_rng(task_seed(seed, index))

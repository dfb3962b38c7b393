"""Per-ledger accounting: answer every row (a user), account each distinct ledger once.

A service with 10⁶ users may have only 10³ distinct participation histories. Each
row is a ledger in the workload format (``configs``); rows are grouped by the
SHA-256 of the ledger's canonical JSON (``configs.config_digest``: equal ledgers
written in any key order share it), every distinct ledger is validated and then
accounted once on the engine, and the answer of its group is given to every row.

Rows that are the *same object* (a table of users pointing at shared ledger dicts)
are hashed once; equal but separate dicts are hashed each (about 10 µs a row).
Answers are ε(δ) or δ(ε) upper bounds, max over both neighbouring directions, per
distinct ledger; ``labels`` says "numerical" where a curve is only a numerical value.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import Any

import attrs
import numpy as np

from accounting.accountant import ACCOUNTANTS
from accounting.parallel.configs import answer, check_config, config_digest
from accounting.parallel.executor import Engine, map_tasks
from accounting.validation import check_array, check_depth

__all__ = ["LedgerAnswers", "account_ledgers", "answer_ledger", "group_ledgers"]


@attrs.frozen
class LedgerAnswers:
    """Answers per row. ``index[r]``: the distinct ledger of row r; ``ledgers``,
    ``digests``, ``first_row``: per distinct ledger; ``values[j, k]``: the answer of
    ledger j at the k-th query value (``query`` = "epsilon": ε at δ = ``at[k]``)."""

    query: str
    at: tuple[Any, ...]
    accountant: str
    index: np.ndarray = attrs.field(repr=False)
    digests: tuple[Any, ...] = attrs.field(repr=False)
    ledgers: tuple[Any, ...] = attrs.field(repr=False)
    first_row: tuple[Any, ...] = attrs.field(repr=False)
    values: np.ndarray = attrs.field(repr=False)
    labels: tuple[Any, ...] = attrs.field(repr=False)
    seconds: float = 0.0

    @property
    def rows(self) -> int:
        return int(self.index.size)

    @property
    def distinct(self) -> int:
        return len(self.digests)

    def answers(self) -> np.ndarray:
        """Shape (rows, len(at)): the answer of every row."""
        out: np.ndarray = self.values[self.index]
        return out

    def column_names(self) -> list[str]:
        given = "delta" if self.query == "epsilon" else "epsilon"
        return [f"{self.query}({given}={v:g})" for v in self.at]

    def to_frame(self) -> Any:
        """One row per input row: ``digest`` and one column per query value (pandas)."""
        import pandas as pd
        frame = pd.DataFrame(self.answers(), columns=self.column_names())
        frame.insert(0, "digest", np.asarray(self.digests, dtype=object)[self.index])
        return frame


def group_ledgers(ledgers: Iterable[Mapping[str, Any]]
                  ) -> tuple[np.ndarray, list[Mapping[str, Any]], list[str], list[int]]:
    """(index per row, distinct ledgers, their digests, the first row of each)."""
    by_id: dict[int, int] = {}
    by_digest: dict[str, int] = {}
    alive: list[Any] = []                     # keeps the objects hashed by id alive
    distinct: list[Mapping[str, Any]] = []
    digests: list[str] = []
    first: list[int] = []
    index: list[int] = []
    for row, ledger in enumerate(ledgers):
        j = by_id.get(id(ledger))
        if j is None:
            check_depth(ledger, f"the ledger of row {row}")   # before json recurses into it
            digest = config_digest(ledger)
            j = by_digest.get(digest)
            if j is None:
                j = by_digest[digest] = len(distinct)
                distinct.append(ledger)
                digests.append(digest)
                first.append(row)
            by_id[id(ledger)] = j
            alive.append(ledger)
        index.append(j)
    return np.asarray(index, dtype=np.int64), distinct, digests, first


def answer_ledger(task: Mapping[str, Any], seed: Any = None) -> dict[str, Any]:
    """The answers of one ledger: {"values": [...], "label": ...} (deterministic)."""
    values, label = answer(task["ledger"], task["query"], task["at"], task["accountant"])
    return {"values": values.tolist(), "label": label}


def account_ledgers(ledgers: Iterable[Mapping[str, Any]], *, delta: Any = None,
                    epsilon: Any = None, accountant: str = "pld",
                    engine: Engine | None = None, progress: Any = False) -> LedgerAnswers:
    """ε at ``delta`` (or δ at ``epsilon``: give exactly one, a number or a list) of
    every ledger in ``ledgers`` under ``accountant``, each distinct ledger accounted
    once on ``engine``. A ledger that is not a valid workload is refused before any
    work, naming its first row; one that fails while accounted is a ``TaskError``
    naming its configuration."""
    t0 = time.perf_counter()
    if (delta is None) == (epsilon is None):
        raise ValueError("give exactly one of delta (for ε) and epsilon (for δ)")
    if not isinstance(accountant, str) or accountant not in ACCOUNTANTS:
        raise ValueError(f"accountant must be one of {', '.join(ACCOUNTANTS)}, got "
                         f"{accountant!r}")
    if delta is not None:
        query, asked = "epsilon", check_array("delta", delta, lo=0.0, hi=1.0, hi_open=True)
    else:
        query, asked = "delta", check_array("epsilon", epsilon, allow_inf=True)
    at = tuple(float(v) for v in np.atleast_1d(asked))
    if not at:
        raise ValueError(f"{'delta' if query == 'epsilon' else 'epsilon'} must not be empty")
    if isinstance(ledgers, (str, bytes, Mapping)):
        raise TypeError("ledgers must be a sequence of ledger dicts, one per row")
    index, distinct, digests, first = group_ledgers(ledgers)
    if not distinct:
        raise ValueError("ledgers is empty: give at least one row")
    for j, ledger in enumerate(distinct):
        check_config(ledger, f"ledger of row {first[j]}")
    tasks = [{"ledger": ledger, "query": query, "at": list(at), "accountant": accountant}
             for ledger in distinct]
    results = map_tasks(answer_ledger, tasks, engine=engine, seed=0, progress=progress,
                        label="ledgers")
    values = np.asarray([r["values"] for r in results], dtype=float).reshape(len(tasks), -1)
    return LedgerAnswers(query, at, accountant, index, tuple(digests), tuple(distinct),
                         tuple(first), values, tuple(r["label"] for r in results),
                         time.perf_counter() - t0)

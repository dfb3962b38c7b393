"""Scale out: many accounting queries, or a costly audited mechanism, across cores and
machines (docs/scaling.md).

* ``executor``: ``Engine`` (serial, ``workers=N`` local processes, a Dask scheduler or
  client, any ``concurrent.futures.Executor``) and ``map_tasks``; ``TaskError``,
  ``EngineError``;
* ``seeds``: one ``SeedSequence`` child per task, so results do not depend on the
  engine; ``threads``: BLAS/OpenMP caps per task; ``progress``: count and ETA;
* ``configs``: task configurations in the workload format, ``config_digest``;
* ``sweep``: ε, δ or calibration over a grid (``plan_sweep``, ``run_sweep``), streamed
  to CSV/JSON Lines (``table``) and resumable;
* ``ledgers``: per-ledger accounting of many rows, each distinct ledger once.

Dask is imported only when an engine names a scheduler or a client.
"""

from accounting.parallel.executor import Engine, EngineError, TaskError, TaskFailure, map_tasks
from accounting.parallel.ledgers import LedgerAnswers, account_ledgers
from accounting.parallel.sweep import SweepResult, load_sweep, plan_sweep, run_sweep

__all__ = ["Engine", "EngineError", "TaskError", "TaskFailure", "map_tasks",
           "LedgerAnswers", "account_ledgers", "SweepResult", "load_sweep", "plan_sweep",
           "run_sweep"]

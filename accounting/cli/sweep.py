"""``accounting sweep``: ε, δ or a calibration over a grid given in a TOML file, on this
machine, on local processes or on a Dask cluster (docs/scaling.md).

The rows go to stdout (CSV, or ``--json``) at the end, or are streamed to
``--output FILE.csv|FILE.jsonl`` as they finish; ``--resume`` skips the rows already
there. A bad file, an empty grid, an unknown parameter, a scheduler that cannot be
reached, a worker that dies or a point that fails: one line, exit status 2.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from typing import Any

from accounting.cli.base import CLIError, count_text, parse_float, stdout_to_stderr
from accounting.parallel.executor import Engine, EngineError, TaskError
from accounting.parallel.sweep import load_sweep, run_sweep
from accounting.parallel.table import encode_json
from accounting.progress import format_duration
from accounting.registry.registry import Registry

__all__: list[str] = []

_SWEEP_DESCRIPTION = (
    "Answer a query at every point of a grid: ε(δ), δ(ε) or the calibrated noise, for a "
    "workload or several (heterogeneous compositions), given in a TOML file (see "
    "docs/scaling.md for the format). Points run serially, on --workers N local "
    "processes, or on the Dask cluster at --scheduler tcp://HOST:PORT. Rows are printed "
    "as CSV (or --json) at the end, or streamed to --output as they finish; --resume "
    "skips the rows already in --output.")


def add_parser(sub: Any) -> None:
    """The ``sweep`` subcommand."""
    p = sub.add_parser("sweep", help="ε, δ or calibration over a grid, locally or on Dask",
                       description=_SWEEP_DESCRIPTION)
    p.add_argument("file", metavar="FILE.toml", help="the sweep: query, workload(s), [grid]")
    p.add_argument("--output", metavar="OUT", help="stream the rows to OUT.csv or OUT.jsonl")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--resume", action="store_true",
                      help="skip the points whose rows are already in --output")
    mode.add_argument("--overwrite", action="store_true", help="start --output afresh")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--workers", type=count_text, metavar="N",
                       help="run on N local processes (default: serially)")
    where.add_argument("--scheduler", metavar="ADDRESS",
                       help="run on the Dask cluster at ADDRESS (tcp://HOST:PORT)")
    p.add_argument("--threads", type=count_text, default=1, metavar="T",
                   help="BLAS/OpenMP threads per task (default 1)")
    p.add_argument("--connect-timeout", type=parse_float, default=10.0, metavar="S",
                   help="seconds to reach the scheduler and see a worker (default 10)")
    p.add_argument("--timeout", type=parse_float, default=None, metavar="S",
                   help="give up when no point finishes for S seconds (default: never)")
    p.add_argument("--keep-going", action="store_true",
                   help="record a failing point's error in its row and go on (exit 2 at "
                        "the end) instead of stopping at the first")
    p.add_argument("--progress", action="store_true",
                   help="show finished points and the time left on stderr")
    p.add_argument("--json", action="store_true", help="print the rows as one JSON array")
    p.set_defaults(handler=run, takes_extras=False)


def run(ns: argparse.Namespace, extras: list[str], registry: Registry) -> int:
    spec = load_sweep(ns.file)
    if ns.resume and ns.output is None:
        raise CLIError("--resume needs --output (the file to resume)")
    engine = Engine(workers=ns.workers, scheduler=ns.scheduler, threads=ns.threads,
                    connect_timeout=ns.connect_timeout, timeout=ns.timeout)
    try:
        with stdout_to_stderr():
            result = run_sweep(spec, output=ns.output, resume=ns.resume,
                               overwrite=ns.overwrite, engine=engine,
                               on_error="record" if ns.keep_going else "raise",
                               progress=ns.progress)
    except (TaskError, EngineError) as exc:
        kept = f" (finished rows kept in {ns.output}; --resume continues)" if ns.output else ""
        raise CLIError(f"{exc}{kept}") from None
    if ns.output is not None:
        print(f"sweep: {len(result.rows)} rows in {ns.output} ({result.computed} computed, "
              f"{result.resumed} resumed) in {format_duration(result.seconds)} on "
              f"{engine.describe()}")
    elif ns.json:
        json.dump([{k: encode_json(v) for k, v in row.items()} for row in result.rows],
                  sys.stdout, indent=1, allow_nan=False)
        print()
    else:
        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow(result.columns)
        for row in result.rows:
            writer.writerow(["" if row.get(c) is None else
                             repr(row[c]) if isinstance(row[c], float) else row[c]
                             for c in result.columns])
    if result.failures:
        first = result.failures[0]
        raise CLIError(f"{len(result.failures)} of {len(result.rows)} points failed (first: "
                       f"point {first.index}: {first.describe()}); their rows carry the error")
    return 0

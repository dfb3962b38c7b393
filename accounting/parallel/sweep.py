"""Sweeps: ε, δ or a calibration at every point of a grid, run on any engine.

A sweep is a dict (from TOML, ``load_sweep``, or built in Python) with the query, a
base workload in the workload format (``accounting.workload``) — or several
(``workload``, for heterogeneous compositions) — and a ``grid`` of axes whose
Cartesian product gives the points::

    query = "calibrate"        # "epsilon" (default), "delta" or "calibrate"
    accountant = "pld"         # "pld" (default), "rdp" or "zcdp"
    solve = "sigma"            # calibrate: the parameter solved for
    epsilon = 1.0              # the target (calibrate) or the ε of a "delta" query
    delta = 1e-5               # the δ of an "epsilon" query, or of the target
    step = 1e-4                # optional PLD grid step
    rtol = 1e-6                # optional, calibrate: relative width of the bracket

    [[mechanism]]              # the base workload
    name = "subsampled_gaussian"
    q = 0.004
    count = 1000

    [grid]                     # axes: each a non-empty list
    q = [0.001, 0.004, 0.01]   # a parameter: every mechanism that has it
    count = [1000, 10000]      # the count of every mechanism
    "mechanism.1.q" = […]      # or one mechanism (1-based)
    epsilon = [0.5, 1.0, 2.0]  # query values: delta, epsilon, accountant, step

Instead of ``[[mechanism]]``, a list of ``[[workload]]`` tables (each with its own
``[[workload.mechanism]]`` entries and an optional ``label``) makes the workload an
axis: every grid point is taken with every workload, and a parameter axis must apply
to each of them.

Every point becomes a task configuration ``{"query", "workload", ["solve",
"rtol"]}`` whose ``workload`` is a plain workload dict (a few hundred bytes, see
``configs``), checked before anything runs; its digest (``configs.config_digest``)
is the row's ``key``. The results come back as a table, one row per point in grid
order — ``index``, ``key``, the axes, the answer, ``seconds`` and ``error`` —
streamed to a CSV or JSON Lines file (``table``) as tasks finish; a resumed sweep
skips the rows already there. Answers are upper bounds, max over both neighbouring
directions (``label`` says "numerical" where the curve is only a numerical value).
"""

from __future__ import annotations

import copy
import itertools
import math
import os
import stat
import time
from typing import Any, Mapping, Optional, Sequence

import attrs
import numpy as np

from accounting.accountant import ACCOUNTANTS
from accounting.analysis.calibration import DEFAULT_RTOL, calibrate_workload
from accounting.curves.pld import DEFAULT_STEP
from accounting.parallel.configs import (answer, calibration_terms, check_config,
                                         config_digest, mechanism_parameters)
from accounting.parallel.executor import Engine, TaskFailure, map_tasks
from accounting.parallel.table import TableFile, decode_value
from accounting.workload import MAX_WORKLOAD_BYTES, WorkloadError

__all__ = ["SweepPlan", "SweepResult", "plan_sweep", "run_sweep", "run_point", "load_sweep",
           "QUERIES", "MAX_POINTS"]

QUERIES = ("epsilon", "delta", "calibrate")
#: the most grid points a sweep may have (checked before they are built)
MAX_POINTS = 10 ** 6
#: top-level keys of a sweep
_KEYS = ("query", "accountant", "solve", "epsilon", "delta", "step", "rtol", "description",
         "mechanism", "workload", "grid")
#: query values each query takes (fixed at the top level or as an axis)
_QUERY_KEYS = {"epsilon": ("delta", "accountant", "step"),
               "delta": ("epsilon", "accountant", "step"),
               "calibrate": ("epsilon", "delta", "accountant", "step")}
#: the answer columns of each query and their types (besides seconds and error)
_LABEL = ("label", str)
_RESULTS = {"epsilon": (("epsilon", float), _LABEL),
            "delta": (("delta", float), _LABEL),
            "calibrate": (("value", float), ("epsilon_at_value", float),
                          ("bracket_low", float), ("order", float),
                          ("evaluations", int), _LABEL)}


class SweepError(ValueError):
    """A sweep that cannot run; the message names the key and the problem."""


# ------------------------------------------------------------------ the plan
@attrs.frozen
class SweepPlan:
    """The points of a sweep and the task configuration of each."""

    query: str
    solve: Optional[str]
    axes: tuple              # ((name, (values…)), …) in grid order
    points: tuple            # per point: {axis: value}
    tasks: tuple             # per point: the task configuration
    keys: tuple              # per point: the digest of its task (16 hex digits)

    @property
    def results(self) -> tuple:
        """(column, type) of the answer columns."""
        return _RESULTS[self.query]

    @property
    def columns(self) -> list[str]:
        return ["index", "key", *(name for name, _ in self.axes),
                *(name for name, _ in self.results), "seconds", "error"]

    def __len__(self) -> int:
        return len(self.tasks)


def _plain(value: Any, where: str) -> Any:
    """An axis value as a plain JSON scalar or table (numpy scalars unwrapped)."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and math.isnan(value):
        raise SweepError(f"{where}: NaN is not a value")
    if value is None or isinstance(value, (set, frozenset, bytes)):
        raise SweepError(f"{where}: {value!r} is not a value (numbers, strings, lists and "
                         f"tables only)")
    return value


def _axis_values(name: str, values: Any) -> tuple:
    if isinstance(values, np.ndarray):
        values = values.tolist()
    if isinstance(values, (str, bytes, Mapping)) or not isinstance(values, Sequence):
        raise SweepError(f"grid: axis {name!r} must be a list of values, got "
                         f"{type(values).__name__} {values!r}")
    if not values:
        raise SweepError(f"grid: axis {name!r} is empty; give it at least one value")
    out = tuple(_plain(v, f"grid: axis {name!r}") for v in values)
    seen = set()
    for v in out:
        marker = repr(v)
        if marker in seen:
            raise SweepError(f"grid: axis {name!r} lists {v!r} twice")
        seen.add(marker)
    return out


def _workloads(spec: Mapping[str, Any]) -> list[tuple[str, dict]]:
    """(label, workload dict) of the base workload or of each ``workload`` table."""
    if "workload" in spec:
        if "mechanism" in spec:
            raise SweepError("give either [[mechanism]] (one workload) or [[workload]] "
                             "tables (several), not both")
        tables = spec["workload"]
        if not isinstance(tables, list) or not tables or \
                not all(isinstance(t, Mapping) for t in tables):
            raise SweepError("workload must be a non-empty list of tables ([[workload]]), "
                             "each with its [[workload.mechanism]] entries")
        out = []
        for i, table in enumerate(tables, start=1):
            label = table.get("label", f"workload{i}")
            if not isinstance(label, str) or not label:
                raise SweepError(f"workload #{i}: label must be a non-empty string")
            unknown = [k for k in table if k not in ("label", "mechanism", "description")]
            if unknown:
                raise SweepError(f"workload #{i}: unknown key {unknown[0]!r} (allowed: label, "
                                 f"mechanism, description)")
            out.append((label, {"mechanism": copy.deepcopy(table.get("mechanism"))}))
        labels = [label for label, _ in out]
        if len(set(labels)) != len(labels):
            raise SweepError(f"workload: labels must be distinct, got {', '.join(labels)}")
        return out
    if "mechanism" not in spec:
        raise SweepError("no workload: give [[mechanism]] entries (or [[workload]] tables)")
    return [("", {"mechanism": copy.deepcopy(spec["mechanism"])})]


def _entries(label: str, workload: dict) -> list:
    entries = workload["mechanism"]
    where = f"workload {label!r}" if label else "the workload"
    if not isinstance(entries, list) or not entries or \
            not all(isinstance(e, Mapping) and isinstance(e.get("name"), str) for e in entries):
        raise SweepError(f"{where}: 'mechanism' must be a non-empty list of tables, each with "
                         f"a name")
    return entries


def _targets(axis: str, label: str, entries: list) -> list[int]:
    """The mechanism entries (0-based) a parameter axis sets in one workload."""
    where = f"workload {label!r}" if label else "the workload"
    parts = axis.split(".")
    if parts[0] == "mechanism":
        if len(parts) != 3 or not parts[1].isdigit():
            raise SweepError(f"grid: {axis!r}: write mechanism.K.PARAMETER with K the "
                             f"1-based position of the mechanism")
        k, param = int(parts[1]), parts[2]
        if not 1 <= k <= len(entries):
            raise SweepError(f"grid: {axis!r}: {where} has {len(entries)} mechanism(s)")
        if param not in mechanism_parameters(entries[k - 1]["name"]):
            raise SweepError(f"grid: unknown parameter {param!r} of {entries[k - 1]['name']} "
                             f"(mechanism {k} of {where}; its parameters: "
                             f"{', '.join(mechanism_parameters(entries[k - 1]['name']))})")
        return [k - 1]
    hits = [i for i, e in enumerate(entries) if axis in mechanism_parameters(e["name"])]
    if not hits:
        names = sorted({e["name"] for e in entries})
        raise SweepError(f"grid: unknown parameter {axis!r}: not a parameter of any mechanism "
                         f"of {where} ({', '.join(names)}) nor a query value")
    return hits


def _single(spec: Mapping[str, Any], key: str) -> Any:
    value = spec[key]
    if isinstance(value, (list, tuple, np.ndarray)):
        raise SweepError(f"{key}: give one value here, or several under [grid]")
    return _plain(value, key)


def plan_sweep(spec: Mapping[str, Any]) -> SweepPlan:
    """Check ``spec`` and build every point's task; a ``SweepError`` (a ValueError)
    naming the key at fault: an unknown key, an empty grid or axis, an unknown
    parameter, a missing query value, more than ``MAX_POINTS`` points, two points
    with the same configuration, or a point whose workload is invalid."""
    if not isinstance(spec, Mapping):
        raise TypeError(f"a sweep must be a dict (or a TOML file), got {type(spec).__name__}")
    unknown = [k for k in spec if k not in _KEYS]
    if unknown:
        raise SweepError(f"unknown key {unknown[0]!r} (allowed: {', '.join(_KEYS)})")
    query = spec.get("query", "epsilon")
    if query not in QUERIES:
        raise SweepError(f"query must be one of {', '.join(QUERIES)}, got {query!r}")
    settable = _QUERY_KEYS[query]
    for key in ("epsilon", "delta"):
        if key in spec and key not in settable:
            raise SweepError(f"{key} is not a value of {query!r} sweep (it is the answer)")
    solve = spec.get("solve")
    if query == "calibrate":
        if not isinstance(solve, str) or not solve:
            raise SweepError("solve: a calibrate sweep names the parameter to solve for, "
                             "e.g. solve = \"sigma\"")
    elif solve is not None or "rtol" in spec:
        raise SweepError(f"{'solve' if solve is not None else 'rtol'} applies to "
                         f"query = \"calibrate\" only")
    fixed = {k: _single(spec, k) for k in settable if k in spec}
    fixed.setdefault("accountant", "pld")
    workloads = _workloads(spec)
    grid = spec.get("grid", {})
    if not isinstance(grid, Mapping):
        raise SweepError(f"grid must be a table of axes, got {type(grid).__name__}")
    if not grid and len(workloads) < 2:
        raise SweepError("the grid is empty: give at least one axis under [grid] (or "
                         "several [[workload]] tables)")
    axes = [(str(name), _axis_values(str(name), values)) for name, values in grid.items()]
    for name, _ in axes:
        if name in ("epsilon", "delta") and name not in settable:
            raise SweepError(f"grid: {name} is not a value of {query!r} sweep (it is the "
                             f"answer)")
        if name == "workload":
            raise SweepError("grid: 'workload' is not an axis name; list [[workload]] "
                             "tables instead")
        if query == "calibrate" and name.split(".")[-1] == solve:
            raise SweepError(f"grid: {name!r} is the parameter being solved for")
    if len(workloads) > 1:
        axes.insert(0, ("workload", tuple(label for label, _ in workloads)))
    size = math.prod(len(values) for _, values in axes)
    if size > MAX_POINTS:
        raise SweepError(f"the grid has {size:.3g} points, more than MAX_POINTS = "
                         f"{MAX_POINTS:.0e}; split the sweep")
    missing = [k for k in settable if k not in fixed and k != "step"
               and k not in dict(axes)]
    if missing:
        raise SweepError(f"{missing[0]}: a {query!r} sweep needs {missing[0]} (at the top "
                         f"level or as an axis)")

    by_label = dict(workloads)
    targets = {}
    for label, workload in workloads:
        entries = _entries(label, workload)
        for name, _ in axes:
            if name not in settable and name != "workload":
                targets[label, name] = _targets(name, label, entries)
    points, tasks, keys = [], [], []
    first = {}
    for combo in itertools.product(*(values for _, values in axes)):
        point = dict(zip((name for name, _ in axes), combo))
        label = point.get("workload", workloads[0][0])
        workload = copy.deepcopy(by_label[label])
        values = dict(fixed)
        for name, value in point.items():
            if name in settable:
                values[name] = value
            elif name != "workload":
                for i in targets[label, name]:
                    workload["mechanism"][i][name.split(".")[-1]] = value
        task = _task(query, solve, spec.get("rtol"), workload, values, len(points))
        key = config_digest(task)[:16]
        if key in first:
            raise SweepError(f"grid points {first[key]} and {len(points)} are the same "
                             f"configuration ({point})")
        first[key] = len(points)
        points.append(point)
        tasks.append(task)
        keys.append(key)
    return SweepPlan(query, solve, tuple(axes), tuple(points), tuple(tasks), tuple(keys))


def _task(query: str, solve: Optional[str], rtol: Any, workload: dict, values: dict,
          index: int) -> dict:
    """The task of one point, checked now so that a bad value fails before any work."""
    accountant = values["accountant"]
    if accountant not in ACCOUNTANTS:
        raise SweepError(f"point {index}: accountant must be one of "
                         f"{', '.join(ACCOUNTANTS)}, got {accountant!r}")
    workload.update(values)
    task: dict = {"query": query, "workload": workload}
    try:
        if query == "calibrate":
            task["solve"] = solve
            if rtol is not None:
                task["rtol"] = rtol
            calibration_terms(workload, solve)
        else:
            check_config(workload, f"point {index}")
    except WorkloadError as exc:
        raise SweepError(str(exc)) from None
    except (TypeError, ValueError) as exc:
        raise SweepError(f"point {index}: {exc}") from None
    return task


# ------------------------------------------------------------------ a task
def run_point(task: Mapping[str, Any], seed: Any = None) -> dict:
    """The answer columns of one task (see ``SweepPlan.results``) and its ``seconds``.
    Deterministic: ``seed`` is not used (accounting draws no random numbers)."""
    t0 = time.perf_counter()
    query, workload = task["query"], dict(task["workload"])
    accountant = workload.pop("accountant", "pld")
    if query == "calibrate":
        target, delta = workload.pop("epsilon"), workload.pop("delta")
        step = workload.pop("step", DEFAULT_STEP)
        cal = calibrate_workload(calibration_terms(workload, task["solve"]), epsilon=target,
                                 delta=delta, accountant=accountant, step=step,
                                 rtol=task.get("rtol", DEFAULT_RTOL),
                                 parameter=task["solve"])
        out = {"value": cal.value, "epsilon_at_value": cal.epsilon,
               "bracket_low": cal.bracket[0], "order": cal.order,
               "evaluations": cal.evaluations, "label": cal.epsilon_label}
    else:
        at = workload.pop("delta" if query == "epsilon" else "epsilon")
        values, label = answer(workload, query, at, accountant)
        out = {query: float(values[0]), "label": label}
    out["seconds"] = time.perf_counter() - t0
    return out


# ---------------------------------------------------------------- the run
@attrs.frozen
class SweepResult:
    """The rows of a sweep in grid order; ``computed``/``resumed``: how many were run
    now and how many were read back from the output file; ``failures``: the points
    that raised (with ``on_error="record"``), whose rows carry the ``error``."""

    plan: SweepPlan = attrs.field(repr=False)
    rows: tuple = attrs.field(repr=False)
    computed: int
    resumed: int
    seconds: float
    failures: tuple = ()

    @property
    def columns(self) -> list[str]:
        return self.plan.columns

    def to_frame(self) -> Any:
        """The rows as a pandas DataFrame (pandas must be installed)."""
        import pandas as pd
        return pd.DataFrame(list(self.rows), columns=self.columns)


def _row(plan: SweepPlan, i: int, value: Any) -> dict:
    row = {"index": i, "key": plan.keys[i], **plan.points[i]}
    if isinstance(value, TaskFailure):
        row.update({name: None for name, _ in plan.results}, seconds=None,
                   error=value.describe())
    else:
        row.update(value, error=None)
    return row


def _resumed(plan: SweepPlan, table: TableFile) -> dict[int, dict]:
    """The finished rows of ``table`` by point, decoded; rows with an error are run
    again; a key that is not a point of this sweep is refused."""
    where = {key: i for i, key in enumerate(plan.keys)}
    out = {}
    for raw in table.existing:
        key = raw.get("key")
        if key not in where:
            raise SweepError(f"output: {table.path} holds a row (key {key!r}) that is no "
                             f"point of this sweep; resume only the sweep that wrote it")
        if raw.get("error") not in (None, ""):
            continue
        i = where[key]
        value = {name: decode_value(raw.get(name), kind) for name, kind in plan.results}
        value["seconds"] = decode_value(raw.get("seconds"), float)
        out[i] = _row(plan, i, value)
    return out


def run_sweep(spec: "Mapping[str, Any] | SweepPlan", *,
              output: "str | os.PathLike | None" = None, resume: bool = False,
              overwrite: bool = False, engine: Optional[Engine] = None, seed: int = 0,
              on_error: str = "raise", progress: Any = False) -> SweepResult:
    """Run every point of ``spec`` (a dict, or a ``SweepPlan``) on ``engine``.

    ``output``: a ``.csv`` or ``.jsonl`` file the rows are streamed to as they finish
    and which is rewritten in grid order at the end; ``resume``: skip the points
    whose rows are already in ``output``; ``overwrite``: start ``output`` afresh.
    ``on_error``: ``"raise"`` (a ``TaskError`` naming the configuration; the rows
    written so far stay) or ``"record"``. ``progress``: True for a report on stderr.
    """
    t0 = time.perf_counter()
    plan = spec if isinstance(spec, SweepPlan) else plan_sweep(spec)
    if resume and output is None:
        raise ValueError("resume needs an output file to resume from")
    table = TableFile(output, plan.columns, resume=resume, overwrite=overwrite) \
        if output is not None else None
    try:
        done = _resumed(plan, table) if table is not None else {}
        rows: list = [done.get(i) for i in range(len(plan))]
        todo = [i for i in range(len(plan)) if i not in done]

        def on_result(k: int, value: Any) -> None:
            i = todo[k]
            rows[i] = _row(plan, i, value)
            if table is not None:
                table.append(rows[i])

        results = map_tasks(run_point, [plan.tasks[i] for i in todo], engine=engine,
                            seed=seed, indices=todo, on_result=on_result,
                            on_error=on_error, progress=progress, label="sweep")
    finally:
        if table is not None:
            table.close()
    if table is not None:
        table.rewrite(rows)
    failures = tuple(r for r in results if isinstance(r, TaskFailure))
    return SweepResult(plan, tuple(rows), len(todo), len(done),
                       time.perf_counter() - t0, failures)


# --------------------------------------------------------------- from TOML
def load_sweep(path: "str | os.PathLike") -> dict:
    """A sweep from a TOML file: a regular UTF-8 file of at most 1 MiB (as a workload
    file; a FIFO or a device is refused before it is opened). Only parsed, never
    executed."""
    import tomllib
    source = str(path)
    try:
        info = os.stat(path)
        if not stat.S_ISREG(info.st_mode):
            raise SweepError(f"{source}: cannot read the sweep file (not a regular file)")
        if info.st_size > MAX_WORKLOAD_BYTES:
            raise SweepError(f"{source}: sweep file too large ({info.st_size} bytes; at "
                             f"most {MAX_WORKLOAD_BYTES})")
        with open(path, "rb") as fh:
            raw = fh.read(MAX_WORKLOAD_BYTES + 1)
    except OSError as exc:
        raise SweepError(f"{source}: cannot read the sweep file "
                         f"({exc.strerror or type(exc).__name__})") from None
    try:
        return tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise SweepError(f"{source}: not a UTF-8 text file (byte {exc.start})") from None
    except tomllib.TOMLDecodeError as exc:
        raise SweepError(f"{source}: invalid TOML: {exc}") from None
    except RecursionError:
        raise SweepError(f"{source}: invalid TOML: nested too deeply") from None

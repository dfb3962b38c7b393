"""Sweeps: ε, δ or a calibration at every point of a grid, run on any engine.

A sweep is a dict (from TOML, ``load_sweep``, or built in Python) with the query, a
base workload in the workload format (``accounting.workload``) — or several
(``workload``, for heterogeneous compositions) — and a ``grid`` of axes whose
Cartesian product gives the points:

    query = "calibrate"        # "epsilon" (default), "delta" or "calibrate"
    accountant = "pld"         # "pld" (default), "rdp" or "zcdp"
    solve = "sigma"            # calibrate: the parameter solved for
    epsilon = 1.0              # the target (calibrate) or the ε of a "delta" query
    delta = 1e-5               # the δ of an "epsilon" query, or of the target; a list
                               # (delta = [1e-5, 1e-6]) is an axis, as under [grid]
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
import time
from collections.abc import Mapping, Sequence
from typing import Any

import attrs
import numpy as np

from accounting.accountant import ACCOUNTANTS
from accounting.analysis.calibration import DEFAULT_RTOL, calibrate_workload
from accounting.curves.pld import DEFAULT_STEP
from accounting.parallel.configs import (
    NUMERICAL,
    UPPER,
    answer,
    calibration_terms,
    check_config,
    config_digest,
    mechanism_parameters,
)
from accounting.parallel.executor import Engine, TaskFailure, map_tasks
from accounting.parallel.table import TableFile, check_output, decode_value
from accounting.validation import check_depth
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
    solve: str | None
    axes: tuple[Any, ...]              # ((name, (values…)), …) in grid order
    points: tuple[Any, ...]            # per point: {axis: value}
    tasks: tuple[Any, ...]             # per point: the task configuration
    keys: tuple[Any, ...]              # per point: the digest of its task (16 hex digits)

    @property
    def results(self) -> tuple[Any, ...]:
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


def _axis_values(name: str, values: Any) -> tuple[Any, ...]:
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


def _workloads(spec: Mapping[str, Any]) -> list[tuple[str, dict[str, Any]]]:
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


def _entries(label: str, workload: dict[str, Any]) -> list[Any]:
    entries = workload["mechanism"]
    where = f"workload {label!r}" if label else "the workload"
    if not isinstance(entries, list) or not entries or \
            not all(isinstance(e, Mapping) and isinstance(e.get("name"), str) for e in entries):
        raise SweepError(f"{where}: 'mechanism' must be a non-empty list of tables, each with "
                         f"a name")
    return entries


def _targets(axis: str, label: str, entries: list[Any]) -> list[int]:
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


#: query values that may be listed at the top level (each value a point of the grid)
_LISTABLE = ("delta", "epsilon")


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
    try:
        check_depth(spec, "the sweep")
    except ValueError as exc:
        raise SweepError(str(exc)) from None
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
    grid = spec.get("grid", {})
    if not isinstance(grid, Mapping):
        raise SweepError(f"grid must be a table of axes, got {type(grid).__name__}")
    # a list of query values at the top level, as a workload file takes them
    # (``delta = [1e-5, 1e-6]``), is an axis of the grid: one point per value
    listed = [k for k in _LISTABLE if k in spec and k in settable
              and isinstance(spec[k], (list, tuple, np.ndarray))]
    for key in listed:
        if key in grid:
            raise SweepError(f"{key}: give its values once, at the top level or under [grid]")
    if listed:
        grid = {**{k: spec[k] for k in listed}, **grid}
    fixed = {k: _single(spec, k) for k in settable if k in spec and k not in listed}
    fixed.setdefault("accountant", "pld")
    workloads = _workloads(spec)
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
    points: list[dict[str, Any]] = []
    tasks: list[dict[str, Any]] = []
    keys: list[str] = []
    first: dict[str, int] = {}
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


def _task(query: str, solve: str | None, rtol: Any, workload: dict[str, Any], values: dict[str, Any],
          index: int) -> dict[str, Any]:
    """The task of one point, checked now so that a bad value fails before any work."""
    accountant = values["accountant"]
    if accountant not in ACCOUNTANTS:
        raise SweepError(f"point {index}: accountant must be one of "
                         f"{', '.join(ACCOUNTANTS)}, got {accountant!r}")
    workload.update(values)
    task: dict[str, Any] = {"query": query, "workload": workload}
    try:
        if query == "calibrate":
            assert solve is not None   # the plan refused a calibrate sweep without one
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
def run_point(task: Mapping[str, Any], seed: Any = None) -> dict[str, Any]:
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
    rows: tuple[Any, ...] = attrs.field(repr=False)
    computed: int
    resumed: int
    seconds: float
    failures: tuple[Any, ...] = ()

    @property
    def columns(self) -> list[str]:
        return self.plan.columns

    def to_frame(self) -> Any:
        """The rows as a pandas DataFrame (pandas must be installed)."""
        import pandas as pd
        return pd.DataFrame(list(self.rows), columns=self.columns)


def _row(plan: SweepPlan, i: int, value: Any) -> dict[str, Any]:
    row = {"index": i, "key": plan.keys[i], **plan.points[i]}
    if isinstance(value, TaskFailure):
        row.update({name: None for name, _ in plan.results}, seconds=None,
                   error=value.describe())
    else:
        row.update(value, error=None)
    return row


def _resumed(plan: SweepPlan, table: TableFile) -> dict[int, dict[str, Any]]:
    """The finished rows of ``table`` by point, decoded and checked as strictly as
    fresh input; rows with an error, and rows whose answer is +∞ (a true answer for a
    non-private point, but one that a damaged file could also hold), are run again.
    A row that is no point of this sweep — its ``key`` is the digest of the point's
    whole task (query, workload, accountant, δ or ε, step), so a row written by
    another sweep, or for other values, has another key — or whose ``index`` or axis
    values are not that point's, or whose answer is not a number in range, is refused
    naming the file and the line: resume only the sweep that wrote the file."""
    where = {key: i for i, key in enumerate(plan.keys)}
    out = {}
    for raw, line in zip(table.existing, table.lines):
        at = f"output: {table.path} line {line}"
        key = raw.get("key")
        if not isinstance(key, str) or key not in where:
            raise SweepError(f"{at} holds a row (key {key!r:.40}) that is no point of this "
                             f"sweep; resume only the sweep that wrote it")
        i = where[key]
        try:
            value = _checked_row(plan, i, raw, table)
        except (TypeError, ValueError) as exc:
            raise SweepError(f"{at}: {exc}; cannot resume it (rerun with --overwrite to "
                             f"start afresh)") from None
        if value is not None:
            out[i] = _row(plan, i, value)
    return out


def _checked_row(plan: SweepPlan, i: int, raw: Mapping[str, Any],
                 table: TableFile) -> dict[str, Any] | None:
    """The answer columns and ``seconds`` of a row read back for point ``i``, None if
    the point is to be run again; a ValueError naming the column otherwise."""
    def get(name: str, kind: type) -> Any:
        try:
            return decode_value(raw.get(name), kind)
        except ValueError as exc:
            raise ValueError(f"{name}: {exc}") from None

    if get("index", int) != i:
        raise ValueError(f"index is {raw.get('index')!r:.40}, but key {plan.keys[i]} is "
                         f"point {i}")
    for name, value in plan.points[i].items():
        if raw.get(name) != table.field(value):
            raise ValueError(f"{name} is {raw.get(name)!r:.40}, but point {i} has {name} = "
                             f"{value!r:.40}")
    if get("error", str) is not None:
        return None
    value = {name: get(name, kind) for name, kind in (*plan.results, ("seconds", float))}
    workload = plan.tasks[i]["workload"]
    # the range of each answer column: (low, high, may it be missing?)
    ranges = {"epsilon": (0.0, math.inf, False), "delta": (0.0, 1.0, False),
              "value": (0.0, math.inf, False), "bracket_low": (0.0, math.inf, False),
              "epsilon_at_value": (0.0, workload.get("epsilon", math.inf), False),
              "order": (1.0, math.inf, True), "evaluations": (1, math.inf, False),
              "seconds": (0.0, math.inf, False)}
    for name, (lo, hi, optional) in ranges.items():
        if name not in value:
            continue
        x = value[name]
        if x is None:
            if optional:
                continue
            raise ValueError(f"{name} is missing")
        if x == math.inf and name == plan.query == "epsilon":
            return None          # +∞ may be the answer: computed again, not trusted
        if math.isnan(x) or not lo <= x <= hi:
            raise ValueError(f"{name} is {x!r}, not a number in [{lo:g}, {hi:g}]")
        if x == math.inf and name != "order":
            raise ValueError(f"{name} is inf; it must be finite")
    if plan.query == "calibrate" and not value["bracket_low"] < value["value"]:
        raise ValueError(f"bracket_low {value['bracket_low']!r} is not below value "
                         f"{value['value']!r}")
    if value["label"] not in (UPPER, NUMERICAL):
        raise ValueError(f"label is {value['label']!r:.40}, not {UPPER!r} or {NUMERICAL!r}")
    return value


def run_sweep(spec: Mapping[str, Any] | SweepPlan, *,
              output: str | os.PathLike[str] | None = None, resume: bool = False,
              overwrite: bool = False, engine: Engine | None = None, seed: int = 0,
              on_error: str = "raise", progress: Any = False) -> SweepResult:
    """Run every point of ``spec`` (a dict, or a ``SweepPlan``) on ``engine``.

    ``output``: a ``.csv`` or ``.jsonl`` file the rows are streamed to as they finish
    and which is rewritten in grid order at the end; ``resume``: skip the points
    whose rows are already in ``output``; ``overwrite``: start ``output`` afresh.
    ``on_error``: ``"raise"`` (a ``TaskError`` naming the configuration; the rows
    written so far stay) or ``"record"``. ``progress``: True for a report on stderr.
    """
    t0 = time.perf_counter()
    if resume and output is None:
        raise ValueError("resume needs an output file to resume from")
    if output is not None:
        check_output(output)     # before the plan, which may take a while
    plan = spec if isinstance(spec, SweepPlan) else plan_sweep(spec)
    table = TableFile(output, plan.columns, resume=resume, overwrite=overwrite) \
        if output is not None else None
    try:
        done = _resumed(plan, table) if table is not None else {}
        rows: list[Any] = [done.get(i) for i in range(len(plan))]
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
def load_sweep(path: str | os.PathLike[str]) -> dict[str, Any]:
    """A sweep from a TOML file: a regular UTF-8 file of at most 1 MiB (as a workload
    file; a FIFO or a device is refused before it is opened). Only parsed, never
    executed."""
    import tomllib

    from accounting.serialization import read_text_file
    source = str(path)
    try:
        text = read_text_file(path, MAX_WORKLOAD_BYTES, "the sweep file", "TOML file")
    except ValueError as exc:
        raise SweepError(str(exc)) from None
    try:
        check_depth(text, source)
        spec = tomllib.loads(text)
        check_depth(spec, source)
    except tomllib.TOMLDecodeError as exc:
        raise SweepError(f"{source}: invalid TOML: {exc}") from None
    except ValueError as exc:
        raise SweepError(str(exc)) from None
    return spec

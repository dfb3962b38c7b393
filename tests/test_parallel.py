"""The parallel layer (accounting.parallel): seeds, engines, failures, sweeps, tables,
per-ledger accounting and the ``accounting sweep`` command — serial and on real local
process pools (the Dask tests are in test_parallel_dask.py)."""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import csv
import io
import json
import math

import numpy as np
import pytest
from scipy.stats import norm

import parallel_cases as pc
from accounting.analysis.calibration import calibrate_workload
from accounting.cli import main
from accounting.parallel import (Engine, EngineError, TaskError, TaskFailure, account_ledgers,
                                 load_sweep, map_tasks, plan_sweep, run_sweep)
from accounting.parallel.configs import build_accountant, calibration_terms, config_digest
from accounting import progress as progress_module
from accounting.parallel.seeds import task_seed
from accounting.parallel.sweep import SweepError
from accounting.workload import workload_from_dict


@pytest.fixture(scope="module")
def pool():
    """One real process pool shared by the tests that do not need their own."""
    from accounting.parallel.executor import _mp_context
    with cf.ProcessPoolExecutor(max_workers=2, mp_context=_mp_context()) as executor:
        yield executor


def _cli(argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(argv)
    return status, out.getvalue(), err.getvalue()


def _strip(rows):
    return [{k: v for k, v in r.items() if k != "seconds"} for r in rows]


# ------------------------------------------------------------------ seeds
def test_task_seed_is_the_spawned_child():
    children = np.random.SeedSequence(1234).spawn(6)
    for i, child in enumerate(children):
        assert np.array_equal(task_seed(1234, i).generate_state(8), child.generate_state(8))


def test_results_do_not_depend_on_engine_or_chunks(pool):
    configs = [{"n": 4 + k % 3} for k in range(24)]
    serial = map_tasks(pc.draws, configs, seed=99)
    on_pool = map_tasks(pc.draws, configs, seed=99, engine=Engine(executor=pool, chunksize=5))
    with cf.ThreadPoolExecutor(max_workers=50) as threads:
        fifty = map_tasks(pc.draws, configs, seed=99,
                          engine=Engine(executor=threads, chunksize=1))
    assert serial == on_pool == fifty                    # bit-identical, in order
    assert map_tasks(pc.draws, configs, seed=100) != serial


def test_each_task_runs_with_one_blas_thread(pool):
    assert map_tasks(pc.blas_threads, [{}]) == [[1]]
    assert map_tasks(pc.blas_threads, [{}] * 4, engine=Engine(executor=pool)) == [[1]] * 4
    assert map_tasks(pc.blas_threads, [{}], engine=Engine(threads=2)) == [[2]]


# --------------------------------------------------------------- failures
def test_a_failing_task_is_reported_with_its_configuration(pool):
    configs = [{"x": x} for x in range(6)]
    for engine in (Engine(), Engine(executor=pool, chunksize=2)):
        with pytest.raises(TaskError) as info:
            map_tasks(pc.fail_on_three, configs, engine=engine)
        assert info.value.index == 3 and info.value.config == {"x": 3}
        msg = str(info.value)
        assert "\n" not in msg and '{"x": 3}' in msg and "ValueError: x = 3 is refused" in msg
    recorded = map_tasks(pc.fail_on_three, configs, on_error="record",
                         engine=Engine(executor=pool))
    assert [r for k, r in enumerate(recorded) if k != 3] == [0, 2, 4, 8, 10]
    assert isinstance(recorded[3], TaskFailure) and recorded[3].index == 3


MISBEHAVING = [{"x": 0}, {"x": 1, "do": "exit"}, {"x": 2, "do": "interrupt"},
               {"x": 3, "do": "unpicklable"}, {"x": 4}]


def _check_misbehaving(recorded):
    assert recorded[0] == 0 and recorded[4] == 8           # the other tasks' results kept
    failures = recorded[1:4]
    assert all(isinstance(f, TaskFailure) for f in failures), recorded
    assert [(f.index, f.error) for f in failures[:2]] == [(1, "SystemExit"),
                                                          (2, "KeyboardInterrupt")]
    assert failures[0].reason == "the task called sys.exit(3)"
    assert failures[1].reason == "the task raised KeyboardInterrupt"
    assert failures[2].index == 3 and failures[2].config == {"x": 3, "do": "unpicklable"}
    assert "could not be sent back from the worker" in failures[2].reason
    assert "pickle" in failures[2].reason.lower()


def test_exit_interrupt_or_unpicklable_result_is_its_tasks_failure(pool):
    """sys.exit(3), KeyboardInterrupt or an unpicklable result in a worker is a
    TaskFailure/TaskError of that task; the caller survives (before: SystemExit and
    KeyboardInterrupt reached the caller, a lambda result a bare AttributeError)."""
    _check_misbehaving(map_tasks(pc.misbehave, MISBEHAVING, on_error="record",
                                 engine=Engine(workers=2, chunksize=1)))
    # one chunk of all five: the unpicklable chunk is rerun task by task
    _check_misbehaving(map_tasks(pc.misbehave, MISBEHAVING, on_error="record",
                                 engine=Engine(executor=pool, chunksize=5)))
    for k in (1, 2, 3):
        with pytest.raises(TaskError) as info:
            map_tasks(pc.misbehave, [MISBEHAVING[0], MISBEHAVING[k]],
                      engine=Engine(executor=pool, chunksize=2))
        assert info.value.index == 1 and "\n" not in str(info.value)
        assert str(info.value).startswith(f"task 1 failed with {info.value.error}: ")
    # serially: sys.exit is the task's failure; a KeyboardInterrupt in the caller's own
    # thread is its user's Ctrl-C and stops the run
    with pytest.raises(TaskError, match=r"task 1 failed with SystemExit: the task called "
                                        r"sys\.exit\(3\)"):
        map_tasks(pc.misbehave, MISBEHAVING[:2])
    with pytest.raises(KeyboardInterrupt):
        map_tasks(pc.misbehave, [MISBEHAVING[2]])


def test_a_worker_that_dies_once_is_retried(tmp_path):
    configs = [{"x": x} for x in range(5)]
    configs[2].update(die=True, marker=str(tmp_path / "died"))
    out = map_tasks(pc.die_once, configs, engine=Engine(workers=2, chunksize=1))
    assert out == [0, 1, 2, 3, 4] and (tmp_path / "died").exists()


def test_a_worker_that_keeps_dying_is_one_clear_error():
    configs = [{"x": 0}, {"x": 1, "die": True}]
    with pytest.raises(EngineError) as info:
        map_tasks(pc.always_die, configs, engine=Engine(workers=2, chunksize=1, retries=1))
    msg = str(info.value)
    assert "\n" not in msg and "worker died" in msg and "tried 2 times" in msg


def test_a_hung_task_times_out_instead_of_hanging():
    import time
    t0 = time.monotonic()
    with pytest.raises(EngineError, match="no task finished within 1 s"):
        map_tasks(pc.sleepy, [{"sleep": 60}], engine=Engine(workers=2, timeout=1))
    assert time.monotonic() - t0 < 30


@pytest.mark.parametrize("kwargs, match", [
    ({"workers": 2, "scheduler": "tcp://127.0.0.1:8786"}, "at most one of"),
    ({"scheduler": "localhost:8786"}, "PROTOCOL://HOST:PORT"),
    ({"threads": 0}, "threads"),
    ({"workers": 0}, "workers"),
    ({"connect_timeout": -1}, "connect_timeout"),
])
def test_engine_refuses_bad_settings(kwargs, match):
    with pytest.raises(ValueError, match=match):
        Engine(**kwargs)


# ------------------------------------------------------------------ sweeps
def test_epsilon_sweep_matches_the_accountant():
    result = run_sweep(pc.SWEEP)
    assert len(result.rows) == 8 and result.columns[:5] == [
        "index", "key", "workload", "mechanism.1.sigma", "delta"]
    for row in result.rows:
        mechs = [{"name": "gaussian", "sigma": row["mechanism.1.sigma"], "count": 10}]
        if row["workload"] == "mixed":
            mechs.append({"name": "laplace", "b": 2.0, "count": 5})
        acct = workload_from_dict({"mechanism": mechs}).accountant()
        assert row["epsilon"] == float(acct.under("rdp").epsilon(row["delta"]))
        assert row["label"] == "upper bound" and row["error"] is None


def test_delta_sweep_is_the_analytic_gaussian_from_above():
    # k uses of N(0, σ²) with sensitivity 1 are the Gaussian with μ = √k/σ:
    # δ(ε) = Φ(μ/2 − ε/μ) − e^ε Φ(−μ/2 − ε/μ) (Balle & Wang 2018, Thm 8)
    spec = {"query": "delta", "accountant": "pld", "step": 1e-3,
            "mechanism": [{"name": "gaussian", "sigma": 2.0, "count": 16}],
            "grid": {"epsilon": [0.5, 1.0, 2.0]}}
    for row in run_sweep(spec).rows:
        mu, eps = 2.0, row["epsilon"]
        exact = norm.cdf(mu / 2 - eps / mu) - math.exp(eps) * norm.cdf(-mu / 2 - eps / mu)
        assert exact <= row["delta"] <= exact * (1 + 1e-2)


def test_calibrate_sweep_matches_calibrate_workload():
    spec = {"query": "calibrate", "solve": "sigma", "accountant": "rdp", "delta": 1e-5,
            "mechanism": [{"name": "subsampled_gaussian", "q": 0.01, "count": 100},
                          {"name": "laplace", "b": 20.0}],
            "grid": {"epsilon": [2.0]}}
    for row in run_sweep(spec).rows:
        terms = calibration_terms({"mechanism": spec["mechanism"]}, "sigma")
        cal = calibrate_workload(terms, epsilon=row["epsilon"], delta=1e-5, accountant="rdp")
        assert row["value"] == cal.value and row["epsilon_at_value"] == cal.epsilon
        assert row["epsilon_at_value"] <= row["epsilon"] and row["bracket_low"] < row["value"]


@pytest.mark.parametrize("change, match", [
    ({"grid": {}}, "the grid is empty"),
    ({"grid": {"sigma": []}}, "axis 'sigma' is empty"),
    ({"grid": {"sigmaa": [1.0]}}, "unknown parameter 'sigmaa'"),
    ({"grid": {"mechanism.2.sigma": [1.0]}}, "has 1 mechanism"),
    ({"grid": {"sigma": [1.0, 1.0]}}, "twice"),
    ({"grid": {"sigma": [-1.0]}}, "sigma must be"),
    ({"grid": {"epsilon": [1.0]}}, "not a value of 'epsilon' sweep"),
    ({"delta": None}, "needs delta"),
    ({"colour": "red"}, "unknown key 'colour'"),
    ({"query": "maximise"}, "query must be one of"),
    ({"accountant": "prv"}, "accountant must be one of"),
])
def test_bad_sweeps_are_refused_before_running(change, match):
    spec = {"query": "epsilon", "delta": 1e-5, "accountant": "rdp",
            "mechanism": [{"name": "gaussian", "sigma": 1.0}], "grid": {"sigma": [1.0, 2.0]}}
    spec.update(change)
    spec = {k: v for k, v in spec.items() if v is not None}
    with pytest.raises(SweepError, match=match):
        plan_sweep(spec)


def test_task_configurations_are_plain_json_of_a_few_hundred_bytes():
    plan = plan_sweep(pc.SWEEP)
    for task, key in zip(plan.tasks, plan.keys):
        text = json.dumps(task)
        assert len(text) < 400 and json.loads(text) == task
        assert config_digest(task)[:16] == key
    assert build_accountant(plan.tasks[0]["workload"]).count == 10


def test_an_interrupted_sweep_keeps_its_rows_and_resumes(tmp_path):
    out = tmp_path / "rows.csv"
    with pytest.raises(TaskError, match="sigma\": 0.01"):
        run_sweep(pc.FAILING_SWEEP, output=out)
    kept = list(csv.DictReader(out.open()))
    assert [r["sigma"] for r in kept] == ["1.0"]                 # streamed before the failure
    # a resumed sweep skips the finished row; the failing point is run (and fails) again
    with pytest.raises(TaskError):
        run_sweep(pc.FAILING_SWEEP, output=out, resume=True)
    recorded = run_sweep(pc.FAILING_SWEEP, output=out, resume=True, on_error="record")
    assert recorded.resumed == 1 and recorded.computed == 2 and len(recorded.failures) == 1
    assert recorded.rows[1]["error"].startswith("GridSizeError: discretising")


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
def test_resume_after_a_cut_gives_the_same_table(tmp_path, suffix):
    full = run_sweep(pc.SWEEP, output=tmp_path / f"full{suffix}")
    cut = tmp_path / f"cut{suffix}"
    lines = (tmp_path / f"full{suffix}").read_text().splitlines(keepends=True)
    head = 1 if suffix == ".csv" else 0
    cut.write_text("".join(lines[:head + 3]) + lines[head + 3][:10])   # a torn last line
    resumed = run_sweep(pc.SWEEP, output=cut, resume=True)
    assert resumed.resumed == 3 and resumed.computed == 5
    assert _strip(resumed.rows) == _strip(full.rows)
    again = run_sweep(pc.SWEEP, output=cut, resume=True)
    assert again.computed == 0 and _strip(again.rows) == _strip(full.rows)
    with pytest.raises(ValueError, match="exists; pass resume"):
        run_sweep(pc.SWEEP, output=cut)
    other = dict(pc.SWEEP, grid={"mechanism.1.sigma": [3.0], "delta": [1e-5]})
    with pytest.raises(SweepError, match="no point of this sweep"):
        run_sweep(other, output=cut, resume=True)


def test_sweep_on_a_process_pool_equals_serial(pool):
    serial = run_sweep(pc.SWEEP)
    assert _strip(run_sweep(pc.SWEEP, engine=Engine(executor=pool)).rows) == _strip(serial.rows)


def test_sweep_as_a_dataframe():
    pd = pytest.importorskip("pandas")
    result = run_sweep(pc.SWEEP)
    frame = result.to_frame()
    assert isinstance(frame, pd.DataFrame) and list(frame.columns) == result.columns
    assert frame["epsilon"].tolist() == [r["epsilon"] for r in result.rows]


# ----------------------------------------------------------------- ledgers
def test_ledgers_are_accounted_once_and_every_row_answered(pool):
    rows = pc.ledgers()
    answers = account_ledgers(rows, delta=[1e-5, 1e-6], accountant="rdp")
    assert answers.rows == 600 and answers.distinct == 6
    table = answers.answers()
    expected = {}
    for r, ledger in enumerate(rows):
        key = json.dumps(ledger, sort_keys=True)
        if key not in expected:
            acct = workload_from_dict(ledger).accountant()
            expected[key] = acct.under("rdp").epsilon(np.array([1e-5, 1e-6]))
        assert np.array_equal(table[r], expected[key])
    assert len(expected) == 6
    on_pool = account_ledgers(rows, delta=[1e-5, 1e-6], accountant="rdp",
                              engine=Engine(executor=pool))
    assert np.array_equal(on_pool.answers(), table)


def test_a_bad_ledger_is_named_by_its_row():
    rows = pc.ledgers(rows=10) + [{"mechanism": [{"name": "gaussian", "sigma": -1.0}]}]
    with pytest.raises(ValueError, match="ledger of row 10"):
        account_ledgers(rows, delta=1e-5)
    with pytest.raises(ValueError, match="exactly one of delta"):
        account_ledgers(rows, delta=1e-5, epsilon=1.0)
    with pytest.raises(ValueError, match="ledgers is empty"):
        account_ledgers([], delta=1e-5)


# ---------------------------------------------------------------- progress
def test_progress_counts_and_estimates_the_time_left(monkeypatch):
    monkeypatch.setattr(progress_module, "_tqdm", lambda: None)     # the plain-text lines
    buf = io.StringIO()
    bar = progress_module.progress(total=4, desc="sweep", enabled=True, delay=0.0,
                                   stream=buf, interval=0.0)
    for _ in range(4):
        bar.update()
    lines = buf.getvalue().splitlines()
    assert lines[0].startswith("sweep: 1/4 done") and "left" in lines[0]
    assert lines[-1].startswith("sweep: 4/4 done") and "left" not in lines[-1]


# --------------------------------------------------------------------- CLI
def _write(tmp_path, text):
    path = tmp_path / "sweep.toml"
    path.write_text(text)
    return str(path)


_TOML = """query = "epsilon"
accountant = "rdp"
delta = 1e-5
[[mechanism]]
name = "gaussian"
sigma = 1.0
count = 10
[grid]
sigma = [1.0, 2.0]
"""


def test_cli_sweep_prints_the_table_and_streams_to_a_file(tmp_path):
    path = _write(tmp_path, _TOML)
    status, out, err = _cli(["sweep", path])
    assert status == 0, err
    rows = list(csv.DictReader(io.StringIO(out)))
    expected = run_sweep(load_sweep(path)).rows
    assert [float(r["epsilon"]) for r in rows] == [r["epsilon"] for r in expected]
    status, out, _ = _cli(["sweep", path, "--json"])
    assert status == 0 and [r["epsilon"] for r in json.loads(out)] == \
        [r["epsilon"] for r in expected]
    target = str(tmp_path / "rows.jsonl")
    status, out, _ = _cli(["sweep", path, "--output", target])
    assert status == 0 and "2 rows" in out and "2 computed" in out
    status, out, _ = _cli(["sweep", path, "--output", target, "--resume"])
    assert status == 0 and "0 computed, 2 resumed" in out


@pytest.mark.parametrize("text, extra, match", [
    (_TOML.replace("sigma = [1.0, 2.0]", ""), [], "the grid is empty"),
    (_TOML.replace("sigma = [1.0, 2.0]", "sigma = []"), [], "axis 'sigma' is empty"),
    (_TOML.replace("sigma = [1.0, 2.0]", "sigmaa = [1.0]"), [], "unknown parameter 'sigmaa'"),
    (_TOML, ["--workers", "2", "--scheduler", "tcp://127.0.0.1:1"], "not allowed with"),
    (_TOML, ["--scheduler", "127.0.0.1:8786"], "PROTOCOL://HOST:PORT"),
    (_TOML, ["--resume"], "--resume needs --output"),
    (_TOML, ["--output", "rows.txt"], "must end in .csv or .jsonl"),
    ("query = [", [], "invalid TOML"),
])
def test_cli_sweep_bad_input_is_one_line_and_status_2(tmp_path, text, extra, match):
    status, out, err = _cli(["sweep", _write(tmp_path, text), *extra])
    assert status == 2 and out == ""
    assert len(err.splitlines()) == 1 and err.startswith("accounting: error:") and match in err


def test_cli_sweep_names_the_failing_point(tmp_path):
    text = """query = "epsilon"
delta = 1e-5
step = 1e-4
[[mechanism]]
name = "gaussian"
sigma = 1.0
[grid]
sigma = [1.0, 0.01]
"""
    target = tmp_path / "rows.csv"
    status, _, err = _cli(["sweep", _write(tmp_path, text), "--output", str(target)])
    assert status == 2 and len(err.splitlines()) == 1
    assert "task 1 failed" in err and '"sigma": 0.01' in err and "--resume continues" in err
    status, _, err = _cli(["sweep", _write(tmp_path, text), "--output", str(target),
                           "--resume", "--keep-going"])
    assert status == 2 and "1 of 2 points failed" in err


# ---------------------------------------------------------- audit sampling
def test_distributed_audit_on_a_pool_equals_serial(pool):
    campaign = pytest.importorskip("accounting_rkrd.campaign")
    d0, d1 = np.zeros(3), np.array([3.0, 0.0, 0.0])
    kwargs = dict(n=200, epsilon=0.05, delta=1e-5, seed=3)
    serial = campaign.audit_distributed(pc.mechanism, d0, d1, **kwargs)
    on_pool = campaign.audit_distributed(pc.mechanism, d0, d1, **kwargs,
                                         engine=Engine(executor=pool, chunksize=25))
    strip = lambda r: {k: v for k, v in r.to_dict().items() if k != "seconds"}  # noqa: E731
    assert strip(serial) == strip(on_pool)
    assert serial.rejected                   # Δ = 3, σ = 1 is far from 0.05-DP
    with pytest.raises(ValueError, match=r"raised RuntimeError on d1 \(draw 1 of 200\)"):
        campaign.audit_distributed(pc.broken_mechanism, d0, d1, **kwargs)


def test_allocator_is_tuned_only_where_dask_froze_it(monkeypatch):
    import sys
    from accounting.parallel import malloc
    monkeypatch.setattr(malloc, "_done", False)
    monkeypatch.delenv("MALLOC_TRIM_THRESHOLD_", raising=False)
    assert malloc.tune_allocator() is False and malloc._done is False
    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "65536")
    assert malloc.tune_allocator() is sys.platform.startswith("linux")
    assert malloc.tune_allocator() is False               # once per process


def test_a_sweep_takes_a_list_of_query_values_as_a_workload_file_does():
    """``delta = [1e-5, 1e-6]`` at the top level is an axis of the grid (issue 28): a
    workload file takes the same form, and each point answers one δ."""
    base = {"mechanism": [{"name": "gaussian", "sigma": 2.0, "count": 10}]}
    listed = plan_sweep({**base, "delta": [1e-5, 1e-6], "grid": {"count": [10, 20]}})
    gridded = plan_sweep({**base, "grid": {"delta": [1e-5, 1e-6], "count": [10, 20]}})
    assert listed.axes == gridded.axes and listed.keys == gridded.keys and len(listed) == 4
    only = run_sweep({**base, "delta": [1e-5, 1e-6]})
    for row, delta in zip(only.rows, (1e-5, 1e-6)):
        acct = workload_from_dict(base).accountant()
        assert row["delta"] == delta
        assert row["epsilon"] == pytest.approx(float(acct.epsilon(delta)), rel=1e-9)
    with pytest.raises(SweepError, match="delta: give its values once"):
        plan_sweep({**base, "delta": [1e-5], "grid": {"delta": [1e-6]}})
    with pytest.raises(SweepError, match="epsilon is not a value"):
        plan_sweep({**base, "epsilon": [1.0, 2.0], "grid": {"count": [1]}})

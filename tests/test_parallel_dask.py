"""The parallel layer on a real Dask cluster: a ``LocalCluster`` of two worker
processes, started and stopped here, runs a sweep, a per-user accounting and an
audit campaign; each equals the serial run bit for bit. A failing task is named by
its configuration, a worker that dies and a scheduler that cannot be reached are one
clear error. Skipped when the ``distributed`` extra is absent."""

from __future__ import annotations

import contextlib
import io
import time

import numpy as np
import pytest

distributed = pytest.importorskip("dask.distributed")

import parallel_cases as pc  # noqa: E402
from accounting.cli import main  # noqa: E402
from accounting.parallel import (Engine, EngineError, TaskError, account_ledgers,  # noqa: E402
                                 map_tasks, run_sweep)


@pytest.fixture(scope="module")
def cluster():
    import dask
    # one retry after a worker dies (Dask's default is three): the death test stays short
    with dask.config.set({"distributed.scheduler.allowed-failures": 1}):
        cluster = distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1,
                                           dashboard_address=None)
    client = distributed.Client(cluster, set_as_default=False)
    # load the library and its plugins on both workers at once, before the timed tests
    from accounting.registry.registry import default_registry
    client.run(default_registry)
    try:
        yield cluster, client
    finally:
        client.close()
        cluster.close()


def _strip(rows):
    return [{k: v for k, v in r.items() if k != "seconds"} for r in rows]


def test_sweep_on_dask_equals_serial(cluster, tmp_path):
    _, client = cluster
    serial = run_sweep(pc.SWEEP)
    on_dask = run_sweep(pc.SWEEP, engine=Engine(client=client, chunksize=1),
                        output=tmp_path / "rows.csv")
    assert _strip(on_dask.rows) == _strip(serial.rows)


def test_cli_sweep_on_a_scheduler_address(cluster, tmp_path):
    scheduler, _ = cluster
    path = tmp_path / "sweep.toml"
    path.write_text('query = "epsilon"\naccountant = "rdp"\ndelta = 1e-5\n'
                    '[[mechanism]]\nname = "gaussian"\nsigma = 1.0\ncount = 10\n'
                    '[grid]\nsigma = [1.0, 2.0, 4.0]\n')
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(["sweep", str(path), "--scheduler", scheduler.scheduler_address,
                       "--json"])
    assert status == 0, err.getvalue()
    serial = io.StringIO()
    with contextlib.redirect_stdout(serial):
        assert main(["sweep", str(path), "--json"]) == 0
    import json
    strip = lambda text: [{k: v for k, v in r.items() if k != "seconds"}  # noqa: E731
                          for r in json.loads(text)]
    assert strip(out.getvalue()) == strip(serial.getvalue())


def test_per_user_accounting_on_dask_equals_serial(cluster):
    _, client = cluster
    rows = pc.ledgers(rows=2000, distinct=8)
    serial = account_ledgers(rows, delta=1e-5, accountant="rdp")
    on_dask = account_ledgers(rows, delta=1e-5, accountant="rdp",
                              engine=Engine(client=client))
    assert on_dask.distinct == 8 and np.array_equal(on_dask.answers(), serial.answers())
    assert on_dask.digests == serial.digests


def test_random_tasks_are_bit_identical_on_1_2_or_50_workers(cluster):
    _, client = cluster
    import concurrent.futures as cf
    configs = [{"n": 3 + k % 4} for k in range(30)]
    serial = map_tasks(pc.draws, configs, seed=2024)
    with cf.ThreadPoolExecutor(max_workers=50) as fifty:
        assert map_tasks(pc.draws, configs, seed=2024,
                         engine=Engine(executor=fifty, chunksize=1)) == serial
    assert map_tasks(pc.draws, configs, seed=2024,
                     engine=Engine(client=client, chunksize=3)) == serial


def test_audit_campaign_on_dask_equals_serial(cluster):
    campaign = pytest.importorskip("accounting_rkrd.campaign")
    _, client = cluster
    d0, d1 = np.zeros(3), np.array([3.0, 0.0, 0.0])
    engine = Engine(client=client, chunksize=4)
    # the mechanism's 2n calls spread over the workers: the same samples
    x, y = campaign.distributed_samples(pc.mechanism, d0, d1, n=40, seed=7)
    xd, yd = campaign.distributed_samples(pc.mechanism, d0, d1, n=40, seed=7, engine=engine)
    assert np.array_equal(x, xd) and np.array_equal(y, yd)
    assert np.allclose(x.mean(axis=0), 0.0, atol=0.6) and np.allclose(
        y.mean(axis=0), [3.0, 0.0, 0.0], atol=0.6)
    # a grid of audits × replicates, one audit per task
    grid = [{"epsilon": 1.0, "delta": 1e-5}, {"epsilon": 0.05, "delta": 1e-5, "alphas": [2.0]}]
    serial = campaign.audit_campaign(pc.mechanism, d0, d1, grid=grid, n=200, replicates=2,
                                     seed=11)
    on_dask = campaign.audit_campaign(pc.mechanism, d0, d1, grid=grid, n=200, replicates=2,
                                      seed=11, engine=Engine(client=client, chunksize=1))
    assert _strip(on_dask.rows) == _strip(serial.rows) and len(serial.rows) == 4
    # Δ = 3, σ = 1: a Gaussian that is far from 0.05-DP is rejected in every replicate
    assert serial.rejection_rate(1) == 1.0
    # bootstrap replicates on the workers
    import accounting
    ref = accounting.mechanism("gaussian", sigma=1.0)
    b1 = campaign.bootstrap_distributed(x, y, mechanism=ref, shift=[3.0, 0, 0], n_boot=6,
                                        seed=5)
    b2 = campaign.bootstrap_distributed(x, y, mechanism=ref, shift=[3.0, 0, 0], n_boot=6,
                                        seed=5, engine=engine)
    assert np.array_equal(b1.replicates, b2.replicates) and b1.p_value == b2.p_value


def test_a_failing_task_on_dask_names_its_configuration(cluster):
    _, client = cluster
    with pytest.raises(TaskError) as info:
        run_sweep(pc.FAILING_SWEEP, engine=Engine(client=client, chunksize=1))
    assert info.value.config["workload"]["mechanism"][0]["sigma"] == 0.01
    assert '"sigma": 0.01' in str(info.value) and "\n" not in str(info.value)


def test_unreachable_scheduler_is_one_line_and_status_2(tmp_path):
    path = tmp_path / "sweep.toml"
    path.write_text('delta = 1e-5\n[[mechanism]]\nname = "gaussian"\nsigma = 1.0\n'
                    '[grid]\nsigma = [1.0]\n')
    err = io.StringIO()
    t0 = time.monotonic()
    with contextlib.redirect_stderr(err):
        status = main(["sweep", str(path), "--scheduler", "tcp://127.0.0.1:9",
                       "--connect-timeout", "1"])
    assert status == 2 and len(err.getvalue().splitlines()) == 1
    assert "cannot reach the Dask scheduler at tcp://127.0.0.1:9 within 1 s" in err.getvalue()
    assert time.monotonic() - t0 < 20


def test_a_dask_worker_that_dies_is_one_clear_error(cluster):
    # last in the module: it kills workers (the nannies restart them)
    _, client = cluster
    configs = [{"x": 0}, {"x": 1, "die": True}]
    with pytest.raises(EngineError) as info:
        map_tasks(pc.always_die, configs, engine=Engine(client=client, chunksize=1))
    msg = str(info.value)
    assert "\n" not in msg and "worker died while running task 1" in msg
    assert '"die": true' in msg and "KilledWorker" in msg

"""Scaling out: DP-SGD calibrations on 1 core, 2 local processes and a 2-worker Dask
LocalCluster, with speed-up ratios; and per-user accounting of 10⁶ synthetic users
over 10³ distinct ledgers, end to end.

    python benchmarks/scale.py [--quick] [--accountant pld|rdp] [--workers 2]
                               [--part all|calibrations|ledgers]

Every parallel run is checked to give the serial rows bit for bit (timings aside).
The times are wall-clock on this machine, whatever else runs on it: the load
average is printed beside them.
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np

from accounting.parallel import Engine, account_ledgers, run_sweep
from accounting.parallel.ledgers import group_ledgers
from accounting.parallel.sweep import plan_sweep
from accounting.registry.registry import default_registry


def calibration_sweep(quick: bool, accountant: str) -> dict:
    """4 sampling rates × 4 step counts × 4 targets ε = 64 DP-SGD calibrations of σ
    (Poisson-subsampled Gaussian, δ = 1e-5); 2 × 2 × 2 = 8 with --quick."""
    qs = [256 / 60000, 512 / 60000, 1024 / 60000, 2048 / 60000]
    steps = [3000, 6000, 12000, 24000]
    targets = [1.0, 2.0, 4.0, 8.0]
    if quick:
        qs, steps, targets = qs[:2], steps[:2], targets[:2]
    return {"query": "calibrate", "solve": "sigma", "accountant": accountant, "delta": 1e-5,
            "mechanism": [{"name": "subsampled_gaussian", "q": qs[0], "count": steps[0]}],
            "grid": {"q": qs, "count": steps, "epsilon": targets}}


def _strip(rows):
    return [{k: v for k, v in r.items() if k != "seconds"} for r in rows]


def synthetic_users(n_users: int, n_ledgers: int, seed: int = 0) -> tuple[list, list]:
    """``n_ledgers`` distinct participation histories — k Gaussian releases (σ = 10,
    sensitivity 1) and m Laplace counts (b = 10) — and ``n_users`` rows, each pointing
    at one of them (Zipf-like popularity)."""
    rng = np.random.default_rng(seed)
    ledgers = []
    for j in range(n_ledgers):
        k, m = 1 + j % 40, 1 + j // 40
        ledgers.append({"mechanism": [{"name": "gaussian", "sigma": 10.0, "count": 10 * k},
                                      {"name": "laplace", "b": 10.0, "count": m}]})
    popularity = 1.0 / np.arange(1, n_ledgers + 1)
    ids = rng.choice(n_ledgers, size=n_users, p=popularity / popularity.sum())
    return ledgers, [ledgers[i] for i in ids]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="8 calibrations, 10⁵ users")
    ap.add_argument("--accountant", default="pld", choices=("pld", "rdp"))
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--part", default="all", choices=("all", "calibrations", "ledgers"))
    args = ap.parse_args()
    from dask.distributed import Client, LocalCluster

    w = args.workers
    print(f"cores: {os.cpu_count()}, load average at start: "
          f"{' '.join(f'{v:.1f}' for v in os.getloadavg())}")
    spec = calibration_sweep(args.quick, args.accountant)
    plan = plan_sweep(spec)
    if args.part == "ledgers":
        cluster = LocalCluster(n_workers=w, processes=True, threads_per_worker=1,
                               dashboard_address=None)
        client = Client(cluster, set_as_default=False)
        try:
            ledger_benchmark(args, client)
        finally:
            client.close()
            cluster.close()
        return
    print(f"\n{len(plan)} DP-SGD calibrations of σ under {args.accountant} (δ = 1e-5)")
    t = time.perf_counter()
    serial = run_sweep(plan)
    t_serial = time.perf_counter() - t
    per_task = sum(r["seconds"] for r in serial.rows) / len(plan)
    print(f"  serial                 {t_serial:8.1f} s   ({per_task:.2f} s per calibration)")

    t = time.perf_counter()
    pool = run_sweep(plan, engine=Engine(workers=w, chunksize=1))
    t_pool = time.perf_counter() - t
    assert _strip(pool.rows) == _strip(serial.rows), "process pool differs from serial"
    print(f"  {w} local processes      {t_pool:8.1f} s   speed-up {t_serial / t_pool:.2f}× "
          f"(pool start included)")

    t = time.perf_counter()
    cluster = LocalCluster(n_workers=w, processes=True, threads_per_worker=1,
                           dashboard_address=None)
    client = Client(cluster, set_as_default=False)
    # each worker imports the library and loads its plugins once (seconds): part of
    # starting the cluster, as a long-running cluster has done it before any sweep
    client.run(default_registry)
    t_start = time.perf_counter() - t
    try:
        t = time.perf_counter()
        dask_rows = run_sweep(plan, engine=Engine(client=client, chunksize=1))
        t_dask = time.perf_counter() - t
        assert _strip(dask_rows.rows) == _strip(serial.rows), "Dask differs from serial"
        print(f"  Dask LocalCluster({w})   {t_dask:8.1f} s   speed-up {t_serial / t_dask:.2f}× "
              f"(cluster start and warm-up {t_start:.1f} s not included)")

        sizes = [len(json.dumps(task)) for task in plan.tasks]
        print(f"  bytes sent per calibration task: {min(sizes)}–{max(sizes)} "
              f"(JSON of the configuration)")
        if args.part == "all":
            ledger_benchmark(args, client)
    finally:
        client.close()
        cluster.close()
    print(f"load average at end: {' '.join(f'{v:.1f}' for v in os.getloadavg())}")


def ledger_benchmark(args: argparse.Namespace, client: object) -> None:
    """10⁶ users over 10³ ledgers (10⁵ over 10² with --quick), serial and on Dask."""
    w = args.workers
    n_users = 10 ** 5 if args.quick else 10 ** 6
    n_ledgers = 10 ** 2 if args.quick else 10 ** 3
    ledgers, users = synthetic_users(n_users, n_ledgers)
    print(f"\n{n_users:,} users over {n_ledgers:,} distinct ledgers "
          f"(Gaussian × k + Laplace × m), ε at δ = 1e-5 under rdp")
    t = time.perf_counter()
    one = account_ledgers(users, delta=1e-5, accountant="rdp")
    t_one = time.perf_counter() - t
    print(f"  serial                 {t_one:8.1f} s end to end ({one.distinct} distinct "
          f"accounted, {1e6 * t_one / n_users:.2f} µs per user)")
    t = time.perf_counter()
    two = account_ledgers(users, delta=1e-5, accountant="rdp",
                          engine=Engine(client=client))
    t_two = time.perf_counter() - t
    assert np.array_equal(one.answers(), two.answers()), "Dask ledgers differ"
    print(f"  Dask LocalCluster({w})   {t_two:8.1f} s end to end "
          f"(speed-up {t_one / t_two:.2f}×)")
    copies = [dict(u, mechanism=[dict(e) for e in u["mechanism"]]) for u in users[:10 ** 5]]
    t = time.perf_counter()
    group_ledgers(copies)
    t_hash = time.perf_counter() - t
    print(f"  grouping rows that are separate dicts: {1e6 * t_hash / len(copies):.1f} µs "
          f"per row (canonical JSON + SHA-256)")
    sizes = [len(json.dumps({"ledger": ledger})) for ledger in ledgers]
    print(f"  bytes sent per ledger task: {min(sizes)}–{max(sizes)}")
    print(f"  load average: {' '.join(f'{v:.1f}' for v in os.getloadavg())}")


if __name__ == "__main__":
    main()

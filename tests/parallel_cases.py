"""Task functions and sweeps shared by tests/test_parallel*.py (module-level, so that
a process pool can pickle them by reference)."""

from __future__ import annotations

import os

import numpy as np


def draws(config, seed):
    """Random numbers from the task's seed, and a BLAS product (threads capped)."""
    rng = np.random.default_rng(seed)
    a = rng.normal(size=(config["n"], config["n"]))
    return (a @ a.T).sum() + rng.normal(size=3).sum()


def fail_on_three(config, seed):
    if config["x"] == 3:
        raise ValueError(f"x = 3 is refused (config {config['x']})")
    return config["x"] * 2


def die_once(config, seed):
    """Kills its worker the first time it runs config "die" (a marker file says so)."""
    if config.get("die"):
        marker = config["marker"]
        if not os.path.exists(marker):
            open(marker, "w").close()
            os._exit(3)
    return config["x"]


def always_die(config, seed):
    if config.get("die"):
        os._exit(3)
    return config["x"]


def blas_threads(config, seed):
    from threadpoolctl import threadpool_info
    return sorted({p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"})


def sleepy(config, seed):
    import time
    time.sleep(config["sleep"])
    return config["sleep"]


def mechanism(dataset, rng):
    """A Gaussian mechanism on a 3-vector: the audited black box of the campaign tests."""
    return np.asarray(dataset, dtype=float) + rng.normal(0.0, 1.0, size=3)


#: a small heterogeneous sweep: ε of a Gaussian (RDP) and of a Gaussian + Laplace
SWEEP = {
    "query": "epsilon",
    "accountant": "rdp",
    "workload": [
        {"label": "gauss", "mechanism": [{"name": "gaussian", "sigma": 1.0, "count": 10}]},
        {"label": "mixed", "mechanism": [{"name": "gaussian", "sigma": 1.0, "count": 10},
                                         {"name": "laplace", "b": 2.0, "count": 5}]},
    ],
    "grid": {"mechanism.1.sigma": [1.0, 2.0], "delta": [1e-5, 1e-6]},
}

#: a point whose PLD grid is too large fails at run time (after the checks)
FAILING_SWEEP = {
    "query": "epsilon", "accountant": "pld", "delta": 1e-5, "step": 1e-4,
    "mechanism": [{"name": "gaussian", "sigma": 1.0}],
    "grid": {"sigma": [1.0, 0.01, 2.0]},
}


def ledgers(rows=600, distinct=6):
    """``rows`` users over ``distinct`` ledgers; every other row a separate dict with
    its keys in another order (same digest)."""
    base = [{"mechanism": [{"name": "gaussian", "sigma": 1.0 + 0.5 * k, "count": 1 + k}]}
            for k in range(distinct)]
    out = []
    for r in range(rows):
        ledger = base[(r * 7) % distinct]
        if r % 2:
            entry = ledger["mechanism"][0]
            ledger = {"mechanism": [{"count": entry["count"], "sigma": entry["sigma"],
                                     "name": entry["name"]}]}
        out.append(ledger)
    return out


def broken_mechanism(dataset, rng):
    """Raises on the second dataset (d1 has a non-zero first coordinate)."""
    if dataset[0] != 0:
        raise RuntimeError("the training run crashed")
    return mechanism(dataset, rng)


def misbehave(config, seed):
    """Exits, raises KeyboardInterrupt or returns an unpicklable value, as config says."""
    import sys
    what = config.get("do")
    if what == "exit":
        sys.exit(3)
    if what == "interrupt":
        raise KeyboardInterrupt
    if what == "unpicklable":
        return lambda: config["x"]
    return 2 * config["x"]

"""Noise schedules: N distinct subsampled Gaussians (one step each, q = 0.01, σ evenly
from 0.8 to 2.0), ε at δ = 1e-5, against dp_accounting (PLD, grid 1e-3) and
prv_accountant in one run.

    python benchmarks/noise_schedule.py [--distinct 200] [--large 10000] [--peers-large]

For ``--distinct`` mechanisms every accountant runs: ours exactly (one discretisation
per mechanism, certified bracket) and grouped by dominance (``group=``: the runs of σ
within a relative 1 % and 0.3 %, certified bracket with the price of grouping in it).
For ``--large`` ours runs grouped only: the exact composition is refused by its memory
plan before it allocates (the message is printed). The peers run at ``--large`` only
with ``--peers-large`` (dp_accounting at about 36 ms a distinct mechanism here).
Times are wall-clock on this machine, with the load average beside them.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

import accounting as ac
from accounting.numerics.loss import GridSizeError

Q, DELTA = 0.01, 1e-5


def schedule(n: int) -> np.ndarray:
    return np.linspace(0.8, 2.0, n)


def ours(sigmas: np.ndarray) -> ac.Accountant:
    acct = ac.Accountant()
    for s in sigmas:
        acct.compose(ac.mechanism("subsampled_gaussian", sigma=float(s), q=Q))
    return acct


def dp_accounting_eps(sigmas: np.ndarray) -> float | None:
    try:
        from dp_accounting import dp_event
        from dp_accounting.pld import pld_privacy_accountant
    except ImportError:
        return None
    acc = pld_privacy_accountant.PLDAccountant(value_discretization_interval=1e-3)
    for s in sigmas:
        acc.compose(dp_event.PoissonSampledDpEvent(Q, dp_event.GaussianDpEvent(float(s))))
    return float(acc.get_epsilon(DELTA))


def prv_eps(sigmas: np.ndarray) -> tuple[float, float, float] | None:
    try:
        import prv_accountant
    except ImportError:
        return None
    prvs = [prv_accountant.PoissonSubsampledGaussianMechanism(
        noise_multiplier=float(s), sampling_probability=Q) for s in sigmas]
    acc = prv_accountant.PRVAccountant(prvs=prvs, max_self_compositions=[1] * len(prvs),
                                       eps_error=0.01, delta_error=DELTA / 1000)
    lo, est, hi = acc.compute_epsilon(delta=DELTA, num_self_compositions=[1] * len(prvs))
    return float(lo), float(est), float(hi)


def timed(fn):  # noqa: ANN001, ANN201
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t


def line(name: str, value: str, seconds: float, n: int) -> None:
    print(f"  {name:<40} {value:>34}  {seconds:8.2f} s  {1e3 * seconds / n:8.2f} ms/mech",
          flush=True)


def run(n: int, peers: bool) -> None:
    sigmas = schedule(n)
    print(f"\n{n} distinct σ, q = {Q}, δ = {DELTA:g} (load average "
          f"{os.getloadavg()[0]:.1f})")
    try:
        (lo, hi), t = timed(lambda: ours(sigmas).epsilon_interval(DELTA))
        line("ours, exact: certified [lower, upper]", f"[{lo:.5f}, {hi:.5f}] {hi / lo - 1:.1e}",
             t, n)
    except GridSizeError as exc:
        print(f"  ours, exact: refused before allocating: {exc}")
    for group in (0.01, 0.003):
        acct = ours(sigmas)
        (lo, hi), t = timed(lambda acct=acct, group=group: acct.epsilon_interval(DELTA, group=group))
        runs = acct.grouped(group).distinct_after
        line(f"ours, group={group:g} ({runs} runs)", f"[{lo:.5f}, {hi:.5f}] {hi / lo - 1:.1e}",
             t, n)
    if not peers:
        print("  (peers not run at this size: --peers-large)")
        return
    e, t = timed(lambda: dp_accounting_eps(sigmas))
    if e is None:
        print("  dp_accounting not installed")
    else:
        line("dp_accounting PLD, grid 1e-3", f"{e:.5f}", t, n)
    r, t = timed(lambda: prv_eps(sigmas))
    if r is None:
        print("  prv_accountant not installed")
    else:
        line("prv_accountant (eps_error 0.01)", f"{r[1]:.5f} [{r[0]:.5f}, {r[2]:.5f}]", t, n)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--distinct", type=int, default=200)
    ap.add_argument("--large", type=int, default=10_000)
    ap.add_argument("--peers-large", action="store_true")
    args = ap.parse_args()
    print(f"cores: {os.cpu_count()}")
    run(args.distinct, True)
    run(args.large, args.peers_large)


if __name__ == "__main__":
    main()

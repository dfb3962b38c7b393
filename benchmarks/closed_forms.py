"""Closed forms against the grid: all-Gaussian compositions answered exactly as μ-GDP.

For each job, times in one run (best of ``--repeats``):

- ``closed``: ``Accountant.epsilon_interval`` — the exact √(Σkμ²)-GDP profile
  (Balle, Wang, arXiv:1805.06530, Thm. 8; Dong, Roth, Su, arXiv:1905.02383, Cor. 3.3);
- ``grid``: the same accountant's certified PLD bracket (``acct.curve(PLD)``), what
  answered before the closed form;
- ``dp_accounting``: its PLD accountant at grid 1e-3 (when installed).

and prints ε(1e-5), each time, and the ratios grid/closed and dp_accounting/closed.

    python benchmarks/closed_forms.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import functools
import time
from collections.abc import Callable
from typing import Any

import accounting as ac
from accounting import PLD

DELTA = 1e-5
JOBS: dict[str, list[tuple[float, float, int]]] = {
    "100 × Gaussian(σ=1)": [(1.0, 1.0, 100)],
    "3 distinct Gaussians (σ = 1, 2, 0.7; 100, 30, 1 uses)": [(1.0, 1.0, 100), (2.0, 0.5, 30),
                                                             (0.7, 1.0, 1)],
    "50 distinct Gaussians, 1 use each (σ from 5 to 10)": [(5.0 + i / 10, 1.0, 1)
                                                          for i in range(50)],
}


def best(fn: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    times, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times), out


def accountant(parts: list[tuple[float, float, int]]) -> ac.Accountant:
    acct = ac.Accountant()
    for sigma, sens, count in parts:
        acct.compose(ac.mechanism("gaussian", sigma=sigma, sensitivity=sens), count)
    return acct


def closed_bracket(parts: list[tuple[float, float, int]]) -> Any:
    return accountant(parts).epsilon_interval(DELTA)


def grid_bracket(parts: list[tuple[float, float, int]]) -> Any:
    return accountant(parts).curve(PLD).epsilon_interval(DELTA)


def dp_accounting_epsilon(parts: list[tuple[float, float, int]]) -> float:
    import dp_accounting
    from dp_accounting.pld import pld_privacy_accountant
    acct = pld_privacy_accountant.PLDAccountant(value_discretization_interval=1e-3)
    for sigma, sens, count in parts:
        acct.compose(dp_accounting.GaussianDpEvent(noise_multiplier=sigma / sens), count)
    return float(acct.get_epsilon(DELTA))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    ns = parser.parse_args(argv)
    try:
        import dp_accounting  # noqa: F401
        peer = True
    except ImportError:
        peer = False
        print("(dp_accounting not installed: pip install -e '.[bench]' to time it too)")
    for name, parts in JOBS.items():
        t_closed, (lo, hi) = best(functools.partial(closed_bracket, parts), ns.repeats)
        t_grid, (glo, ghi) = best(functools.partial(grid_bracket, parts), 1)
        print(f"{name}, ε({DELTA:g}):")
        print(f"  closed form    [{float(lo):.10f}, {float(hi):.10f}]  {t_closed * 1e3:9.2f} ms")
        print(f"  grid (PLD)     [{float(glo):.10f}, {float(ghi):.10f}]  {t_grid * 1e3:9.2f} ms"
              f"   grid/closed = {t_grid / t_closed:,.0f}×")
        if peer:
            t_peer, eps = best(functools.partial(dp_accounting_epsilon, parts), 1)
            print(f"  dp_accounting   {eps:.10f}                  {t_peer * 1e3:9.2f} ms"
                  f"   dp_accounting/closed = {t_peer / t_closed:,.0f}×")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Closed forms against the grid: Gaussian, pure-DP, randomized-response and mixed jobs.

For each all-Gaussian job, times in one run (best of ``--repeats``):

- ``closed``: ``Accountant.epsilon_interval`` — the exact √(Σkμ²)-GDP profile
  (Balle, Wang, arXiv:1805.06530, Thm. 8; Dong, Roth, Su, arXiv:1905.02383, Cor. 3.3);
- ``grid``: the same accountant's certified PLD bracket (``acct.curve(PLD)``), what
  answered before the closed form;
- ``dp_accounting``: its PLD accountant at grid 1e-3 (when installed).

and prints ε(1e-5), each time, and the ratios grid/closed and dp_accounting/closed.

Beyond Gaussians (``OTHER_JOBS``), each row against what answered before:

- pure DP at δ = 0 (10 × Laplace, b = 10): ε(0) = Σkε in closed form vs the grid;
- randomized responses (binary at two p, k-ary): the exact product law vs the grid;
- a mixed job (Gaussians, randomized responses, a Laplace): the closed parts combined
  first (one μ-GDP pair, one law) and discretised once vs every part discretised on
  its own, with both certified brackets of δ(ε) and their widths;
- calibration of 10 × Laplace to ε = 1 at δ = 0: the closed form (b = 10 exactly) vs
  the grid search it replaced (the closed path switched off).

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


def _rr_job() -> ac.Accountant:
    return (ac.Accountant().compose(ac.mechanism("randomized_response", p=0.75), 100)
            .compose(ac.mechanism("randomized_response", p=0.6), 50)
            .compose(ac.mechanism("kary_randomized_response", r=0.5, k=4), 20))


def _mixed_job() -> ac.Accountant:
    return (ac.Accountant().compose(ac.mechanism("gaussian", sigma=5.0), 30)
            .compose(ac.mechanism("gaussian", sigma=3.0), 20)
            .compose(ac.mechanism("randomized_response", p=0.6), 30)
            .compose(ac.mechanism("randomized_response", p=0.55), 20)
            .compose(ac.mechanism("laplace", b=4.0), 2))


def _separate_pld(acct: ac.Accountant) -> Any:
    """The composed PLD as before: every part discretised on its own (a closed n-fold
    product where the part has one), then composed."""
    from accounting.curves.pld import compose_plds
    parts = []
    for p, c in acct.pair().components:
        closed = p._self_compose(c) if c > 1 else None
        parts.append((closed.curve(PLD, step=acct.step), 1) if closed is not None
                     else (p.curve(PLD, step=acct.step), c))
    return compose_plds(parts)


def _calibrate_laplace(closed: bool) -> Any:
    from accounting.analysis.calibration import calibrate
    if closed:
        return calibrate("laplace", "b", epsilon=1.0, delta=0.0, count=10)
    original = ac.Accountant.pure_epsilon
    ac.Accountant.pure_epsilon = lambda self, direction="max": None  # type: ignore[method-assign]
    try:
        return calibrate("laplace", "b", epsilon=1.0, delta=0.0, count=10)
    finally:
        ac.Accountant.pure_epsilon = original  # type: ignore[method-assign]


def other_jobs(repeats: int) -> None:
    laplace = lambda: ac.Accountant().compose(ac.mechanism("laplace", b=10.0), 10)  # noqa: E731
    rows = [
        ("10 × Laplace(b=10), ε(δ=0)",
         lambda: laplace().epsilon_interval(0.0),
         lambda: laplace().curve(PLD).epsilon_interval(0.0)),
        ("RR(0.75)×100 ⊗ RR(0.6)×50 ⊗ kRR(r=0.5, k=4)×20, ε(1e-5)",
         lambda: _rr_job().epsilon_interval(DELTA),
         lambda: _rr_job().curve(PLD).epsilon_interval(DELTA)),
    ]
    for name, closed, grid in rows:
        t_closed, (lo, hi) = best(closed, repeats)
        t_grid, (glo, ghi) = best(grid, 1)
        print(f"{name}:")
        print(f"  closed form    [{float(lo):.10f}, {float(hi):.10f}]  {t_closed * 1e3:9.2f} ms")
        print(f"  grid (PLD)     [{float(glo):.10f}, {float(ghi):.10f}]  {t_grid * 1e3:9.2f} ms"
              f"   grid/closed = {t_grid / t_closed:,.0f}×")
    eps = 2.0
    print(f"mixed: Gaussian(σ=5)×30, Gaussian(σ=3)×20, RR(0.6)×30, RR(0.55)×20, "
          f"Laplace(b=4)×2; δ(ε={eps:g}):")
    t_new, (lo, hi) = best(lambda: _mixed_job().delta_interval(eps), 1)
    t_old, (olo, ohi) = best(lambda: _separate_pld(_mixed_job()).delta_interval(eps), 1)
    print(f"  combined first [{float(lo):.10e}, {float(hi):.10e}]  width {float(hi - lo):.2e}"
          f"  {t_new * 1e3:9.2f} ms")
    print(f"  each part      [{float(olo):.10e}, {float(ohi):.10e}]  width {float(ohi - olo):.2e}"
          f"  {t_old * 1e3:9.2f} ms   before/now = {t_old / t_new:,.1f}× time, "
          f"{float(ohi - olo) / float(hi - lo):,.1f}× width")
    print("calibrate 10 × Laplace to ε = 1 at δ = 0 (b):")
    t_closed, res = best(lambda: _calibrate_laplace(True), repeats)
    t_search, old = best(lambda: _calibrate_laplace(False), 1)
    print(f"  closed form    b = {res.value!r} ({res.exactness.value}, {res.evaluations} "
          f"evaluations)  {t_closed * 1e3:9.2f} ms")
    print(f"  grid search    b = {old.value!r} ({old.evaluations} evaluations)"
          f"  {t_search * 1e3:9.2f} ms   search/closed = {t_search / t_closed:,.0f}×")


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
    other_jobs(ns.repeats)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

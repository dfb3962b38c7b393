"""Tree aggregation (DP-FTRL, arXiv:2103.00039) against dp_accounting's RDP accountant.

Single epoch: ε at δ = 1e-6 for trees of T steps (the StackOverflow setting T = 1600 of
dp_accounting's tests, and restarts composed one event per tree). Ours: the exact
Gaussian ε (the pair is a Gaussian of μ = √depth/σ) and our RDP route (continuous
orders, improved conversion); theirs: ``RdpAccountant`` at its default orders under
REPLACE_SPECIAL. Prints both, the ratios, and wall times (best of ``--repeat``).

Multi-epoch: the time of the exact worst-case programme (``tree_sensitivity_squared``)
and of the periodic (fixed-order) maximum for E epochs of P steps, with the per-level
upper bound beside them (how far the bracket used past the budget would be).

Run: ``python benchmarks/tree_aggregation.py [--repeat N]`` (needs the ``bench`` extra).
"""

from __future__ import annotations

import argparse

from timing import timed

import accounting
from accounting import Accountant, PrivacyProfile
from accounting_mechanisms import tree_aggregation as ta

DELTA = 1e-6


def single_epoch(repeat: int) -> None:
    import dp_accounting as dpa
    from dp_accounting.rdp import RdpAccountant

    print(f"single epoch, ε at δ = {DELTA:g}")
    print(f"{'case':>28} {'exact':>9} {'our rdp':>9} {'theirs':>9} {'rdp/theirs':>10} "
          f"{'t ours':>8} {'t theirs':>8}")
    for sigma, counts in [(1.13, [1600]), (8.83, [1600]), (1.0, [400] * 4), (3.0, [100] * 20)]:
        def ours():
            acct = Accountant()
            for t in counts:
                acct.compose(accounting.mechanism("tree_aggregation", sigma=sigma, step_counts=t))
            return float(acct.under("rdp").epsilon(DELTA)), acct

        def theirs():
            acc = RdpAccountant(neighboring_relation=dpa.NeighboringRelation.REPLACE_SPECIAL)
            acc.compose(dpa.ComposedDpEvent([dpa.SingleEpochTreeAggregationDpEvent(sigma, t)
                                             for t in counts]))
            return acc.get_epsilon(DELTA)

        (rdp, acct), t_ours = timed(ours, repeat)
        eps_theirs, t_theirs = timed(theirs, repeat)
        exact = float(acct.pair().curve(PrivacyProfile).epsilon(DELTA))
        label = f"σ={sigma:g}, T={counts[0]}×{len(counts)}"
        print(f"{label:>28} {exact:9.4f} {rdp:9.4f} {eps_theirs:9.4f} {rdp / eps_theirs:10.4f} "
              f"{t_ours:8.3f} {t_theirs:8.3f}")


def multi_epoch(repeat: int) -> None:
    print("multi-epoch worst case Σc² (one tree, E epochs of P steps)")
    print(f"{'E×P':>10} {'exact':>7} {'t exact':>8} {'periodic':>8} {'t per.':>8} {'level bd':>8}")
    for epochs, per in [(4, 50), (10, 100), (20, 100), (10, 400), (100, 100)]:
        t, k, s = epochs * per, epochs, per - 1
        (exact, ok), t_exact = timed(lambda: ta.tree_sensitivity_squared(t, k, s), repeat)
        (periodic, _), t_per = timed(lambda: ta.periodic_sensitivity_squared(t, k, s), repeat)
        shown = f"{exact}" if ok else "budget"
        print(f"{f'{epochs}×{per}':>10} {shown:>7} {t_exact:8.3f} {periodic:8d} {t_per:8.3f} "
              f"{ta.level_bound(t, k, s):8d}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    single_epoch(args.repeat)
    multi_epoch(args.repeat)


if __name__ == "__main__":
    main()

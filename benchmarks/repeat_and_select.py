"""Repeat-and-select (Papernot and Steinke, arXiv:2110.03620) against dp_accounting's
RDP accountant on the same ``RepeatAndSelectDpEvent``.

A Gaussian base (σ), K truncated negative binomial (shape η, Thm 2) or Poisson
(shape = inf, Thm 6) with mean E[K]. Ours: the ``repeat_and_select`` Rényi bound
(λ̂ searched finely; Poisson δ̂ from the base's exact profile), converted at continuous
orders. Theirs: ``RdpAccountant`` at its default orders. Prints ε at δ = 1e-6 from
each, ours/theirs, and the wall time of each (best of ``--repeat``, the mechanism
built inside the timed call).

Run: ``python benchmarks/repeat_and_select.py [--repeat N]`` (needs the ``bench`` extra).
"""

from __future__ import annotations

import argparse
import math

from timing import timed

import accounting
from accounting import RDP

CASES = [(2.0, 10.0, 1.0), (1.0, 100.0, 0.0), (3.0, 50.0, 2.0), (2.0, 10.0, math.inf),
         (1.0, 1000.0, math.inf)]
DELTA = 1e-6


def ours(sigma: float, mean: float, shape: float) -> float:
    base = accounting.mechanism("gaussian", sigma=sigma)
    mech = accounting.mechanism("repeat_and_select", base=base, mean=mean, shape=shape)
    return float(mech.curve(RDP).epsilon(DELTA))


def theirs(sigma: float, mean: float, shape: float) -> float:
    from dp_accounting import dp_event
    from dp_accounting.rdp import rdp_privacy_accountant

    acc = rdp_privacy_accountant.RdpAccountant()
    acc.compose(dp_event.RepeatAndSelectDpEvent(dp_event.GaussianDpEvent(sigma), mean, shape))
    return float(acc.get_epsilon(DELTA))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"{'σ':>5} {'E[K]':>7} {'η':>5} {'ε ours':>10} {'ε theirs':>10} {'ratio':>7} "
          f"{'t ours':>8} {'t theirs':>8}")
    for sigma, mean, shape in CASES:
        e1, t1 = timed(lambda: ours(sigma, mean, shape), args.repeat)
        e2, t2 = timed(lambda: theirs(sigma, mean, shape), args.repeat)
        print(f"{sigma:5g} {mean:7g} {shape:5g} {e1:10.5f} {e2:10.5f} {e1 / e2:7.4f} "
              f"{t1:8.3f} {t2:8.3f}")


if __name__ == "__main__":
    main()

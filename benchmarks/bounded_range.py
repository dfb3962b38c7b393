"""k exponential mechanisms at ε per use: ε(δ) under each accounting, with timings.

Prints, for k uses of the exponential mechanism (ε-BR) at δ = 1e-6: the exact ε-DP
composition (``approx_dp``, Kairouz–Oh–Viswanath), the adaptive BR composition (PLD of
the dominating pair), the ε²/8 zCDP bound, Dong–Durfee–Rogers' optimal non-adaptive
composition (``adaptive=False``), autodp's ExponentialMechanism (ε²/8 zCDP and pure DP
by RDP) when installed, and the ratio of each to pure DP's ε. Run:
``python benchmarks/bounded_range.py``.
"""

from __future__ import annotations

import time

import accounting
from accounting import Accountant

DELTA = 1e-6


def _eps(mech, k: int, accountant: str = "pld") -> tuple[float, float]:
    start = time.perf_counter()
    acct = Accountant()
    acct.compose(mech, k)
    value = float(acct.under(accountant).epsilon(DELTA))
    return value, time.perf_counter() - start


def _autodp(eps: float, k: int) -> "float | None":
    try:
        from autodp.mechanism_zoo import ExponentialMechanism
        from autodp.transformer_zoo import Composition
    except ImportError:
        return None
    return Composition()([ExponentialMechanism(eps)], [k]).get_approxDP(DELTA)


def main() -> None:
    print(f"{'ε/use':>6} {'k':>5} {'pure DP':>9} {'BR adapt':>9} {'zCDP/8':>9} "
          f"{'BR batch':>9} {'autodp':>9}  batch/pure  batch time")
    for eps, k in ((1.0, 10), (0.1, 100), (0.1, 1000), (0.01, 1000), (0.05, 5000)):
        pure, _ = _eps(accounting.mechanism("approx_dp", epsilon=eps), k)
        adapt, _ = _eps(accounting.mechanism("exponential_mechanism", epsilon=eps), k)
        zcdp, _ = _eps(accounting.mechanism("exponential_mechanism", epsilon=eps), k, "zcdp")
        batch, t = _eps(accounting.mechanism("exponential_mechanism", epsilon=eps,
                                             adaptive=False), k)
        theirs = _autodp(eps, k)
        their_text = f"{theirs:9.4f}" if theirs is not None else f"{'—':>9}"
        print(f"{eps:6g} {k:5d} {pure:9.4f} {adapt:9.4f} {zcdp:9.4f} {batch:9.4f} "
              f"{their_text}  {batch / pure:10.3f}  {t:8.2f} s")


if __name__ == "__main__":
    main()

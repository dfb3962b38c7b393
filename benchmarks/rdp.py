"""The RDP route against dp_accounting's RDP accountant (and a compiled one), in one run.

DP-SGD: Poisson-subsampled Gaussian with q = 256/60000, σ = 1.1, 14 062 steps (and
two more cases); ε at δ = 1e-5 by the RDP accountant. Ours: the certified Rényi curve
of both directions at continuous orders (exact sums at integer orders, the fractional
series of Mironov, Talwar, Zhang 2019, arXiv:1908.10530, §3.3, with a proven
remainder; add direction by sound bounds), converted by the improved conversion
(Canonne, Kamath, Steinke 2020, arXiv:2004.00010, Prop. 12) over continuous α (grid
and batched zoom), max over the two directions. Theirs: dp_accounting's
``RdpAccountant`` at its fixed orders (remove direction). A compiled RDP accountant
(``dp_accelerator``, Rust; its own fixed orders) is timed beside them when installed.

Prints, per case: ε from each, wall time (best of ``--repeat``), and ours/theirs
ratios. Also splits our time into the curve evaluation (the certified Rényi curve at
the conversion's order grid, both directions) and the rest (the α-search).

Run: ``python benchmarks/rdp.py [--repeat N]`` (needs the ``bench`` extra).
"""

from __future__ import annotations

import argparse

import numpy as np

from timing import timed

import accounting
from accounting.numerics.order_search import ORDER_GRID

CASES = [  # (q, σ, steps, δ)
    (256 / 60000, 1.1, 14062, 1e-5),
    (0.01, 1.0, 10000, 1e-6),
    (0.001, 0.8, 100000, 1e-8),
]


def ours(q: float, sigma: float, steps: int, delta: float) -> float:
    from accounting_mechanisms import subsampled_gaussian_rdp as sgm
    sgm._log_a_integer.cache_clear()          # a cold start each repeat
    acc = accounting.Accountant().compose(
        accounting.mechanism("subsampled_gaussian", q=q, sigma=sigma), steps)
    return float(acc.under("rdp").epsilon(delta))


def curve_only(q: float, sigma: float) -> None:
    """The certified Rényi curve at the conversion's order grid, both directions (the
    part of our time spent in the plugin before the zoom rounds)."""
    from accounting_mechanisms import subsampled_gaussian_rdp as sgm
    sgm._log_a_integer.cache_clear()          # time the sums, not the cache
    sgm.remove_cgf_upper(q, sigma, ORDER_GRID)
    sgm.add_cgf_upper(q, sigma, ORDER_GRID)


def theirs(q: float, sigma: float, steps: int, delta: float) -> float:
    import dp_accounting
    from dp_accounting import rdp
    acc = rdp.RdpAccountant()
    event = dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(sigma))
    acc.compose(dp_accounting.SelfComposedDpEvent(event, steps))
    return float(acc.get_epsilon(delta))


def compiled(q: float, sigma: float, steps: int, delta: float) -> "float | None":
    try:
        import dp_accelerator
    except ImportError:
        return None
    orders = np.concatenate((np.linspace(1.01, 8, num=50), np.arange(8, 64),
                             np.linspace(65, 512, num=10, dtype=int))).tolist()
    return float(dp_accelerator.compute_epsilon_batch(q, sigma, [steps], orders, delta)[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    try:
        import dp_accounting  # noqa: F401
    except ImportError:
        raise SystemExit("dp_accounting is not installed: pip install -e '.[bench]'")
    print(f"{'case':34s} {'ε ours':>11s} {'ε theirs':>11s} {'ε compiled':>11s}  "
          f"{'ours ms':>8s} {'curve ms':>8s} {'theirs ms':>9s} {'comp ms':>8s}  "
          f"{'ours/theirs':>11s} {'ours/comp':>9s}")
    for q, sigma, steps, delta in CASES:
        e_ours, t_ours = timed(lambda: ours(q, sigma, steps, delta), args.repeat)
        _, t_curve = timed(lambda: curve_only(q, sigma), args.repeat)
        e_theirs, t_theirs = timed(lambda: theirs(q, sigma, steps, delta), args.repeat)
        e_comp, t_comp = timed(lambda: compiled(q, sigma, steps, delta), args.repeat)
        label = f"q={q:.3g} σ={sigma:g} T={steps} δ={delta:g}"
        comp = f"{e_comp:11.6f}" if e_comp is not None else f"{'—':>11s}"
        comp_t = f"{1e3 * t_comp:8.2f}" if e_comp is not None else f"{'—':>8s}"
        ratio_c = f"{t_ours / t_comp:9.1f}" if e_comp is not None else f"{'—':>9s}"
        print(f"{label:34s} {e_ours:11.6f} {e_theirs:11.6f} {comp}  {1e3 * t_ours:8.1f} "
              f"{1e3 * t_curve:8.1f} {1e3 * t_theirs:9.1f} {comp_t}  "
              f"{t_ours / t_theirs:11.2f} {ratio_c}")
        if e_ours > e_theirs * (1 + 1e-12):
            print(f"  NOTE: our ε is above dp_accounting's by {e_ours - e_theirs:.3g}")


if __name__ == "__main__":
    main()

"""ACS-sized workload: per-query noise variance under RDP and zCDP calibration.

The study of the unifying-accounting paper (arXiv:2610.02414, §5.1, Fig. 8): d independent
queries (d = 5·counties ∈ [330, 1060]), each with centred additive noise, calibrated
to (ε, δ) = (3, 1e-5) from the composed exact Rényi curve and from the composed ρ*,
for Gaussian, Laplace and the Gaussian mixture ½N(−s, s²) + ½N(s, s²). Prints the
per-query variances (sensitivity 1, i.e. ($1000)² for the paper's earnings queries),
the ratio RDP/zCDP and ΔMSE = zCDP − RDP, then the paper's ranges and the time.

Paper: ratio 1 (Gaussian), 0.989–0.997 (Laplace), 0.552–0.557 (mixture);
ΔMSE 16.170–16.205 (Laplace), 652.3–2115.7 (mixture).
Run:  python benchmarks/acs_workload.py [--quick] [--epsilon 3 --delta 1e-5]
"""

from __future__ import annotations

import argparse
import time

from acs_study import ACS_DS, ACS_TARGET, STUDY_FAMILIES, variance_table  # beside this file

PAPER = {"gaussian": ("1", "0"), "laplace": ("0.989–0.997", "16.170–16.205"),
         "gaussian_mixture": ("0.552–0.557", "652.3–2115.7")}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="only d = 330 and 1060")
    ap.add_argument("--epsilon", type=float, default=ACS_TARGET[0])
    ap.add_argument("--delta", type=float, default=ACS_TARGET[1])
    ap.add_argument("--rtol", type=float, default=1e-9, help="relative bracket width")
    args = ap.parse_args()
    ds = (ACS_DS[0], ACS_DS[-1]) if args.quick else ACS_DS

    print(f"ACS-sized workload: per-query noise variance at (ε, δ) = ({args.epsilon:g}, "
          f"{args.delta:g}), RDP vs zCDP calibration (rtol {args.rtol:g})")
    header = f"{'family':<17}{'d':>6}{'RDP var':>14}{'zCDP var':>14}{'ratio':>10}" \
             f"{'ΔMSE':>11}{'α (RDP)':>9}{'evals':>8}{'time':>8}"
    print(header)
    print("-" * len(header))
    total = time.perf_counter()
    summary = {}
    for family in STUDY_FAMILIES:
        t0 = time.perf_counter()
        rows = variance_table((family,), ds, epsilon=args.epsilon, delta=args.delta,
                              rtol=args.rtol)
        per_row = (time.perf_counter() - t0) / len(rows)
        for r in rows:
            print(f"{family:<17}{r.d:>6}{r.rdp_variance:>14.4f}{r.zcdp_variance:>14.4f}"
                  f"{r.ratio:>10.6f}{r.mse_difference:>11.4f}{r.rdp.order:>9.4f}"
                  f"{r.rdp.evaluations + r.zcdp.evaluations:>8}{per_row:>7.2f}s")
        summary[family] = rows
    print()
    print(f"{'family':<17}{'ratio (ours)':>20}{'ratio (paper)':>16}{'ΔMSE (ours)':>22}"
          f"{'ΔMSE (paper)':>16}")
    for family, rows in summary.items():
        ratios = sorted(r.ratio for r in rows)
        mse = sorted(r.mse_difference for r in rows)
        print(f"{family:<17}{ratios[0]:>10.4f}–{ratios[-1]:<9.4f}{PAPER[family][0]:>16}"
              f"{mse[0]:>11.3f}–{mse[-1]:<10.3f}{PAPER[family][1]:>16}")
    print(f"\ntotal {time.perf_counter() - total:.1f} s")


if __name__ == "__main__":
    main()

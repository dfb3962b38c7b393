"""RKRD estimator benchmark: the n × n form against the direct 2n × 2n computation.

On Gaussian-mechanism samples (d = 30, the paper's setting) at n = 1000 per side:
  (a) one point (α = 12, λ = 1e-3): n × n (eigh of K_yy, one n × n eigvalsh) against
      the direct joint computation (three 2n × 2n eigendecompositions); both values
      and their relative difference, the times and the ratio;
  (b) the paper's 3 × 9 (α, λ) grid by one sweep against 27 separate single points.
Times are the best of --repeat runs (kernel matrices included).

Run:  python benchmarks/rkrd.py [--n 1000] [--repeat 3]
The numbers depend on the BLAS threads available: on a shared machine set
OPENBLAS_NUM_THREADS=1 (or the equivalent) for stable timings.
"""

from __future__ import annotations

import argparse

import numpy as np
from timing import timed

from accounting_rkrd import gaussian_outputs, gaussian_sigma, rkrd, rkrd_direct, rkrd_sweep
from accounting_rkrd.experiments import PAPER_ALPHAS, PAPER_LAMBDAS, PAPER_SENSITIVITY
from accounting_rkrd.kernel import check_samples, rbf_grams


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1000, help="samples per side (default 1000)")
    ap.add_argument("--repeat", type=int, default=3, help="best of this many runs")
    args = ap.parse_args()

    sigma = gaussian_sigma(2.0, 0.2, PAPER_SENSITIVITY)
    rng = np.random.default_rng(0)
    x = gaussian_outputs(args.n, sigma, PAPER_SENSITIVITY, rng=rng)
    y = gaussian_outputs(args.n, sigma, 0.0, rng=rng)
    alpha, lam = 12.0, 1e-3

    fast, t_fast = timed(lambda: rkrd(x, y, alpha, lam), args.repeat)

    def direct():
        g = rbf_grams(*check_samples(x, y))
        return rkrd_direct(g.kxx, g.kxy, g.kyy, alpha, lam)

    slow, t_slow = timed(direct, args.repeat)
    print(f"n = {args.n} per side, d = {x.shape[1]}, α = {alpha:g}, λ = {lam:g}")
    print(f"  n×n form      D̂ = {fast:.12f}   {t_fast:8.3f} s")
    print(f"  direct 2n×2n  D̂ = {slow:.12f}   {t_slow:8.3f} s")
    print(f"  relative difference {abs(fast - slow) / abs(slow):.2e}; "
          f"speed-up (direct / n×n) {t_slow / t_fast:.1f}×")

    grid = (PAPER_ALPHAS, PAPER_LAMBDAS)
    sweep, t_sweep = timed(lambda: rkrd_sweep(x, y, *grid), args.repeat)
    points, t_points = timed(lambda: [[rkrd(x, y, a, la) for la in PAPER_LAMBDAS]
                                      for a in PAPER_ALPHAS], 1)
    npts = len(PAPER_ALPHAS) * len(PAPER_LAMBDAS)
    assert np.allclose(sweep.values, points, rtol=1e-12)
    print(f"grid of {npts} (α, λ) points:")
    print(f"  one sweep {t_sweep:.3f} s = {t_sweep / t_fast:.1f} single points; "
          f"{npts} separate points {t_points:.3f} s; saving {t_points / t_sweep:.1f}×")


if __name__ == "__main__":
    main()

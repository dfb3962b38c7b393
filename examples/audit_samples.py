"""Sample outputs for the README's ``accounting audit`` example: a Gaussian mechanism
released with a quarter of the noise its claim needs.

The claim is (ε, δ) = (1, 0.005); the Gaussian mechanism with sensitivity 1 that meets
it has σ ≈ 2.10 (Balle–Wang, arXiv:1805.06530, Thm 8). This one adds σ = 0.5, so its
outputs on neighbouring datasets D (true value 0) and D′ (true value 1) are
N(0, 0.5²) and N(1, 0.5²), and the audit should reject the claim.

    python examples/audit_samples.py            # writes outputs_D.npy, outputs_D1.npy
    accounting audit --x outputs_D.npy --y outputs_D1.npy --epsilon 1 --delta 0.005
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=4000, help="samples per dataset")
    parser.add_argument("--sigma", type=float, default=0.5, help="the noise actually added")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("."), help="directory to write to")
    args = parser.parse_args()
    if args.n < 2:
        parser.error(f"--n must be at least 2, got {args.n}")
    if not args.sigma > 0:
        parser.error(f"--sigma must be positive, got {args.sigma}")
    rng = np.random.default_rng(args.seed)
    args.out.mkdir(parents=True, exist_ok=True)
    np.save(args.out / "outputs_D.npy", rng.normal(0.0, args.sigma, args.n))
    np.save(args.out / "outputs_D1.npy", rng.normal(1.0, args.sigma, args.n))
    print(f"wrote {args.out / 'outputs_D.npy'} and {args.out / 'outputs_D1.npy'} "
          f"({args.n} samples each, σ = {args.sigma})")


if __name__ == "__main__":
    main()

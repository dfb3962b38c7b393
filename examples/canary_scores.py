"""Canary scores for the README's one-run audit, ``accounting audit --scores``.

m idealised canaries of a training run that is exactly (ε, δ)-DP with ε = 4 and
δ = 1e-5 (Steinke, Nasr, Jagielski, arXiv:2305.08846, §6): each canary is included with
probability 1/2, and its score is μ·included + N(0, 1), with μ = Δ/σ of the Gaussian
mechanism that is exactly (ε, δ)-DP. Audited against the claim ε = 1, the one-run
bound rejects it.

    python examples/canary_scores.py            # writes canary_scores.npy, canary_bits.txt
    accounting audit --scores canary_scores.npy --inclusion canary_bits.txt --epsilon 1
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from accounting_onerun.experiments import gaussian_canaries


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--m", type=int, default=1000, help="canaries")
    parser.add_argument("--epsilon", type=float, default=4.0, help="the run's true ε")
    parser.add_argument("--delta", type=float, default=1e-5, help="the run's δ")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("."), help="directory to write to")
    args = parser.parse_args()
    scores, bits = gaussian_canaries(args.m, args.epsilon, args.delta,
                                     np.random.default_rng(args.seed))
    args.out.mkdir(parents=True, exist_ok=True)
    np.save(args.out / "canary_scores.npy", scores)
    (args.out / "canary_bits.txt").write_text("".join(f"{int(b)}\n" for b in bits),
                                              encoding="utf-8")
    print(f"wrote {args.out / 'canary_scores.npy'} and {args.out / 'canary_bits.txt'} "
          f"({args.m} canaries of a run with ε = {args.epsilon:g} at δ = {args.delta:g})")


if __name__ == "__main__":
    main()

"""One training job, four batch samplers: σ calibrated under each to (ε, δ) = (3, 1e-5),
and their trade-off curves side by side.

The job: n = 1000 records, batches of b = 10 (q = b/n = 0.01), 10 epochs of n/b = 100
steps, Gaussian noise of multiplier σ on gradients clipped to norm 1, add/remove.

* Poisson: every record joins each step with probability q (``subsampled_gaussian``).
* Fixed-size batches without replacement: each step draws b of the n records
  (``sampled_without_replacement``; the Gaussian declared under replace-one with
  sensitivity 2, the replacement a fixed-size batch always sees).
* Shuffling: each epoch a fresh permutation cut into n/b batches (``shuffled``; its
  certified upper bound: one use of the Gaussian per epoch).
* Balls-and-bins: each record joins one of the n/b steps of an epoch, chosen at random
  (``random_allocation``, 1-out-of-t).

Each σ is the certified upper bound's calibration: the smallest σ whose ε upper bound
meets 3. Run it as ``python examples/samplers.py [--quick] [--plot samplers.png]``.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np

import accounting as ac
from accounting import Ledger, TradeOff
from accounting.analysis.calibration import calibrate_workload

N, BATCH, DELTA, TARGET = 1000, 10, 1e-5, 3.0


def samplers(epochs: int) -> dict[str, Callable[[float], Ledger]]:
    """σ ↦ the ledger of the job under each sampler."""
    steps_per_epoch = N // BATCH
    steps = epochs * steps_per_epoch

    def gaussian(sigma: float, **kw: object) -> ac.Mechanism:
        return ac.mechanism("gaussian", sigma=sigma, **kw)

    return {
        "Poisson": lambda s: Ledger.of(
            ac.mechanism("subsampled_gaussian", q=BATCH / N, sigma=s), steps),
        "fixed size, without replacement": lambda s: Ledger.of(ac.mechanism(
            "sampled_without_replacement",
            base=gaussian(s, sensitivity=2.0, neighbouring="replace_one"),
            batch_size=BATCH, dataset_size=N, neighbouring="add_remove"), steps),
        "shuffling (upper bound)": lambda s: Ledger.of(ac.mechanism(
            "shuffled", base=gaussian(s), batch_size=BATCH, dataset_size=N), epochs),
        "balls-and-bins": lambda s: Ledger.of(ac.mechanism(
            "random_allocation", base=gaussian(s), steps=steps_per_epoch), epochs),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="2 epochs instead of 10")
    ap.add_argument("--plot", default=None, help="write the trade-off curves to this PNG")
    args = ap.parse_args()
    epochs = 2 if args.quick else 10
    print(f"n = {N}, b = {BATCH}, {epochs} epochs of {N // BATCH} steps; σ for ε = {TARGET:g} "
          f"at δ = {DELTA:g}")
    sigmas: dict[str, float] = {}
    for name, family in samplers(epochs).items():
        t = time.perf_counter()
        # (balls-and-bins starts from Poisson's σ, which it is close to: each of its
        # evaluations builds the allocation's tables, the dear part)
        start = sigmas.get("Poisson") if name == "balls-and-bins" else None
        cal = calibrate_workload(family, epsilon=TARGET, delta=DELTA, rtol=1e-4, start=start)
        sigmas[name] = cal.value
        print(f"  {name:<34} σ = {cal.value:.4f}  ({time.perf_counter() - t:.1f} s)")
    if args.plot:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        # one σ for all four (Poisson's), so the curves compare the samplers, not the noise
        sigma = sigmas["Poisson"]
        alpha = np.linspace(0.0, 1.0, 201)
        fig, ax = plt.subplots(figsize=(5.5, 5))
        for name, family in samplers(epochs).items():
            curve = ac.Accountant.of(family(sigma)).curve(TradeOff)
            ax.plot(alpha, curve.beta(alpha), label=name)
        ax.plot(alpha, 1 - alpha, color="grey", lw=0.8, ls=":", label="no privacy loss")
        ax.set_xlabel("type I error α")
        ax.set_ylabel("type II error β (the pessimistic side)")
        ax.set_title(f"Trade-off curves at σ = {sigma:.3f}, {epochs} epochs")
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(args.plot, dpi=110, metadata={"Software": None})
        print(f"  wrote {args.plot}")


if __name__ == "__main__":
    main()

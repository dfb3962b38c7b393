"""Audit a DP-SGD run in one run: m canaries, the one-run auditor, the accountant's ε.

A small DP-SGD run (Abadi et al., arXiv:1607.00133, Alg. 1; numpy only): logistic
regression on synthetic data (n examples, d features, labels from a fixed linear
rule), Poisson-sampled batches at rate q (q = 1: full batches), per-example gradients
clipped to norm C, Gaussian noise of std σC on their sum, σ calibrated by the PLD
accountant for (ε, δ) = (2, 1e-5). Beside the data, m canaries are each included
with probability 1/2 before the run (Steinke, Nasr, Jagielski, arXiv:2305.08846, § 2).
They are white-box *gradient canaries* (that paper, § 6): canary j is an example whose
clipped gradient is C·e_j on a parameter coordinate of its own, which no real example
touches (any per-example gradient of norm ≤ C is allowed, so the run's guarantee is
unchanged). Its score is its coordinate of the final parameters: included canaries push
it up by ηC/B each time they are sampled. The one-run auditor (``onerun``, f-DP
analysis of arXiv:2410.22235 in the (ε, δ) family, so its bound is a genuine (ε, δ)
lower bound) certifies an ε lower bound from the m scores and tests the accountant's
ε as the claim.

Then the same run with a planted bug: the noise is not scaled by the clip norm (std σ
instead of σC, with C = 5): the run is far less private than accounted, and the audit
rejects the accountant's claim.

Run:  python examples/audit_dpsgd_one_run.py [--quick] [--m 1000] [--steps 50]
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np

from accounting_bridges.training import TrainingAccountant
from accounting_mechanisms.dpsgd import calibrate_dpsgd
from accounting_onerun import OneRunAuditor

EPSILON, DELTA = 2.0, 1e-5
CLIP = 5.0
LEARNING_RATE = 0.5


def synthetic_data(n: int, d: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """n examples in d dimensions, labels 1{x·w* > 0} for a fixed random w*."""
    x = rng.normal(size=(n, d))
    w_star = rng.normal(size=d)
    return x, (x @ w_star > 0).astype(float)


def train(x: np.ndarray, y: np.ndarray, inclusion: np.ndarray, *, steps: int, q: float,
          sigma: float, rng: np.random.Generator, bug: bool = False) -> np.ndarray:
    """DP-SGD on the data and the included canaries; returns the final parameters
    (d data coordinates, then one coordinate per canary). With ``bug`` the noise std is
    σ instead of σC (noise not scaled by the clip norm)."""
    n, d = x.shape
    m = inclusion.size
    w = np.zeros(d + m)
    batch = q * (n + int(inclusion.sum()))          # the expected batch size B
    noise_std = sigma if bug else sigma * CLIP
    for _ in range(steps):
        take = rng.random(n) < q                    # Poisson sampling of the data
        canaries = (rng.random(m) < q) & inclusion.astype(bool)
        xb, yb = x[take], y[take]
        p = 1.0 / (1.0 + np.exp(-(xb @ w[:d])))
        grads = (p - yb)[:, None] * xb              # per-example logistic gradients
        norms = np.linalg.norm(grads, axis=1, keepdims=True)
        grads *= np.minimum(1.0, CLIP / np.maximum(norms, 1e-12))
        total = np.zeros(d + m)
        total[:d] = grads.sum(axis=0)
        total[d:] = -CLIP * canaries                # canary j's gradient: −C·e_j
        total += rng.normal(0.0, noise_std, d + m)
        w -= LEARNING_RATE / batch * total
    return w


def audit_run(*, m: int, n: int, d: int, steps: int, q: float, seed: int,
              bug: bool) -> dict[str, Any]:
    """One run with m canaries: its accountant's ε, the one-run report and the accuracy."""
    rng = np.random.default_rng(seed)
    x, y = synthetic_data(n, d, rng)
    sigma = calibrate_dpsgd(q, steps, epsilon=EPSILON, delta=DELTA).value
    accountant = TrainingAccountant()
    for _ in range(steps):
        accountant.step(noise_multiplier=sigma, sample_rate=q)
    claimed = accountant.get_epsilon(DELTA)
    auditor = OneRunAuditor()

    def run(inclusion: np.ndarray, run_rng: np.random.Generator) -> np.ndarray:
        w = train(x, y, inclusion, steps=steps, q=q, sigma=sigma, rng=run_rng, bug=bug)
        run.accuracy = float(np.mean(((x @ w[:d]) > 0) == (y > 0)))   # type: ignore[attr-defined]
        return w[d:]                                # the canaries' scores
    report = auditor.audit_training(run, m=m, seed=seed, epsilon=claimed, delta=DELTA,
                                    family="eps-delta")
    return {"sigma": sigma, "claimed": claimed, "report": report,
            "accuracy": run.accuracy}               # type: ignore[attr-defined]


def main(argv: list[str] | None = None) -> dict[str, dict[str, Any]]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--m", type=int, default=1000, help="canaries")
    ap.add_argument("--n", type=int, default=2000, help="real examples")
    ap.add_argument("--d", type=int, default=20, help="features")
    ap.add_argument("--steps", type=int, default=50, help="DP-SGD steps")
    ap.add_argument("--sample-rate", type=float, default=1.0, help="Poisson sampling rate q")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--quick", action="store_true", help="n = 500 (the test's mode)")
    args = ap.parse_args(argv)
    n = 500 if args.quick else args.n
    out = {}
    for label, bug in (("honest", False), ("buggy (noise std σ, not σC)", True)):
        t0 = time.perf_counter()
        res = audit_run(m=args.m, n=n, d=args.d, steps=args.steps, q=args.sample_rate,
                        seed=args.seed, bug=bug)
        rep = res["report"]
        print(f"{label}: σ = {res['sigma']:.3f}, C = {CLIP:g}, {args.steps} steps at q = "
              f"{args.sample_rate:g}, train accuracy {res['accuracy']:.3f}\n"
              f"  accountant (PLD, certified upper bound): ε = {res['claimed']:.3f} at "
              f"δ = {DELTA:g}\n"
              f"  one-run audit, m = {args.m}: ε ≥ {rep.epsilon_lower_bound:.3f} certified "
              f"at level {rep.level:g} (perfect guesses could prove "
              f"{rep.max_provable_epsilon:.3f}) → {rep.decision.upper()} "
              f"[{time.perf_counter() - t0:.1f} s]\n  {rep.verdict()}\n", flush=True)
        out["buggy" if bug else "honest"] = res
    return out


if __name__ == "__main__":
    main()

"""Audit one DP-SGD step from its outputs: a clipping bug found, the correct step passed.

One step of DP-SGD (Abadi et al. 2016, arXiv:1607.00133, Alg. 1) on logistic regression:
per-example gradients g_i, each clipped to L2 norm at most C, summed, Gaussian noise
N(0, σ²C²I) added, and the parameters moved by −η/B times the result. With clipping, the
sum changes by at most C in L2 norm when one example is added or removed, so the step
is the Gaussian mechanism with μ = 1/σ: σ is calibrated here for the claim
(ε, δ) = (1, 1e-3) (analytic Gaussian). The update is an invertible affine map of the
noisy sum, which changes no trade-off curve, so the claim applies to the released
parameters as well.

The bug: clipping each *coordinate* to [−C, C] (``np.clip``) instead of each
example's L2 norm. A gradient with all d coordinates large then keeps norm C√d,
and the step leaks √d times more than claimed. Neighbouring datasets: a batch of 64
ordinary examples with and without one canary example whose gradient is large along
every coordinate (the worst case an auditor would plant).

Run:  python examples/audit_dpsgd_step.py [--n 4000]
The audit uses only outputs of ``dpsgd_step`` (numpy); the claim is tested twice, as
one (ε, δ) and as the whole trade-off curve of the registered Gaussian mechanism.
"""

from __future__ import annotations

import argparse

import numpy as np

import accounting
from accounting_rkrd import audit_callable, gaussian_sigma

DIMENSION = 10
BATCH = 64
CLIP = 1.0
LEARNING_RATE = 0.5
EPSILON, DELTA = 1.0, 1e-3
#: noise multiplier σ: the step is (EPSILON, DELTA)-DP when each example moves the sum by <= C
SIGMA = gaussian_sigma(EPSILON, DELTA)
#: the parameters before the step (fixed, public)
W0 = np.linspace(-0.5, 0.5, DIMENSION)


def datasets(seed: int = 0) -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
    """(D, D′): D′ is a batch of ordinary examples, D adds one canary example."""
    rng = np.random.default_rng(seed)
    features = rng.normal(0.0, 0.3, size=(BATCH, DIMENSION))
    labels = (rng.random(BATCH) < 0.5).astype(float)
    canary_x = np.full((1, DIMENSION), 8.0)        # large along every coordinate
    canary_y = np.zeros(1)
    d0 = (np.vstack([features, canary_x]), np.concatenate([labels, canary_y]))
    d1 = (features, labels)
    return d0, d1


def per_example_gradients(w: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """∇_w of the logistic loss log(1 + e^{−(2y−1)⟨w, x⟩}) for each example: (σ(⟨w, x⟩) − y)x."""
    p = 1.0 / (1.0 + np.exp(-(x @ w)))
    return (p - y)[:, None] * x


def dpsgd_step(data: tuple[np.ndarray, np.ndarray], rng: np.random.Generator, *,
               clip: str = "l2") -> np.ndarray:
    """The parameters after one noisy step; ``clip="coordinate"`` is the bug."""
    x, y = data
    g = per_example_gradients(W0, x, y)
    if clip == "l2":
        norms = np.linalg.norm(g, axis=1, keepdims=True)
        g = g * np.minimum(1.0, CLIP / np.maximum(norms, 1e-300))
    elif clip == "coordinate":
        g = np.clip(g, -CLIP, CLIP)                   # BUG: the L2 norm can reach C√d
    else:
        raise ValueError(f"clip must be 'l2' or 'coordinate', got {clip!r}")
    noisy_sum = g.sum(axis=0) + rng.normal(0.0, SIGMA * CLIP, size=DIMENSION)
    return W0 - LEARNING_RATE * noisy_sum / BATCH


def correct_step(data, rng):
    return dpsgd_step(data, rng, clip="l2")


def buggy_step(data, rng):
    return dpsgd_step(data, rng, clip="coordinate")


def audit_both(n: int, seed: int = 0, **settings):
    """Reports for the correct and the buggy step, claim (ε, δ) and claim curve."""
    d0, d1 = datasets(seed)
    curve = accounting.mechanism("gaussian", sigma=SIGMA)     # μ = C/(σC) = 1/σ
    out = {}
    for name, step in (("correct", correct_step), ("buggy", buggy_step)):
        out[name, "eps"] = audit_callable(step, d0, d1, n=n, epsilon=EPSILON, delta=DELTA,
                                          seed=seed, **settings)
        out[name, "curve"] = audit_callable(step, d0, d1, n=n, claim=curve, seed=seed,
                                            **settings)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=4000, help="outputs per dataset (default 4000)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    reports = audit_both(args.n, args.seed)
    for (name, kind), rep in reports.items():
        print(f"==== {name} DP-SGD step, claim as {'(ε, δ)' if kind == 'eps' else 'a curve'}")
        print(rep)
        print()


if __name__ == "__main__":
    main()

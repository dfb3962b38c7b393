"""Parametric bootstrap of D̂ against a claimed additive-noise mechanism from the registry.

The claim: M(D) = f(D) + Z with Z i.i.d. per coordinate from a registered noise
family (e.g. ``accounting.mechanism("gaussian", sigma=2.0)``) and f(D) − f(D′) equal
to a given shift vector. The RBF kernel is translation invariant, so under the claim
(x, y) has the law of (shift + Z, Z′). Draw B replicates at the same sizes, recompute
D̂_{α,λ} with the same bandwidth rule, and report

    p = (1 + #{b : D̂_b >= D̂_obs})/(B + 1),

which satisfies P(p <= u) <= u for every u under the null "the mechanism equals the
reference" (the observed and bootstrap statistics are exchangeable; arXiv:2205.13941).
This tests the whole mechanism, not a privacy bound: it rejects a mechanism whose
outputs separate more than the claimed one's would.

The noise is drawn with the mechanism's own ``sample_noise(rng, shape)`` (a primitive
declared on ``accounting.pairs.additive.AdditiveNoise``): the plugin knows nothing of
other plugins' mechanisms or parameter names.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs
import numpy as np

from accounting.pairs.additive import AdditiveNoise
from accounting.validation import check_array, check_count

from .estimator import check_alphas, check_lambdas, rkrd_sweep
from .kernel import check_samples

__all__ = ["noise_sampler", "BootstrapResult", "bootstrap_test"]


def noise_sampler(mechanism: Any
                  ) -> Callable[[np.random.Generator, tuple[int, ...] | int], np.ndarray]:
    """The sampler ``(rng, shape) -> noise`` of an additive-noise mechanism instance
    (its ``sample_noise``); a ValueError naming the mechanism when it has none."""
    if not isinstance(mechanism, AdditiveNoise):
        raise ValueError(f"mechanism: the parametric bootstrap needs an additive-noise "
                         f"mechanism (an AdditiveNoise), got {type(mechanism).__name__}")
    if not mechanism.provides("sample_noise"):
        raise ValueError(f"mechanism: {type(mechanism).__name__} ({mechanism.name!r}) does "
                         f"not provide sample_noise(rng, shape), so its noise cannot be drawn")
    return mechanism.sample_noise


@attrs.frozen
class BootstrapResult:
    """The observed D̂, the replicates and the p-value of the parametric bootstrap."""

    statistic: float
    p_value: float
    replicates: np.ndarray = attrs.field(eq=False, repr=False)
    alpha: float
    lam: float
    mechanism: str

    def to_dict(self) -> dict[str, Any]:
        return {"statistic": self.statistic, "p_value": self.p_value,
                "n_boot": int(self.replicates.size), "alpha": self.alpha, "lam": self.lam,
                "mechanism": self.mechanism}


def bootstrap_test(x: Any, y: Any, *, mechanism: Any, shift: Any, alpha: float = 2.0,
                   lam: float = 1e-2, n_boot: int = 99, bandwidth: float | None = None,
                   rng: np.random.Generator | None = None,
                   progress: Callable[[int, int], None] | None = None) -> BootstrapResult:
    """p-value of D̂_{α,λ}(x, y) against ``mechanism`` applied to a query whose outputs on
    the two datasets differ by ``shift`` (a vector of length d, or a scalar for d = 1).

    ``bandwidth`` None re-applies the median heuristic to every replicate (the rule
    must be the same as for the observation). ``progress(b, B)`` is called after each
    replicate.
    """
    x, y = check_samples(x, y)
    d = x.shape[1]
    shift_v = np.atleast_1d(check_array("shift", shift))
    if shift_v.shape != (d,):
        raise ValueError(f"shift must be a vector of length d = {d}, got shape {shift_v.shape}")
    a = float(check_alphas(alpha)[0])
    la = float(check_lambdas(lam)[0])
    n_boot = check_count("n_boot", n_boot)
    draw = noise_sampler(mechanism)
    rng = np.random.default_rng() if rng is None else rng
    observed = rkrd_sweep(x, y, [a], [la], bandwidth=bandwidth).values[0, 0]
    reps = np.empty(n_boot)
    for b in range(n_boot):
        xb = shift_v + draw(rng, x.shape)
        yb = draw(rng, y.shape)
        reps[b] = rkrd_sweep(xb, yb, [a], [la], bandwidth=bandwidth).values[0, 0]
        if progress is not None:
            progress(b + 1, n_boot)
    p = (1.0 + np.count_nonzero(reps >= observed)) / (n_boot + 1.0)
    return BootstrapResult(float(observed), float(p), reps, a, la, str(mechanism))

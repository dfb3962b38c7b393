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

``NOISE_SAMPLERS`` maps a mechanism's registry name to a numpy sampler of its noise
with its own parameters; mechanisms are looked up by ``type(mechanism).name``, so the
plugin imports none of their classes.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

import attrs
import numpy as np

from accounting.validation import check_array, check_count

from .estimator import check_alphas, check_lambdas, rkrd_sweep
from .kernel import check_samples

__all__ = ["NOISE_SAMPLERS", "noise_sampler", "BootstrapResult", "bootstrap_test"]

Sampler = Callable[[Any, np.random.Generator, tuple], np.ndarray]


def _generalised_gaussian(m: Any, rng: np.random.Generator, shape: tuple) -> np.ndarray:
    # density ∝ exp(−|x/scale|^β): |x/scale|^β ~ Gamma(1/β, 1), with a random sign
    mag = rng.gamma(1.0 / m.beta, 1.0, size=shape) ** (1.0 / m.beta)
    return m.scale * mag * rng.choice((-1.0, 1.0), size=shape)


def _discrete_laplace(m: Any, rng: np.random.Generator, shape: tuple) -> np.ndarray:
    # pmf ∝ e^{−a|x|} on ℤ is the difference of two i.i.d. geometric variables on {0, 1, …}
    p = -np.expm1(-m.a)
    return (rng.geometric(p, size=shape) - rng.geometric(p, size=shape)).astype(float)


#: noise samplers by mechanism name: (mechanism, rng, shape) -> array of that shape
NOISE_SAMPLERS: dict[str, Sampler] = {
    "gaussian": lambda m, rng, shape: rng.normal(0.0, m.sigma, size=shape),
    "laplace": lambda m, rng, shape: rng.laplace(0.0, m.b, size=shape),
    "student_t": lambda m, rng, shape: m.scale * rng.standard_t(m.nu, size=shape),
    "generalised_gaussian": _generalised_gaussian,
    "discrete_laplace": _discrete_laplace,
}


def noise_sampler(mechanism: Any) -> Callable[[np.random.Generator, tuple], np.ndarray]:
    """A sampler ``(rng, shape) -> noise`` for a registered mechanism instance."""
    name = getattr(type(mechanism), "name", None)
    if name not in NOISE_SAMPLERS:
        raise ValueError(f"mechanism: no noise sampler for {name!r}; supported: "
                         f"{', '.join(sorted(NOISE_SAMPLERS))}")
    sampler = NOISE_SAMPLERS[name]
    return lambda rng, shape: sampler(mechanism, rng, shape)


@attrs.frozen
class BootstrapResult:
    """The observed D̂, the replicates and the p-value of the parametric bootstrap."""

    statistic: float
    p_value: float
    replicates: np.ndarray = attrs.field(eq=False, repr=False)
    alpha: float
    lam: float
    mechanism: str

    def to_dict(self) -> dict:
        return {"statistic": self.statistic, "p_value": self.p_value,
                "n_boot": int(self.replicates.size), "alpha": self.alpha, "lam": self.lam,
                "mechanism": self.mechanism}


def bootstrap_test(x: Any, y: Any, *, mechanism: Any, shift: Any, alpha: float = 2.0,
                   lam: float = 1e-2, n_boot: int = 99, bandwidth: Optional[float] = None,
                   rng: Optional[np.random.Generator] = None,
                   progress: Optional[Callable[[int, int], None]] = None) -> BootstrapResult:
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

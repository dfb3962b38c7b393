"""Witness families: score functions s(z), larger on outputs of M(D) than of M(D′).

A witness turns the samples into sets S_τ = {s > τ} whose false-positive and
false-negative counts test the claim (``holdout``). Every family here is learned on
the training part of the samples only; the auditor picks one candidate by its
out-of-sample strength on that part and counts on the held-out part, so the choice
never touches the counted samples. Families:

* ``threshold``: each coordinate with either sign (no fitting), and the
  mean-difference direction ⟨z, x̄ − ȳ⟩ (fitted);
* ``kernel``: the kernel mean-difference witness s(z) = mean_i k(z, x_i) −
  mean_j k(z, y_j) with the RBF kernel exp(−‖u − v‖²/h²) on a grid of bandwidths
  h = c·h_med (the RKRD paper's witness (arXiv:2205.13941); out-of-sample scores by leave-one-out), h_med the
  median of the non-zero cross distances (kernel families are dropped when all
  training points coincide);
* ``likelihood_ratio``: the regularized least-squares estimate of dP/dQ in the RKHS,
  r̂ = (Σ̂_q + λ)^{−1} μ̂_p (Kanamori, Suzuki & Sugiyama 2012, "Statistical analysis
  of kernel-based least-squares density-ratio estimation", KuLSIF), written with the
  eigendecomposition K_yy = V diag(κ) Vᵀ that also underlies the kernel Rényi
  estimator (``estimator``): by Woodbury,
  λ r̂(z) = mean_i k(z, x_i) − k_y(z)ᵀ V diag(1/(m λ + κ)) Vᵀ K_yx 1/n, on a λ grid,
  for dP/dQ and (negated) dQ/dP;
* ``logistic``: L2-regularized logistic regression on the standardized features
  (z, z²) (the squares catch differences in spread), fitted by L-BFGS.

Fitted families get out-of-sample scores on the training part by two-fold
cross-fitting (the kernel witness by exact leave-one-out) and are refitted on the
whole training part for the held-out scores. Kernel families use at most
``kernel_points`` training points per side (a random subset), so memory is linear
in n; scores of many points are computed in row blocks.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs
import numpy as np
from scipy.special import expit, log_expit

from .kernel import positive_median, rbf, squared_distances

__all__ = ["FAMILIES", "Candidate", "candidates", "check_families"]

#: the witness families, in the order they are offered
FAMILIES = ("threshold", "kernel", "likelihood_ratio", "logistic")
#: kernel witness bandwidths as multiples of the median heuristic
_BANDWIDTHS = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0)
#: regularizations of the density-ratio estimate (Σ̂_q has trace 1)
_RATIO_LAMBDAS = (1e-3, 1e-2, 1e-1)
#: at most this many coordinates are offered to the threshold family
_MAX_COORDINATES = 64
#: rows per block when scoring many points against kernel centres
_BLOCK = 2048

Score = Callable[[np.ndarray], np.ndarray]


def check_families(families: object) -> tuple[str, ...]:
    """A non-empty tuple of known family names."""
    if isinstance(families, str):
        families = (families,)
    try:
        # tuple() is the iterability check: its TypeError is the message below
        out: tuple[object, ...] = tuple(families)  # type: ignore[arg-type]
    except TypeError:
        raise TypeError(f"witnesses must be a sequence of family names from "
                        f"{', '.join(FAMILIES)}, got {type(families).__name__}") from None
    bad = [f for f in out if not (isinstance(f, str) and f in FAMILIES)]
    if not out or bad:
        raise ValueError(f"witnesses must be a non-empty selection of {', '.join(FAMILIES)}; "
                         f"got {', '.join(map(repr, bad)) or 'none'}")
    return tuple(dict.fromkeys(f for f in out if isinstance(f, str)))   # bad is empty


@attrs.define
class Candidate:
    """One witness: out-of-sample scores on the training part, and the way to fit it
    on the whole training part (called only for the chosen candidate)."""

    family: str
    detail: str
    oos_x: np.ndarray = attrs.field(repr=False)
    oos_y: np.ndarray = attrs.field(repr=False)
    final: Callable[[], Score] = attrs.field(repr=False)


def _blocked(fn: Score) -> Score:
    def score(z: np.ndarray) -> np.ndarray:
        if z.shape[0] <= _BLOCK:
            return fn(z)
        return np.concatenate([fn(z[i:i + _BLOCK]) for i in range(0, z.shape[0], _BLOCK)])
    return score


def _folds(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    perm = rng.permutation(n)
    return perm[: n // 2], perm[n // 2:]


def _crossfit(family: str, fit: Callable[[np.ndarray, np.ndarray], list[tuple[str, Score]]],
              xa: np.ndarray, ya: np.ndarray, rng: np.random.Generator) -> list[Candidate]:
    """Two-fold cross-fitted scores of every candidate of ``fit``; the final witness is
    ``fit`` on all of (xa, ya), computed once on demand."""
    fx, fy = _folds(xa.shape[0], rng), _folds(ya.shape[0], rng)
    fitted = [fit(xa[fx[k]], ya[fy[k]]) for k in (0, 1)]
    details = [d for d, _ in fitted[0]]
    oos_x = [np.empty(xa.shape[0]) for _ in details]
    oos_y = [np.empty(ya.shape[0]) for _ in details]
    for k in (0, 1):
        for i, (_, score) in enumerate(fitted[k]):
            oos_x[i][fx[1 - k]] = score(xa[fx[1 - k]])
            oos_y[i][fy[1 - k]] = score(ya[fy[1 - k]])
    cache: dict[str, list[tuple[str, Score]]] = {}

    def final(i: int) -> Callable[[], Score]:
        def make() -> Score:
            if "fit" not in cache:
                cache["fit"] = fit(xa, ya)
            return cache["fit"][i][1]
        return make

    return [Candidate(family, d, oos_x[i], oos_y[i], final(i))
            for i, d in enumerate(details)]


# ----------------------------------------------------------------- threshold
def _threshold(xa: np.ndarray, ya: np.ndarray, rng: np.random.Generator) -> list[Candidate]:
    d = xa.shape[1]
    coords = np.arange(d)
    if d > _MAX_COORDINATES:
        # the coordinates that separate most on the training part
        pooled = np.sqrt(0.5 * (xa.var(axis=0) + ya.var(axis=0))) + 1e-300
        t = np.abs(xa.mean(axis=0) - ya.mean(axis=0)) / pooled
        coords = np.sort(np.argsort(-t, kind="stable")[:_MAX_COORDINATES])
    out = []
    for j in coords:
        for sign, word in ((1.0, "larger"), (-1.0, "smaller")):
            def score(z: np.ndarray, j: int = int(j), sign: float = sign) -> np.ndarray:
                return sign * z[:, j]
            label = f"coordinate {j + 1}, {word} on D" if d > 1 else f"output {word} on D"

            def final(score: Score = score) -> Score:
                return score
            out.append(Candidate("threshold", label, score(xa), score(ya), final))

    def fit(x: np.ndarray, y: np.ndarray) -> list[tuple[str, Score]]:
        w = x.mean(axis=0) - y.mean(axis=0)

        def project(z: np.ndarray, w: np.ndarray = w) -> np.ndarray:
            projected: np.ndarray = z @ w
            return projected
        return [("mean-difference direction", project)]

    if d > 1:
        out += _crossfit("threshold", fit, xa, ya, rng)
    return out


# -------------------------------------------------------------------- kernel
def _kernel(xa: np.ndarray, ya: np.ndarray, h0: float) -> list[Candidate]:
    """Mean-difference witnesses on the bandwidth grid, leave-one-out on (xa, ya)."""
    n, m = xa.shape[0], ya.shape[0]
    sq = [squared_distances(xa, xa), squared_distances(xa, ya), squared_distances(ya, ya)]
    out = []
    for c in _BANDWIDTHS:
        h = c * h0
        kxx, kxy, kyy = (np.exp(s * (-1.0 / (h * h))) for s in sq)
        # leave-one-out: a point's own k(z, z) = 1 would inflate its score
        sx = (kxx.sum(axis=1) - 1.0) / (n - 1) - kxy.mean(axis=1)
        sy = kxy.mean(axis=0) - (kyy.sum(axis=1) - 1.0) / (m - 1)

        def make(h: float = h) -> Score:
            return _blocked(lambda z: rbf(z, xa, h).mean(axis=1) - rbf(z, ya, h).mean(axis=1))
        out.append(Candidate("kernel", f"mean difference, bandwidth {h:.4g} "
                             f"({c:g} × median)", sx, sy, make))
    return out


# ---------------------------------------------------------- likelihood ratio
def _negated(s: Score) -> Score:
    def negated(z: np.ndarray) -> np.ndarray:
        return -s(z)
    return negated


def _ratio_fit(h: float) -> Callable[[np.ndarray, np.ndarray], list[tuple[str, Score]]]:
    def one_way(num: np.ndarray, den: np.ndarray) -> list[Score]:
        m = den.shape[0]
        kappa, vec = np.linalg.eigh(rbf(den, den, h))
        proj = vec.T @ rbf(den, num, h).mean(axis=1)
        scores = []
        for lam in _RATIO_LAMBDAS:
            c = vec @ (proj / (m * lam + np.maximum(kappa, 0.0)))

            def ratio(z: np.ndarray, c: np.ndarray = c) -> np.ndarray:
                estimate: np.ndarray = rbf(z, num, h).mean(axis=1) - rbf(z, den, h) @ c
                return estimate
            scores.append(_blocked(ratio))
        return scores

    def fit(x: np.ndarray, y: np.ndarray) -> list[tuple[str, Score]]:
        pq, qp = one_way(x, y), one_way(y, x)
        out = [(f"dP/dQ estimate, λ = {lam:g}, bandwidth {h:.4g}", s)
               for lam, s in zip(_RATIO_LAMBDAS, pq)]
        out += [(f"−dQ/dP estimate, λ = {lam:g}, bandwidth {h:.4g}", _negated(s))
                for lam, s in zip(_RATIO_LAMBDAS, qp)]
        return out
    return fit


# ------------------------------------------------------------------ logistic
def _logistic_fit(x: np.ndarray, y: np.ndarray) -> list[tuple[str, Score]]:
    """Balanced L2-regularized logistic regression on standardized (z, z²)."""
    both = np.vstack([x, y])
    loc, scale = both.mean(axis=0), both.std(axis=0)
    scale = np.where(scale > 0.0, scale, 1.0)

    def raw(z: np.ndarray) -> np.ndarray:
        # standardized before squaring, so that no square overflows
        u = (z - loc) / scale
        return np.hstack([u, u * u])

    f = raw(both)
    mu, sd = f.mean(axis=0), f.std(axis=0)
    sd = np.where(sd > 0.0, sd, 1.0)
    fx, fy = (raw(x) - mu) / sd, (raw(y) - mu) / sd
    ridge = 1e-3

    def loss(theta: np.ndarray) -> tuple[float, np.ndarray]:
        w, b = theta[:-1], theta[-1]
        tx, ty = fx @ w + b, fy @ w + b
        value = -log_expit(tx).mean() - log_expit(-ty).mean() + 0.5 * ridge * (w @ w)
        gx, gy = -expit(-tx) / tx.size, expit(ty) / ty.size
        grad = np.append(fx.T @ gx + fy.T @ gy + ridge * w, gx.sum() + gy.sum())
        return float(value), grad

    from scipy.optimize import minimize  # ~0.3 s: not when the plugin registers
    res = minimize(loss, np.zeros(f.shape[1] + 1), jac=True, method="L-BFGS-B",
                   options={"maxiter": 500})
    w = res.x[:-1]
    return [("logistic regression on (z, z²)", lambda z: ((raw(z) - mu) / sd) @ w)]


# ---------------------------------------------------------------------- all
def candidates(xa: np.ndarray, ya: np.ndarray, *, families: tuple[str, ...],
               bandwidth: float | None, kernel_points: int,
               rng: np.random.Generator,
               progress: Callable[[str], None] | None = None) -> list[Candidate]:
    """Every candidate witness of ``families`` learned on the training part (xa, ya),
    which the caller has centred. ``bandwidth`` None: the median heuristic of the
    kernel subset."""
    out: list[Candidate] = []
    kernel_families = {"kernel", "likelihood_ratio"} & set(families)
    if kernel_families:
        ix = rng.permutation(xa.shape[0])[:kernel_points]
        iy = rng.permutation(ya.shape[0])[:kernel_points]
        xk, yk = xa[np.sort(ix)], ya[np.sort(iy)]
        h0 = positive_median(squared_distances(xk, yk)) if bandwidth is None else bandwidth
        if h0 is None:
            # every training point coincides: no kernel scale; the other families remain
            families = tuple(f for f in families if f not in kernel_families)
            if not families:
                families = ("threshold",)
    for family in families:
        if progress is not None:
            progress(f"witness family {family}")
        if family == "threshold":
            out += _threshold(xa, ya, rng)
        elif family == "kernel":
            assert h0 is not None      # without a kernel scale the family was dropped above
            out += _kernel(xk, yk, h0)
        elif family == "likelihood_ratio":
            assert h0 is not None
            out += _crossfit("likelihood_ratio", _ratio_fit(h0), xk, yk, rng)
        else:
            out += _crossfit("logistic", _logistic_fit, xa, ya, rng)
    return out

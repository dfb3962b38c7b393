"""The regularized kernel Rényi divergence (RKRD) between empirical covariance operators.

For a kernel with k(x, x) = 1, feature map φ and Σ_p = E_p[φ(X)φ(X)*], the RKRD of
order α > 1 and regularization λ > 0 is (arXiv:2205.13941, §2, quantum Rényi divergence of
Müller-Lennert et al. 2013 with B = Σ_q + λI)

    D_{α,λ}(Σ_p‖Σ_q) = 1/(α−1) · log tr[(B^s Σ_p B^s)^α],   s = (1 − α)/(2α),

and at α → 1 the regularized kernel KL divergence tr[Σ_p(log Σ_p − log B)]. The
estimator D̂ plugs in the empirical operators Σ̂_p = Σ_i w_i φ(x_i)φ(x_i)* and
Σ̂_q = Σ_j v_j φ(y_j)φ(y_j)* (weights 1/n for samples; arXiv:2205.13941, §4, Prop. 7 gives
the 2n × 2n Gram form).

The n × n form (Domingo-Enrich and Mroueh 2022, arXiv:2205.13941). The non-zero eigenvalues of B^s A B^s are those of
M = D_x^{1/2} Φ_x* B^{2s} Φ_x D_x^{1/2}. With K̃_y = D_y^{1/2} K_yy D_y^{1/2} = V diag(Λ) Vᵀ,
the eigenvectors of Σ̂_q are u_j = Φ_y D_y^{1/2} v_j/√Λ_j with eigenvalues Λ_j, so with
e = 2s = (1 − α)/α

    B^e = λ^e [I + Σ_j ((1 + Λ_j/λ)^e − 1) u_j u_j*],
    M   = λ^e [K̃_x − S Sᵀ],   K̃_x = D_x^{1/2} K_xx D_x^{1/2},
    S   = D_x^{1/2} K_xy D_y^{1/2} V diag(√(−h)),   h_j = expm1(e·log1p(Λ_j/λ))/Λ_j ≤ 0

(h_j → e/λ as Λ_j → 0), and tr[(B^s A B^s)^α] = Σ μ_i(M)^α, summed in log space. At
α = 1, with a = eig(K̃_x) and W = D_x^{1/2} K_xy D_y^{1/2} V,

    D_{1,λ} = Σ a log a − log λ − Σ_j log1p(Λ_j/λ)/Λ_j · ‖W_{:,j}‖².

Only symmetric eigensolvers are used: on these matrices a general eigensolver
returns complex garbage once the Gram matrix is near singular. K̃_y's
eigendecomposition, W and eig(K̃_x) do not depend on (α, λ), so a sweep over a grid
costs one n × n product and one symmetric eigenvalue computation per grid point
beyond them (and nothing more per λ at α = 1).
"""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np
from scipy.special import logsumexp

from accounting.validation import check_array, check_real

from .kernel import check_samples, rbf_grams

__all__ = ["RKRDSweep", "rkrd", "rkrd_sweep", "rkrd_from_grams", "rkrd_direct",
           "check_alphas", "check_lambdas"]

#: relative size of a negative eigenvalue beyond which a Gram matrix is not PSD
_PSD_TOL = 1e-8


def check_alphas(alphas: Any, *, minimum: float = 1.0) -> np.ndarray:
    """Orders α as a 1-d float array, each finite and >= ``minimum`` (α = 1: KL limit)."""
    arr = np.atleast_1d(check_array("alpha", alphas, lo=minimum))
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"alpha must be a number or a non-empty 1-d sequence, got shape "
                         f"{arr.shape}")
    return arr


def check_lambdas(lambdas: Any) -> np.ndarray:
    """Regularizations λ as a 1-d float array, each finite and > 0."""
    arr = np.atleast_1d(check_array("lam", lambdas, lo=0.0, lo_open=True))
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"lam must be a number or a non-empty 1-d sequence, got shape "
                         f"{arr.shape}")
    return arr


def _weights(name: str, w: Any | None, n: int) -> np.ndarray:
    if w is None:
        return np.full(n, 1.0 / n)
    arr = check_array(name, w, lo=0.0)
    if arr.shape != (n,):
        raise ValueError(f"{name} must have shape ({n},), got {arr.shape}")
    if abs(arr.sum() - 1.0) > 1e-10:
        raise ValueError(f"{name} must sum to 1, got {arr.sum():.17g}")
    return arr


def _check_grams(kxx: Any, kxy: Any, kyy: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    kxx, kxy, kyy = (check_array(n, k) for n, k in (("kxx", kxx), ("kxy", kxy), ("kyy", kyy)))
    n_p, n_q = kxx.shape[0] if kxx.ndim == 2 else -1, kyy.shape[0] if kyy.ndim == 2 else -1
    if kxx.shape != (n_p, n_p) or kyy.shape != (n_q, n_q) or kxy.shape != (n_p, n_q):
        raise ValueError(f"Gram blocks must have shapes (n_p, n_p), (n_p, n_q), (n_q, n_q); "
                         f"got kxx {kxx.shape}, kxy {kxy.shape}, kyy {kyy.shape}")
    for name, k in (("kxx", kxx), ("kyy", kyy)):
        if np.max(np.abs(np.diag(k) - 1.0)) > 1e-8:
            raise ValueError(f"{name} must have a unit diagonal (a kernel with k(x, x) = 1)")
        if np.max(np.abs(k - k.T)) > 1e-10 * max(1.0, float(np.max(np.abs(k)))):
            raise ValueError(f"{name} must be symmetric")
    return kxx, kxy, kyy


def _log_trace_power(mu: np.ndarray, alpha: float) -> float:
    """log Σ μ_i^α over the positive μ_i (roundoff negatives of a PSD matrix dropped)."""
    pos = mu[mu > 0.0]
    if pos.size == 0:
        return -np.inf
    return float(logsumexp(alpha * np.log(pos)))


def _xlogx_sum(a: np.ndarray) -> float:
    pos = a[a > 0.0]
    return float(np.sum(pos * np.log(pos)))


def _psd_eigh(name: str, k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    lam, vec = np.linalg.eigh(k)
    top = max(float(lam[-1]), 0.0)
    if lam[0] < -_PSD_TOL * max(top, 1e-300) - 1e-14:
        raise ValueError(f"{name} is not positive semidefinite (eigenvalue {lam[0]:.3g}); "
                         f"the kernel must be positive definite")
    return np.maximum(lam, 0.0), vec


class _Prepared:
    """What D̂ needs that does not depend on (α, λ): K̃_x, Λ, W, and eig(K̃_x) on demand."""

    def __init__(self, kxx: np.ndarray, kxy: np.ndarray, kyy: np.ndarray,
                 wx: np.ndarray, wy: np.ndarray) -> None:
        sx, sy = np.sqrt(wx), np.sqrt(wy)
        self.kx = sx[:, None] * kxx * sx[None, :]
        self.lam_y, vec = _psd_eigh("kyy", sy[:, None] * kyy * sy[None, :])
        self.w = (sx[:, None] * kxy * sy[None, :]) @ vec
        self.w_sq = np.einsum("ij,ij->j", self.w, self.w)
        self._eig_x: np.ndarray | None = None

    def eig_x(self) -> np.ndarray:
        if self._eig_x is None:
            a = np.linalg.eigvalsh(self.kx)
            if a[0] < -_PSD_TOL * max(float(a[-1]), 1e-300) - 1e-14:
                raise ValueError(f"kxx is not positive semidefinite (eigenvalue {a[0]:.3g})")
            self._eig_x = np.maximum(a, 0.0)
        return self._eig_x

    def divergence(self, alpha: float, lam: float) -> float:
        lam_y = self.lam_y
        if alpha == 1.0:
            # log1p(Λ/λ)/Λ, with its Λ → 0 limit 1/λ
            ratio = np.where(lam_y > 0.0, np.log1p(lam_y / lam) / np.where(lam_y > 0.0, lam_y,
                                                                              1.0), 1.0 / lam)
            kl: float = _xlogx_sum(self.eig_x()) - np.log(lam) - float(ratio @ self.w_sq)
            return kl
        e = (1.0 - alpha) / alpha
        safe = np.where(lam_y > 0.0, lam_y, 1.0)
        h = np.where(lam_y > 0.0, np.expm1(e * np.log1p(lam_y / lam)) / safe, e / lam)
        s = self.w * np.sqrt(-h)[None, :]
        m = self.kx - s @ s.T
        mu = np.linalg.eigvalsh(m)
        # log tr M^α = α·e·log λ + log Σ μ'^α, and α·e = 1 − α
        return float(-np.log(lam) + _log_trace_power(mu, alpha) / (alpha - 1.0))


def rkrd_from_grams(kxx: Any, kxy: Any, kyy: Any, alphas: Any, lambdas: Any, *,
                    wx: Any | None = None, wy: Any | None = None) -> np.ndarray:
    """D̂_{α,λ} on the grid ``alphas`` × ``lambdas`` from the Gram blocks of a kernel with
    k(x, x) = 1 (the n × n form of the module docstring).

    ``wx``, ``wy`` are the weights of the points in Σ̂_p and Σ̂_q (default uniform, 1/n):
    with weights, the same formula gives the exact D_{α,λ} of two distributions on a
    finite set. Returns an array of shape (len(alphas), len(lambdas)); α = 1 is the
    regularized kernel KL divergence.
    """
    kxx, kxy, kyy = _check_grams(kxx, kxy, kyy)
    a, lams = check_alphas(alphas), check_lambdas(lambdas)
    prep = _Prepared(kxx, kxy, kyy, _weights("wx", wx, kxx.shape[0]),
                     _weights("wy", wy, kyy.shape[0]))
    return np.array([[prep.divergence(float(al), float(la)) for la in lams] for al in a])


def rkrd_direct(kxx: Any, kxy: Any, kyy: Any, alpha: float, lam: float, *,
                wx: Any | None = None, wy: Any | None = None) -> float:
    """D̂_{α,λ} by the direct (n_p + n_q)-dimensional computation, for cross-checks.

    In the span of all features, with the joint Gram matrix K = R² (R = K^{1/2}),
    Σ̂_p ≅ R diag(w, 0) R and Σ̂_q + λI ≅ R diag(0, v) R + λI =: B̃; then
    D = 1/(α−1)·log tr[(B̃^s Ã B̃^s)^α] (arXiv:2205.13941, Prop. 7). Three symmetric
    eigendecompositions of the joint size: several times slower than ``rkrd_from_grams``.
    """
    kxx, kxy, kyy = _check_grams(kxx, kxy, kyy)
    alpha = check_real("alpha", alpha, lo=1.0)
    lam = check_real("lam", lam, lo=0.0, lo_open=True)
    n_p = kxx.shape[0]
    w = np.concatenate([_weights("wx", wx, n_p), np.zeros(kyy.shape[0])])
    v = np.concatenate([np.zeros(n_p), _weights("wy", wy, kyy.shape[0])])
    kappa, u = _psd_eigh("joint Gram matrix", np.block([[kxx, kxy], [kxy.T, kyy]]))
    root = (u * np.sqrt(kappa)) @ u.T
    a_t = root @ (w[:, None] * root)
    b_eig, q = np.linalg.eigh(root @ (v[:, None] * root) + lam * np.eye(w.size))
    if alpha == 1.0:
        a_eig = np.maximum(np.linalg.eigvalsh(a_t), 0.0)
        diag = np.einsum("ij,ij->j", q, a_t @ q)
        return _xlogx_sum(a_eig) - float(diag @ np.log(b_eig))
    s = (1.0 - alpha) / (2.0 * alpha)
    bs = (q * b_eig ** s) @ q.T
    t = bs @ a_t @ bs
    mu = np.linalg.eigvalsh(0.5 * (t + t.T))
    return _log_trace_power(mu, alpha) / (alpha - 1.0)


@attrs.frozen
class RKRDSweep:
    """D̂_{α,λ} of samples on a grid: ``values[i, j]`` at ``alphas[i]``, ``lambdas[j]``."""

    alphas: np.ndarray = attrs.field(eq=False)
    lambdas: np.ndarray = attrs.field(eq=False)
    values: np.ndarray = attrs.field(eq=False, repr=False)
    bandwidth: float
    n_p: int
    n_q: int

    def at(self, alpha: float, lam: float) -> float:
        """The value at a grid point (α, λ)."""
        i = np.flatnonzero(np.isclose(self.alphas, alpha, rtol=1e-12, atol=0.0))
        j = np.flatnonzero(np.isclose(self.lambdas, lam, rtol=1e-12, atol=0.0))
        if i.size == 0 or j.size == 0:
            raise ValueError(f"(alpha, lam) = ({alpha:g}, {lam:g}) is not on the grid")
        return float(self.values[i[0], j[0]])

    def to_dict(self) -> dict[str, Any]:
        return {"alphas": self.alphas.tolist(), "lambdas": self.lambdas.tolist(),
                "values": self.values.tolist(), "bandwidth": self.bandwidth,
                "n_p": self.n_p, "n_q": self.n_q}


def rkrd_sweep(x: Any, y: Any, alphas: Any, lambdas: Any, *,
               bandwidth: float | None = None) -> RKRDSweep:
    """D̂_{α,λ}(Σ̂_p‖Σ̂_q) of samples x ~ p, y ~ q (shape (n, d)) on ``alphas`` × ``lambdas``.

    RBF kernel exp(−‖u − v‖²/h²) with h = ``bandwidth``, or by default the median of
    the cross distances ‖x_i − y_j‖. The eigendecomposition of K_yy is shared by the
    whole grid.
    """
    x, y = check_samples(x, y)
    a, lams = check_alphas(alphas), check_lambdas(lambdas)
    g = rbf_grams(x, y, bandwidth)
    values = rkrd_from_grams(g.kxx, g.kxy, g.kyy, a, lams)
    return RKRDSweep(a, lams, values, g.bandwidth, x.shape[0], y.shape[0])


def rkrd(x: Any, y: Any, alpha: float, lam: float, *,
         bandwidth: float | None = None) -> float:
    """The estimate D̂_{α,λ} at one (α, λ); see ``rkrd_sweep``."""
    value: float = rkrd_sweep(x, y, [alpha], [lam], bandwidth=bandwidth).values[0, 0]
    return value

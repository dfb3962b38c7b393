"""The RBF kernel on samples: checked inputs, squared distances, bandwidth, Gram matrices.

k(x, y) = exp(−‖x − y‖²/h²), so k(x, x) = 1 as the kernel Rényi divergence requires
(arXiv:2205.13941, §2: tr Σ_p = 1). The bandwidth h is given, or chosen by the median
heuristic over the cross distances ‖x_i − y_j‖, the rule of the paper's experiments
(Domingo-Enrich and Mroueh 2022, arXiv:2205.13941). Distances come from ‖x‖² + ‖y‖² − 2⟨x, y⟩ on centred data, so no
n × n × d temporary is built.
"""

from __future__ import annotations

from typing import Any, Optional

import attrs
import numpy as np

from accounting.validation import check_array, check_positive

__all__ = ["real_array", "check_samples", "squared_distances", "median_bandwidth", "rbf", "Grams",
           "rbf_grams"]


def real_array(name: str, value: Any) -> np.ndarray:
    """``value`` as an array of a real numeric dtype (int or float), not yet converted.

    Complex, object, string, boolean and other dtypes are a TypeError: a cast would
    drop an imaginary part or guess a meaning.
    """
    try:
        raw = value if isinstance(value, np.ndarray) else np.asarray(value)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be an array of real numbers ({exc})") from None
    kind = raw.dtype.kind
    if kind == "c":
        raise TypeError(f"{name} must be real-valued, got a complex array ({raw.dtype}); "
                        f"audit the real and imaginary parts as separate coordinates")
    if kind not in "iuf":
        what = {"O": "an object array", "b": "a boolean array", "U": "a string array",
                "S": "a bytes array", "V": "a structured array", "M": "a datetime array",
                "m": "a timedelta array"}.get(kind, f"an array of dtype {raw.dtype}")
        raise TypeError(f"{name} must be an array of real numbers (int or float), got {what}")
    return raw


def check_samples(x: Any, y: Any) -> tuple[np.ndarray, np.ndarray]:
    """``x`` and ``y`` as float64 arrays of shape (n_p, d) and (n_q, d).

    A 1-d array is one sample per entry (d = 1). Each needs at least 2 samples, the
    same dimension d and only finite real values: complex, object, string and boolean
    arrays are refused (a cast would drop the imaginary part or guess a meaning).
    """
    out = []
    for name, value in (("x", x), ("y", y)):
        raw = real_array(name, value)
        if raw.size == 0:
            raise ValueError(f"{name} is empty (shape {raw.shape}); it must hold n >= 2 "
                             f"samples of dimension d >= 1")
        arr = check_array(name, raw)
        if arr.ndim == 1:
            arr = arr[:, None]
        if arr.ndim != 2:
            raise ValueError(f"{name} must have shape (n, d), got an array of shape {arr.shape}")
        if arr.shape[0] < 2:
            raise ValueError(f"{name} must hold n >= 2 samples (rows), got n = {arr.shape[0]}")
        out.append(arr)
    if out[0].shape[1] != out[1].shape[1]:
        raise ValueError(f"x and y must have the same dimension d, got shapes {out[0].shape} "
                         f"and {out[1].shape}")
    return out[0], out[1]


def squared_distances(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """‖a_i − b_j‖² for rows of (already centred) ``a`` and ``b``, as an n_a × n_b array.

    The expansion loses relative accuracy when points are far from the origin compared
    with their distances, hence the centring by the caller; roundoff can make an
    entry slightly negative, which is no distance, so it is set to 0.
    """
    # in place: one n_a × n_b array, no temporaries of that size
    sq = a @ (-2.0 * b).T
    sq += np.einsum("ij,ij->i", a, a)[:, None]
    sq += np.einsum("ij,ij->i", b, b)[None, :]
    np.maximum(sq, 0.0, out=sq)
    return sq


def median_bandwidth(sq_xy: np.ndarray) -> float:
    """The median of the cross distances ‖x_i − y_j‖ (from their squares)."""
    # not √median(sq): for an even count the median averages the two middle values
    h = float(np.median(np.sqrt(sq_xy)))
    if not h > 0.0:
        raise ValueError("bandwidth: the median cross distance between x and y is 0 (more "
                         "than half the pairs coincide); give a positive bandwidth")
    return h


def rbf(a: np.ndarray, b: np.ndarray, bandwidth: float) -> np.ndarray:
    """k(a_i, b_j) = exp(−‖a_i − b_j‖²/h²) for rows of (centred) ``a`` and ``b``."""
    sq = squared_distances(a, b)
    sq *= -1.0 / (bandwidth * bandwidth)
    return np.exp(sq, out=sq)


@attrs.frozen
class Grams:
    """The three blocks of the joint Gram matrix of (x, y) and the bandwidth used."""

    kxx: np.ndarray = attrs.field(repr=False, eq=False)
    kxy: np.ndarray = attrs.field(repr=False, eq=False)
    kyy: np.ndarray = attrs.field(repr=False, eq=False)
    bandwidth: float


def rbf_grams(x: np.ndarray, y: np.ndarray, bandwidth: Optional[float] = None) -> Grams:
    """K_xx, K_xy, K_yy of the RBF kernel exp(−‖u − v‖²/h²) on checked samples.

    ``bandwidth`` is h > 0, or None for the median of the cross distances.
    """
    centre = 0.5 * (x.mean(axis=0) + y.mean(axis=0))
    xc, yc = x - centre, y - centre
    sq_xy = squared_distances(xc, yc)
    h = median_bandwidth(sq_xy) if bandwidth is None else check_positive("bandwidth", bandwidth)
    sq_xy *= -1.0 / (h * h)
    grams = [rbf(xc, xc, h), np.exp(sq_xy, out=sq_xy), rbf(yc, yc, h)]
    # the diagonal is exactly k(u, u) = 1; the expansion leaves roundoff there
    np.fill_diagonal(grams[0], 1.0)
    np.fill_diagonal(grams[2], 1.0)
    return Grams(grams[0], grams[1], grams[2], h)

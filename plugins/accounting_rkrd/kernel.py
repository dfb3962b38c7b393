"""The RBF kernel on samples: checked inputs, squared distances, bandwidth, Gram matrices.

k(x, y) = exp(−‖x − y‖²/h²), so k(x, x) = 1 as the kernel Rényi divergence requires
(arXiv:2205.13941, §2: tr Σ_p = 1). The bandwidth h is given, or chosen by the median
heuristic over the cross distances ‖x_i − y_j‖, the rule of the paper's experiments
(Domingo-Enrich and Mroueh 2022, arXiv:2205.13941). Distances come from ‖x‖² + ‖y‖² − 2⟨x, y⟩ on centred data, so no
n × n × d temporary is built.
"""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from accounting.validation import check_array, check_positive

__all__ = ["real_array", "check_samples", "squared_distances", "median_bandwidth", "rbf", "Grams",
           "rbf_grams", "positive_median", "typical_distance", "usable_bandwidths",
           "check_bandwidth", "KernelWarning", "TYPICAL_POINTS"]

#: exp(−u) is a normal float64 for u ≤ 708 (beyond, subnormal, then 0)
_UNDERFLOW = 708.0
#: exp(−u) for u ≥ 2^−52 is a float below 1 (smaller u round it to exactly 1)
_BELOW_ONE = 2.0 ** -52
#: h² must be a normal float64 for −1/h² to be finite and exact
_H_LIMITS = (float(np.sqrt(np.finfo(float).tiny)), float(np.sqrt(np.finfo(float).max)))


class KernelWarning(RuntimeWarning):
    """The RBF kernel on these samples is degenerate (e.g. all samples coincide)."""


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
    k: np.ndarray = np.exp(sq, out=sq)
    return k


@attrs.frozen
class Grams:
    """The three blocks of the joint Gram matrix of (x, y) and the bandwidth used."""

    kxx: np.ndarray = attrs.field(repr=False, eq=False)
    kxy: np.ndarray = attrs.field(repr=False, eq=False)
    kyy: np.ndarray = attrs.field(repr=False, eq=False)
    bandwidth: float


def rbf_grams(x: np.ndarray, y: np.ndarray, bandwidth: float | None = None) -> Grams:
    """K_xx, K_xy, K_yy of the RBF kernel exp(−‖u − v‖²/h²) on checked samples.

    ``bandwidth`` is h > 0, or None for the median of the cross distances.
    """
    centre = 0.5 * (x.mean(axis=0) + y.mean(axis=0))
    xc, yc = x - centre, y - centre
    if bandwidth is not None:   # refused before the n × n work (``check_bandwidth``)
        check_bandwidth(bandwidth, typical_distance(xc, yc))
    sq_xy = squared_distances(xc, yc)
    h = median_bandwidth(sq_xy) if bandwidth is None else float(bandwidth)
    sq_xy *= -1.0 / (h * h)
    grams = [rbf(xc, xc, h), np.exp(sq_xy, out=sq_xy), rbf(yc, yc, h)]
    # the diagonal is exactly k(u, u) = 1; the expansion leaves roundoff there
    np.fill_diagonal(grams[0], 1.0)
    np.fill_diagonal(grams[2], 1.0)
    return Grams(grams[0], grams[1], grams[2], h)


def positive_median(sq: np.ndarray) -> float | None:
    """The median heuristic over the distinct pairs: the median of the non-zero
    distances (from their squares ``sq``; discrete outputs often coincide, and a zero
    bandwidth is no kernel), or None when all pairs coincide."""
    pos = sq[sq > 0.0]
    return float(np.median(np.sqrt(pos))) if pos.size else None


#: points per side from which ``typical_distance`` takes its median by default
TYPICAL_POINTS = 1000


def typical_distance(x: np.ndarray, y: np.ndarray,
                     points: int = TYPICAL_POINTS) -> float | None:
    """``positive_median`` of the distances between the first ``points`` rows of
    (centred) ``x`` and ``y``: the scale a bandwidth must resolve, in memory
    8·points² bytes whatever n (None when those rows all coincide; +∞ when squared
    distances overflow float64)."""
    with np.errstate(over="ignore", invalid="ignore"):
        sq = squared_distances(x[:points], y[:points])
    if not np.all(np.isfinite(sq)):
        return np.inf
    return positive_median(sq)


def usable_bandwidths(scale: float) -> tuple[float, float]:
    """[lo, hi]: the bandwidths h at which k = exp(−d²/h²) of two points at the typical
    distance d = ``scale`` is a normal float below 1, so that the kernel tells them
    apart both from coincident points (k = 1) and from infinitely distant ones (k = 0):
    lo = d/√708 (k = e^{−708}, the smallest normal float64 is e^{−708.4}) and
    hi = d·2^26 (k = e^{−2^{−52}}, the largest float below 1), within the h whose
    square is a normal float64. Empty (lo > hi) when d itself is beyond float64."""
    lo = max(scale / np.sqrt(_UNDERFLOW), _H_LIMITS[0])
    hi = min(scale / np.sqrt(_BELOW_ONE), _H_LIMITS[1])
    return float(lo), float(hi)


def check_bandwidth(bandwidth: float | None, scale: float | None) -> float | None:
    """``bandwidth`` (None: the median heuristic ``scale`` will be used) checked
    against ``usable_bandwidths(scale)``, ``scale`` being the median non-zero distance
    between the samples (None when they all coincide: no range to check against).

    A bandwidth outside the range is a ValueError naming it (``--bandwidth`` on the
    command line) and the range: below it the kernel of the typical pair underflows
    (the Gram matrices tend to the identity, witness scores to 0; below 1.5e-154, h²
    itself underflows and −1/h² divides by zero); above it the kernel of the typical
    pair rounds to 1. A data scale beyond float64 kernels is refused the same way.
    """
    h = None if bandwidth is None else check_positive("bandwidth", bandwidth)
    if scale is None:
        return h
    lo, hi = usable_bandwidths(scale)
    if lo > hi:
        raise ValueError(f"the samples' typical distance {scale:.3g} (median over distinct "
                         f"pairs of x and y) is beyond what an RBF kernel can resolve in "
                         f"float64: rescale x and y (e.g. to unit spread)")
    if h is not None and not lo <= h <= hi:
        what = ("underflows the RBF kernel: exp(−d²/h²) is subnormal or 0" if h < lo
                else "rounds the RBF kernel to 1: exp(−d²/h²) = 1 in float64")
        raise ValueError(f"bandwidth (--bandwidth) = {h:.3g} {what} at the typical distance "
                         f"d = {scale:.3g} between x and y (the median over distinct pairs); "
                         f"give a bandwidth in the usable range [{lo:.3g}, {hi:.3g}] "
                         f"(d/√708 to d·2^26), or none for the median heuristic")
    return h

"""An (ε, δ)-DP guarantee as a mechanism: its dominating four-point pair.

Every (ε, δ)-DP mechanism is, for each pair of neighbours, a post-processing of the
pair on four outcomes (Kairouz, Oh, Viswanath 2015, arXiv:1311.0776: the pair their
optimal composition theorem, Thm 3.3, composes; a dominating pair in the sense of
Zhu, Dong, Wang 2022, arXiv:2106.08567)

  P = (δ, (1 − δ)·σ(ε), (1 − δ)·σ(−ε), 0),   Q = (0, (1 − δ)·σ(−ε), (1 − δ)·σ(ε), δ),

σ(x) = 1/(1 + e^{−x}). Its loss law under P: +∞ with mass δ, +ε with mass (1 − δ)σ(ε),
−ε with mass (1 − δ)σ(−ε); the pair is symmetric (swap the outcomes end to end), so
the add and remove directions coincide. The profile in closed form:

  δ(ε') = 1 − (1 − δ)e^{ε'}                     for ε' ≤ −ε,
        = δ + (1 − δ)(e^ε − e^{ε'})/(1 + e^ε)   for −ε ≤ ε' ≤ ε,
        = δ                                     for ε' ≥ ε,

and the trade-off function is f_{ε,δ}(α) = max{0, 1 − δ − e^ε α, e^{−ε}(1 − δ − α)}
(Dong, Roth, Su 2019, arXiv:1905.02383, Prop. 2.5). δ = 0 is pure ε-DP, whose pair
is randomized response with p = σ(ε): D_α = log[σ(ε)^α σ(−ε)^{1−α} + σ(−ε)^α σ(ε)^{1−α}]
/(α − 1), exact; with δ > 0 every Rényi divergence of order α > 1 is +∞.

Composition is exact: the loss law is finite, so k uses of one guarantee have the law
(2j − k)ε with mass (1 − δ)^k·C(k, j)σ(ε)^j σ(−ε)^{k−j} and mass 1 − (1 − δ)^k at +∞
(``ApproxDPPair._self_compose``), and a list of different guarantees composes by the
exact convolution of ``finite_product`` (``ApproxDPComposition``). This is the optimal
composition of Kairouz–Oh–Viswanath (arXiv:1311.0776, Thm 3.3) evaluated exactly.

Degenerate values: ε = 0, δ = 0 is perfectly private (δ(ε') = 0 for ε' ≥ 0); δ = 1
is non-private (all P-mass at loss +∞: ε(δ') = +∞ for every δ' < 1, D_α = +∞).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import attrs
import numpy as np
from scipy.special import expit

from accounting.numerics.loss import LossPMF
from accounting.pairs.mechanism import Mechanism, Range, parameter
from accounting.pairs.pair import LawPair, Pair, identical_pair, not_provided
from accounting.registry.hookspecs import RegisterMechanism, hookimpl
from accounting.validation import check_count
from accounting.vocabulary import Direction, Exactness, FloatArray

from .finite_product import exact_product
from .gaussian_mixture import float_tuple


def scalar_or_tuple(name: str) -> Callable[[Any], tuple[float, ...]]:
    """attrs converter: one real number (a single guarantee) or a sequence of them."""
    convert = float_tuple(name)

    def conv(value: Any) -> tuple[float, ...]:
        if isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool):
            value = (value,)
        return convert(value)
    return conv

__all__ = ["ApproxDP", "ApproxDPComposition", "ApproxDPPair", "approx_dp_law",
           "EPSILON", "DELTA", "ZCDPGuarantee", "ZCDPGuaranteePair"]

#: ε ∈ [0, 1e8] (beyond, e^{−ε} underflows and the pair is already non-private in
#: float64) and δ ∈ [0, 1] (δ = 1: no guarantee at all)
EPSILON = Range(0.0, 1e8)
DELTA = Range(0.0, 1.0)


def one_sensitivity(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    """attrs validator: ``sensitivity`` is 1 (a stated guarantee has no sensitivity to scale)."""
    if value != 1:
        raise ValueError(f"{type(instance).name}: sensitivity must be 1 (a guarantee has no "
                         f"sensitivity of its own), got {value!r}")


def approx_dp_law(epsilon: float, delta: float, count: int = 1) -> LossPMF:
    """The loss law under P of ``count`` uses of the (ε, δ) four-point pair, exact:
    atoms (2j − k)ε with masses (1 − δ)^k·Binomial(k, σ(ε)) pmf, and 1 − (1 − δ)^k at +∞.

    δ = 1: all mass at +∞ (no finite atoms)."""
    from scipy.stats import binom  # heavy: only when a law is built

    k = check_count("count", count)
    if delta >= 1.0:
        return LossPMF.from_atoms(np.zeros(0), np.zeros(0), 1.0)
    log_keep = k * math.log1p(-delta)                 # log (1 − δ)^k
    j = np.arange(k + 1)
    masses = binom.pmf(j, k, float(expit(epsilon))) * math.exp(log_keep)
    return LossPMF.from_atoms((2.0 * j - k) * epsilon, masses, -math.expm1(log_keep))


@attrs.frozen(eq=False)
class ApproxDPPair(LawPair):
    """The four-point pair of an (ε, δ) guarantee used ``count`` times; exact, symmetric."""

    epsilon: float = 0.0
    delta: float = 0.0
    count: int = 1

    def _self_compose(self, count: int) -> Pair | None:
        total = self.count * check_count("count", count)
        return approx_dp_pair(self.epsilon, self.delta, total)

    def provides(self, primitive: str) -> bool:
        # the closed form f_{ε,δ} is one use's: k uses take β from the exact laws
        # (LawPair's trade-off), not from _beta
        if primitive == "beta" and self.count != 1:
            return False
        return super().provides(primitive)

    def _beta(self, alpha: FloatArray, direction: Direction) -> FloatArray:
        """f_{ε,δ}(α) = max{0, 1 − δ − e^ε α, e^{−ε}(1 − δ − α)} (one use only,
        arXiv:1905.02383, Prop. 2.5); k uses come from the exact law's vertices."""
        if self.count != 1:
            raise not_provided(self, "beta")
        alpha = np.asarray(alpha, dtype=float)
        e, d = self.epsilon, self.delta
        with np.errstate(over="ignore"):
            beta: FloatArray = np.maximum.reduce([np.zeros_like(alpha),
                                                  1.0 - d - math.exp(e) * alpha,
                                                  math.exp(-e) * (1.0 - d - alpha)])
        return beta


def approx_dp_pair(epsilon: float, delta: float, count: int = 1) -> ApproxDPPair:
    """The exact pair of ``count`` uses of an (ε, δ) guarantee."""
    law = approx_dp_law(epsilon, delta, count)
    label = f"({epsilon:g}, {delta:g})-DP" + (f"^{count}" if count > 1 else "")
    return ApproxDPPair((law, law), (law, law), label, epsilon=float(epsilon),
                        delta=float(delta), count=int(count), symmetric=True)


@attrs.frozen
class ApproxDP(Mechanism):
    """A mechanism known only by its (ε, δ)-DP guarantee, accounted by the four-point
    pair that dominates every (ε, δ)-DP mechanism (arXiv:1311.0776).

    ``epsilon`` ∈ [0, 1e8], ``delta`` ∈ [0, 1]; δ = 0 is pure ε-DP. Neighbouring: the
    relation the guarantee was stated for (add/remove by default; the pair is the
    same for replace-one). ``sensitivity`` is not used (it must be 1).
    """

    name = "approx_dp"
    sensitivity: float = attrs.field(default=1.0, kw_only=True, validator=one_sensitivity,
                                     metadata={"range": Range(1.0, 1.0)})
    epsilon: float = parameter(EPSILON)
    delta: float = parameter(DELTA, default=0.0)

    def pair(self) -> ApproxDPPair:
        return approx_dp_pair(float(self.epsilon), float(self.delta))


# the vector fields' converters are named functions (not scalar_or_tuple(...) calls in
# the field) so that mypy's attrs plugin reads the constructor's argument types
def _epsilons(value: Any) -> tuple[float, ...]:
    return scalar_or_tuple("epsilons")(value)


def _deltas(value: Any) -> tuple[float, ...]:
    return scalar_or_tuple("deltas")(value)


def _same_length(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if len(value) != len(instance.epsilons):
        raise ValueError(f"deltas must have one entry per epsilon ({len(instance.epsilons)}), "
                         f"got {len(value)}")


def entries_in(rng: Range) -> Callable[[Any, attrs.Attribute[Any], Any], None]:
    """attrs validator factory: a non-empty sequence whose every entry lies in ``rng``."""
    def check(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
        if not value:
            raise ValueError(f"{attribute.name} must have at least one entry")
        for i, v in enumerate(value):
            rng.check(f"{attribute.name}[{i}]" if len(value) > 1 else attribute.name, v)
    return check


@attrs.frozen
class ApproxDPComposition(Mechanism):
    """The composition of several (ε_i, δ_i) guarantees, exactly (their four-point
    pairs' product law, ``finite_product.exact_product``; equal guarantees grouped
    and composed in closed form).

    ``epsilons`` and ``deltas``: sequences of the same length (a single number is one
    guarantee); each entry in the range of ``ApproxDP``'s. The product is refused
    (ValueError naming the PLD accountant) when its support would exceed
    ``finite_product.MAX_ATOMS`` atoms.
    """

    name = "approx_dp_composition"
    sensitivity: float = attrs.field(default=1.0, kw_only=True, validator=one_sensitivity,
                                     metadata={"range": Range(1.0, 1.0)})
    epsilons: tuple[float, ...] = attrs.field(converter=_epsilons,
                                  validator=entries_in(EPSILON), metadata={"range": EPSILON})
    deltas: tuple[float, ...] = attrs.field(converter=_deltas,
                                validator=[entries_in(DELTA), _same_length],
                                metadata={"range": DELTA})

    def pair(self) -> LawPair:
        groups: dict[tuple[float, float], int] = {}
        for e, d in zip(self.epsilons, self.deltas):
            groups[(e, d)] = groups.get((e, d), 0) + 1
        parts = [approx_dp_pair(e, d, k) for (e, d), k in groups.items()]
        if len(parts) == 1:
            return parts[0]
        return exact_product(parts)


# ------------------------------------------------------------ a zCDP guarantee
#: ρ and ξ of a (ξ, ρ)-zCDP guarantee, each in [0, 5000] (ρ = 5000 is the Gaussian of
#: μ = 100, the least noise the ``gaussian`` mechanism takes)
RHO = Range(0.0, 5000.0)
XI = Range(0.0, 5000.0)


#: the ε grid of a zCDP guarantee's profile: points from 0 to the ε where the Rényi
#: conversion's δ falls to ``_ZCDP_FLOOR``
_ZCDP_POINTS = 2049
_ZCDP_FLOOR = 1e-300


@functools.lru_cache(maxsize=64)
def zcdp_profile_hull(rho: float, xi: float) -> tuple[np.ndarray, np.ndarray]:
    """The vertices (ε_j, δ_j) of the profile ``ZCDPGuaranteePair`` answers, the first
    at ε = −∞ (γ = e^ε = 0, δ = 1): the lower convex hull, in γ, of (0, 1), the points
    (e^{ε_i}, δ_i) for ε_i ≥ 0, δ_i the Rényi conversion of D_α ≤ ξ + ρα at ε_i
    (``converters.rdp_delta``: Canonne, Kamath, Steinke 2020, arXiv:2004.00010,
    Prop. 12, over continuous α), and their mirror images (e^{−ε_i},
    1 − e^{−ε_i}(1 − δ_i)), the bound the other order of neighbours puts on ε < 0.
    Kept in ε: every γ ratio is an exp of a difference."""
    from accounting.curves.converters import rdp_delta, rdp_epsilon

    def cgf(t: np.ndarray) -> np.ndarray:
        t = np.asarray(t, dtype=float)
        k: np.ndarray = t * (xi + rho * (t + 1.0))
        return k

    top = float(rdp_epsilon(cgf, np.array([_ZCDP_FLOOR]))[0])
    pos = np.linspace(0.0, max(top, 1e-6), _ZCDP_POINTS)
    d_pos = np.minimum(rdp_delta(cgf, pos), 1.0)
    # below ε = 0 a profile is fixed by the other order's: δ(−ε) = 1 − e^{−ε}(1 − δ(ε))
    # (H_γ(P‖Q) = 1 − γ + γ·H_{1/γ}(Q‖P)); the guarantee bounds both orders alike
    d_neg = -np.expm1(-pos[:0:-1]) + np.exp(-pos[:0:-1]) * d_pos[:0:-1]
    eps = np.concatenate([[-np.inf], -pos[:0:-1], pos])
    delta = np.concatenate([[1.0], np.minimum(d_neg, 1.0), d_pos])
    hull: list[int] = []
    for i in range(eps.size):   # Andrew's monotone chain, lower hull, in γ / γ_i
        while len(hull) >= 2:
            j, k = hull[-2], hull[-1]
            xj, xk = math.exp(eps[j] - eps[i]), math.exp(eps[k] - eps[i])
            if (xk - xj) * (delta[i] - delta[j]) - (delta[k] - delta[j]) * (1.0 - xj) <= 0:
                hull.pop()
            else:
                break
        hull.append(i)
    return eps[hull], delta[hull]


def hull_profile(vertices: tuple[np.ndarray, np.ndarray], eps: FloatArray) -> FloatArray:
    """δ(ε) of ``zcdp_profile_hull``'s vertices: linear in γ = e^ε between vertices
    (weight expm1(ε − ε_j)/expm1(ε_{j+1} − ε_j); from γ = 0, e^{ε − ε_1}), the last δ
    beyond the last vertex."""
    ve, vd = vertices
    eps = np.asarray(eps, dtype=float)
    j = np.clip(np.searchsorted(ve, eps, side="right") - 1, 0, ve.size - 1)
    nxt = np.minimum(j + 1, ve.size - 1)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        w = np.where(j == 0, np.exp(eps - ve[1]),
                     np.expm1(eps - ve[j]) / np.expm1(ve[nxt] - ve[j]))
    w = np.clip(np.nan_to_num(w, nan=1.0), 0.0, 1.0)
    out: FloatArray = np.where(j == ve.size - 1, vd[-1], vd[j] + (vd[nxt] - vd[j]) * w)
    return out


@attrs.frozen(eq=False)
class ZCDPGuaranteePair(Pair):
    """A dominating pair of every mechanism meeting a (ξ, ρ)-zCDP guarantee.

    Rényi side: upper CGF K(t) = t·(ξ + ρ(t + 1)), i.e. D_α ≤ ξ + ρα for every
    α = t + 1 > 1, in both directions (Bun, Steinke 2016, arXiv:1605.02065, Def. 1.1;
    dp_accounting's ``ZCDpEvent``), labelled an upper bound; lower CGF 0 (a mechanism
    meeting the guarantee may leak nothing). ρ* ≤ ρ + ξ (D_α ≤ (ξ + ρ)α, α ≥ 1).

    Profile side (so that it composes in a PLD): δ(ε) in γ = e^ε is the lower convex
    hull ``zcdp_profile_hull`` of (0, 1), the conversion's points (e^{ε_i}, δ_i) and
    their mirror images for ε < 0, linear between vertices, δ_N beyond the last (kept
    as mass at +∞). Why it dominates: for any mechanism M meeting the guarantee and
    either order of neighbours, γ ↦ H_γ(M(D)‖M(D′)) is convex and non-increasing with
    H_0 = 1; H_γ ≤ δ_i at γ_i (the conversion bounds both orders) and, by
    H_γ(P‖Q) = 1 − γ + γH_{1/γ}(Q‖P), H ≤ the mirror points below γ = 1; so H lies
    below the chord of any two points and below δ_N past γ_N, i.e. below the hull. The
    hull is itself a privacy profile (convex, non-increasing, 1 at γ = 0, slopes ≥ −1)
    and is its own mirror image (the set of points is, and the mirror map keeps
    convexity and order), so it is the profile of a symmetric pair, which then
    dominates M in both orders (Zhu, Dong, Wang 2022, arXiv:2106.08567, §2: pairs
    whose profile is pointwise larger dominate; composition keeps it, their Thm 10). The lower side is
    a mechanism that meets the guarantee (``member``). Coarse points only loosen the
    upper side.
    """

    rho: float
    xi: float = 0.0

    exact = False
    symmetric = True

    def _profile(self, eps: FloatArray, direction: Direction) -> FloatArray:
        delta = hull_profile(zcdp_profile_hull(self.rho, self.xi), eps)
        # the interpolation rounds: a few ulps up keeps the side certified
        out: FloatArray = np.minimum(delta * (1.0 + 1e-12), 1.0)
        return out

    def member(self) -> Pair:
        """A pair that meets the guarantee, the lower side: the Gaussian of μ = √(2ρ)
        (D_α = ρα exactly, Bun, Steinke 2016, Prop. 1.6), or for ρ = 0 the pure ξ-DP
        pair (D_α ≤ ξ, ibid. Prop. 1.4's setting)."""
        if self.rho > 0:
            from .gaussian import GaussianPair
            return GaussianPair(math.sqrt(2.0 * self.rho))
        return approx_dp_pair(self.xi, 0.0)

    def _profile_lower(self, eps: FloatArray, direction: Direction) -> FloatArray:
        return self.member()._profile(eps, direction)

    def _cgf(self, t: FloatArray, direction: Direction) -> FloatArray:
        t = np.asarray(t, dtype=float)
        k: FloatArray = t * (self.xi + self.rho * (t + 1.0))
        return k

    def cgf_lower(self, t: FloatArray, direction: Direction) -> FloatArray:
        return self.member()._cgf(t, direction)

    def cgf_exactness(self) -> Exactness:
        return Exactness.UPPER

    def rho_bound(self, direction: Direction) -> float | None:
        return self.rho + self.xi

    def describe(self) -> str:
        xi = f", ξ={self.xi:g}" if self.xi else ""
        return f"zCDP guarantee (ρ={self.rho:g}{xi})"


@attrs.frozen
class ZCDPGuarantee(Mechanism):
    """A mechanism known only by its (ξ, ρ)-zCDP guarantee (ξ = 0: ρ-zCDP): its Rényi
    curve is the bound D_α ≤ ξ + ρα (arXiv:1605.02065, Def. 1.1; ``ZCDPGuaranteePair``),
    labelled an upper bound, and a dominating pair built from that bound's (ε, δ)
    conversion for the PLD (see ``ZCDPGuaranteePair``). Composed with other
    guarantees, the RDP or zCDP accountant (``curve(RDP)``) may answer a smaller ε than
    the PLD: both are certified.

    ``rho``, ``xi`` ∈ [0, 5000]. ``sensitivity`` is not used (it must be 1).
    """

    name = "zcdp_guarantee"
    sensitivity: float = attrs.field(default=1.0, kw_only=True, validator=one_sensitivity,
                                     metadata={"range": Range(1.0, 1.0)})
    rho: float = parameter(RHO)
    xi: float = parameter(XI, default=0.0)

    def pair(self) -> Pair:
        if self.rho == 0 and self.xi == 0:
            return identical_pair("zCDP guarantee (ρ=0): no privacy loss")
        return ZCDPGuaranteePair(float(self.rho), float(self.xi))


@hookimpl
def accounting_register_mechanisms(register: RegisterMechanism) -> None:
    register(ApproxDP)
    register(ApproxDPComposition)
    register(ZCDPGuarantee)

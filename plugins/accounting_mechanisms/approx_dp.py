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

import math
from collections.abc import Callable
from typing import Any

import attrs
import numpy as np
from scipy.special import expit

from accounting.numerics.loss import LossPMF
from accounting.pairs.mechanism import Mechanism, Range, parameter
from accounting.pairs.pair import LawPair, Pair, not_provided
from accounting.registry.hookspecs import RegisterMechanism, hookimpl
from accounting.validation import check_count
from accounting.vocabulary import Direction, FloatArray

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
           "EPSILON", "DELTA"]

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


@hookimpl
def accounting_register_mechanisms(register: RegisterMechanism) -> None:
    register(ApproxDP)
    register(ApproxDPComposition)

"""The contract test suite of converters (``accounting.testing.ConverterContract``).

Subclass it in a pytest module with a ``Test…`` name:

    from accounting.testing import ConverterContract

    class TestMyEdge(ConverterContract):
        converter = "my rdp→profile"          # a registered name, or a Converter
        options = {}                           # passed to every call (optional)

Each check feeds the converter the source-kind curve of a few exact finite pairs
(``pairs``; by default randomized-response-like and three-point pairs, asymmetric
ones included, built with ``accounting.pairs.pair.discrete_pair``) and compares its
output with the pair's own target-kind curve, derived exactly from the loss laws:

* the output is a curve of the target kind and passes ``check_curve``;
* soundness: the output's pessimistic side is never optimistic — δ(ε) and D_α not
  below, β(α) not above, the exact values (up to ``tolerance``);
* an edge labelled exact also keeps its optimistic side on the right side: δ(ε) and
  D_α not above, β(α) not below the exact values (up to ``tolerance``);
* the input curve is not modified.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, ClassVar

import numpy as np

from accounting.curves.characteristic import CharacteristicFunction
from accounting.curves.graph import Converter, check_curve, edges
from accounting.curves.pld import PLD
from accounting.curves.profile import PrivacyProfile
from accounting.curves.rdp import RDP
from accounting.curves.tradeoff import TradeOff
from accounting.curves.zcdp import ZCDP
from accounting.pairs.pair import Pair, discrete_pair
from accounting.vocabulary import Exactness

__all__ = ["ConverterContract", "default_pairs"]

_DIRECTIONS = ("forward", "backward")
EPS = np.linspace(-1.0, 3.0, 41)
ALPHA_TYPE_I = np.linspace(0.0, 1.0, 101)
ORDERS = np.array([1.5, 2.0, 4.0, 8.0])
#: the arguments t of φ(t) = E[e^{itL}] compared
TIMES = np.linspace(-4.0, 4.0, 17)


def default_pairs() -> list[Pair]:
    """Exact finite pairs: a symmetric two-point pair and an asymmetric three-point one."""
    return [discrete_pair(np.array([0.75, 0.25]), np.array([0.25, 0.75]), "rr(0.75)"),
            discrete_pair(np.array([0.5, 0.3, 0.2]), np.array([0.2, 0.3, 0.5]), "three-point")]


def _sides(kind: type, curve: Any, reference: Any, bound: str) -> list[tuple[str, np.ndarray,
                                                                                np.ndarray, int]]:
    """(what, output values, exact values, sign) per direction: sign +1 where a larger
    value is more pessimistic (δ, D_α, ρ), −1 where smaller is (β)."""
    out = []
    for d in _DIRECTIONS:
        if kind in (PLD, PrivacyProfile):
            out.append((f"δ(ε) {d}", curve.delta(EPS, d, bound), reference.delta(EPS, d), 1))
        elif kind is TradeOff:
            out.append((f"β(α) {d}", curve.beta(ALPHA_TYPE_I, d, bound),
                        reference.beta(ALPHA_TYPE_I, d), -1))
        elif kind is RDP:
            out.append((f"D_α {d}", curve.rdp(ORDERS, d, bound), reference.rdp(ORDERS, d), 1))
        elif kind is ZCDP:
            out.append((f"ρ {d}", np.atleast_1d(curve.rho(d, bound)),
                        np.atleast_1d(reference.rho(d)), 1))
        elif kind is CharacteristicFunction:
            # φ is complex and has no pessimistic side: its accuracy is ``error(t)``,
            # checked by ``test_pessimistic_side_is_sound`` (sign 0 here)
            out.append((f"|φ(t) − φ_ref(t)| − error {d}",
                        np.abs(curve.phi(TIMES, d) - reference.phi(TIMES, d))
                        - curve.error(TIMES, d) - reference.error(TIMES, d),
                        np.zeros(TIMES.shape), 0))
    return out


class ConverterContract:
    """Base class of a converter's contract tests; subclass it with ``Test…``."""

    converter: ClassVar[Any] = None
    options: ClassVar[dict[str, Any]] = {}
    tolerance: ClassVar[float] = 1e-6
    pairs: ClassVar[list[Pair]] = []

    def _edge(self) -> Converter:
        conv = type(self).converter
        if isinstance(conv, Converter):
            return conv
        for edge in edges():
            if edge.name == conv:
                return edge
        raise AssertionError(f"no converter named {conv!r} is registered")

    def _cases(self) -> Iterator[tuple[Converter, Pair, Any, Any]]:
        edge = self._edge()
        for pair in type(self).pairs or default_pairs():
            source: Any = pair.curve(edge.source)   # of the edge's kind, known at run time
            yield edge, pair, source, edge(source, **type(self).options)

    def test_output_kind_and_validity(self) -> None:
        for edge, pair, _, out in self._cases():
            assert isinstance(out, edge.target), (
                f"{edge.name}: returned {type(out).__name__}, not {edge.target.__name__}")
            problem = check_curve(out, edge.target)
            assert problem is None, f"{edge.name} on {pair.describe()}: {problem}"

    def test_pessimistic_side_is_sound(self) -> None:
        for edge, pair, _, out in self._cases():
            exact: Any = pair.curve(edge.target)
            for what, mine, ref, sign in _sides(edge.target, out, exact, "upper"):
                gap = (sign * (np.asarray(ref, float) - np.asarray(mine, float)) if sign
                       else np.asarray(mine, float))   # φ: the excess over its error bound
                bad = gap > type(self).tolerance * np.maximum(1.0, np.abs(ref))
                assert not bad.any(), (f"{edge.name} on {pair.describe()}: {what} is "
                                       f"optimistic: {np.asarray(mine)[bad]} vs exact "
                                       f"{np.asarray(ref)[bad]}")

    def test_exact_edge_keeps_its_optimistic_side(self) -> None:
        import pytest

        edge = self._edge()
        if edge.exactness is not Exactness.EXACT:
            pytest.skip(f"{edge.name} is labelled {edge.exactness.value}, not exact")
        for edge, pair, _, out in self._cases():
            if out.lower is None:
                continue
            exact: Any = pair.curve(edge.target)
            for what, mine, ref, sign in _sides(edge.target, out, exact, "lower"):
                gap = sign * (np.asarray(mine, float) - np.asarray(ref, float))
                bad = gap > type(self).tolerance * np.maximum(1.0, np.abs(ref))
                assert not bad.any(), (f"{edge.name} on {pair.describe()}: optimistic {what} "
                                       f"is pessimistic beyond the truth: "
                                       f"{np.asarray(mine)[bad]} vs {np.asarray(ref)[bad]}")

    def test_input_is_not_modified(self) -> None:
        edge = self._edge()
        for pair in type(self).pairs or default_pairs():
            source: Any = pair.curve(edge.source)   # of the edge's kind, known at run time
            before = [np.array(v, copy=True) for v in _sides(edge.source, source, source,
                                                              "upper")[0][1:3]]
            edge(source, **type(self).options)
            after = _sides(edge.source, source, source, "upper")[0][1:3]
            for b, a in zip(before, after):
                np.testing.assert_array_equal(b, a, err_msg=f"{edge.name} modified its input")

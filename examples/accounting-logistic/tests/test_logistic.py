"""The example plugin passes the library's contract suite and its own closed forms."""

from __future__ import annotations

import numpy as np
from scipy import integrate

import accounting
from accounting import PLD
from accounting.testing import MechanismContract
from accounting_logistic import Logistic


class TestLogisticContract(MechanismContract):
    mechanism = Logistic(s=1.0)
    bad_parameters = [dict(s=0.0), dict(s=-1.0), dict(s=float("nan"))]


def exact_delta(eps: float, s: float, sensitivity: float = 1.0) -> float:
    """δ(ε) = ∫ (p(x − Δ) − e^ε p(x))₊ dx by adaptive quadrature."""
    def p(x):
        z = abs(x) / s
        return np.exp(-z) / (s * (1 + np.exp(-z)) ** 2)
    f = lambda x: max(p(x - sensitivity) - np.exp(eps) * p(x), 0.0)  # noqa: E731
    return integrate.quad(f, -60 * s, 60 * s, points=[0.0, sensitivity], limit=400)[0]


def test_registered_by_its_entry_point():
    assert accounting.default_registry().mechanism("logistic") is Logistic
    assert accounting.mechanism("logistic", s=2.0) == Logistic(s=2.0)


def test_pld_brackets_the_exact_profile():
    pld = Logistic(s=1.0).curve(PLD, step=1e-3)
    for eps in (0.1, 0.5, 0.9):
        exact = exact_delta(eps, 1.0)
        lo, hi = pld.delta_interval(eps, "forward")
        assert float(lo) <= exact + 1e-9 and exact <= float(hi) + 1e-12
        assert float(hi) - float(lo) < 1e-3


def test_pure_dp_at_sensitivity_over_scale():
    # the loss is bounded by Δ/s = 0.5: δ(0.5) = 0 and ε(0) = 0.5
    pld = Logistic(s=2.0).curve(PLD, step=1e-3)
    assert float(pld.delta(0.5 + 1e-3)) == 0.0
    assert abs(float(pld.epsilon(0.0)) - 0.5) < 2e-3

"""The accountant: compose mechanisms, query ε / δ under PLD, RDP or zCDP."""

from __future__ import annotations

import numpy as np
import pytest

import accounting
from accounting import PLD, RDP, Accountant, ComposedPair, TradeOff, ZCDP

from closed_forms import (cks_zcdp_epsilon, gaussian_beta, gaussian_delta, gaussian_epsilon,
                          improved_rdp_epsilon)

STEP = 1e-3


@pytest.fixture(scope="module")
def gauss10():
    return Accountant(step=STEP).compose(accounting.mechanism("gaussian", sigma=2.0), count=10)


def test_pld_accountant_brackets_the_exact_epsilon(gauss10):
    mu = np.sqrt(10) / 2.0
    for delta in (1e-3, 1e-6, 1e-9):
        exact = gaussian_epsilon(mu, delta)
        up = float(gauss10.epsilon(delta))
        lo, up2 = gauss10.epsilon_interval(delta)
        assert up >= exact and lo <= exact <= up2
        assert up - exact < 1e-4


def test_pld_accountant_delta_is_an_upper_bound(gauss10):
    eps = np.linspace(0, 5, 51)
    exact = gaussian_delta(np.sqrt(10) / 2.0, eps)
    got = gauss10.delta(eps)
    assert np.all(got >= exact * (1 - 1e-12))
    assert np.max(got - exact) < 1e-6


def test_rdp_and_zcdp_accountants(gauss10):
    rho = 10 / (2 * 2.0 ** 2)
    for delta in (1e-5, 1e-8):
        pld = float(gauss10.epsilon(delta))
        rdp = float(gauss10.epsilon(delta, accountant="rdp"))
        zc = float(gauss10.epsilon(delta, accountant="ZCDP"))
        assert rdp >= pld and zc >= pld
        assert rdp == pytest.approx(improved_rdp_epsilon(lambda a: rho * a, delta), rel=1e-7)
        assert zc == pytest.approx(cks_zcdp_epsilon(rho, delta), rel=1e-6)


def test_identical_mechanisms_are_merged():
    acc = Accountant(step=STEP)
    acc.compose(accounting.mechanism("gaussian", sigma=1.0), 4)
    acc.compose(accounting.mechanism("gaussian", sigma=1.0), count=6)
    assert acc.count == 10
    pair = acc.pair()
    assert isinstance(pair, ComposedPair) and len(pair.components) == 1
    assert pair.components[0][1] == 10


def test_heterogeneous_workload_and_cache_invalidation():
    acc = Accountant(step=STEP).compose(accounting.mechanism("gaussian", sigma=1.0))
    first = float(acc.epsilon(1e-6))
    assert first == pytest.approx(gaussian_epsilon(1.0, 1e-6), abs=1e-4)
    acc.compose(accounting.mechanism("gaussian", sigma=0.5), count=2)       # now μ = 3
    second = float(acc.epsilon(1e-6))
    exact = gaussian_epsilon(3.0, 1e-6)
    assert second >= exact and second - exact < 1e-3
    assert acc.count == 3
    a = np.linspace(0, 1, 101)
    to = acc.tradeoff()
    assert isinstance(to, TradeOff)
    assert np.all(to.beta(a) <= gaussian_beta(3.0, a) + 1e-12)
    assert isinstance(acc.curve(RDP), RDP) and isinstance(acc.curve(ZCDP), ZCDP)
    assert acc.curve(ZCDP).rho() == pytest.approx(4.5)


def test_a_pair_can_be_composed_directly(gaussian1):
    acc = Accountant(step=STEP).compose(gaussian1.pair(), 2)
    assert float(acc.epsilon(1e-5)) == pytest.approx(gaussian_epsilon(np.sqrt(2), 1e-5), abs=1e-4)
    assert isinstance(acc.curve(PLD), PLD)


def test_subsampled_pld_beats_rdp():
    acc = Accountant(step=STEP).compose(
        accounting.mechanism("subsampled_gaussian", q=0.01, sigma=1.0), count=100)
    pld = float(acc.epsilon(1e-5))
    rdp = float(acc.epsilon(1e-5, accountant="rdp"))
    lo, up = acc.epsilon_interval(1e-5)
    assert lo <= pld <= up + 1e-12
    assert 0 < pld < rdp


@pytest.mark.parametrize("count,exc", [(0, ValueError), (1.5, TypeError), (-1, ValueError),
                                       (True, TypeError)])
def test_compose_rejects_bad_counts(count, exc):
    with pytest.raises(exc, match="count"):
        Accountant().compose(accounting.mechanism("gaussian", sigma=1.0), count=count)


def test_accountant_errors():
    with pytest.raises(TypeError, match="Mechanism or a Pair"):
        Accountant().compose("gaussian")
    with pytest.raises(ValueError, match="nothing composed"):
        Accountant().epsilon(1e-5)
    with pytest.raises(ValueError, match="step"):
        Accountant(step=0.0)
    acc = Accountant(step=STEP).compose(accounting.mechanism("gaussian", sigma=1.0))
    with pytest.raises(ValueError, match="accountant must be one of"):
        acc.epsilon(1e-5, accountant="moments")
    with pytest.raises(ValueError, match="delta"):
        acc.epsilon(0.0)
    with pytest.raises(ValueError, match="delta"):
        acc.epsilon(1.0, accountant="rdp")

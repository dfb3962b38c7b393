"""The Laplace mechanism: Mironov's Table II, the closed-form profile, its PLD."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, strategies as st

import accounting
from accounting import PLD, RDP, ZCDP, PrivacyProfile

from closed_forms import laplace_delta, laplace_rdp

STEP = 1e-3
ALPHAS = [1.001, 1.01, 1.1, 1.5, 2.0, 2.5, 3.0, 4.2, 7.3, 10.0, 32.0, 64.5, 100.0, 1000.0]


@pytest.mark.parametrize("b", [0.25, 0.5, 1.0, 3.0, 20.0])
def test_rdp_is_mironov_table_ii(b):
    rdp = accounting.mechanism("laplace", b=b).curve(RDP)
    got = rdp.rdp(np.array(ALPHAS))
    want = np.array([laplace_rdp(a, 1.0 / b) for a in ALPHAS])
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-15)
    for d in ("forward", "backward"):
        np.testing.assert_allclose(rdp.rdp(np.array(ALPHAS), d), want, rtol=1e-9, atol=1e-15)


def test_rdp_limits():
    """α → 1: the KL divergence e + e^{−e} − 1; α → ∞: e (pure ε-DP), e = Δ/b."""
    e = 2.0
    rdp = accounting.mechanism("laplace", b=0.5).curve(RDP)
    assert rdp.rdp(1.0 + 1e-9) == pytest.approx(e + math.exp(-e) - 1, rel=1e-7)
    assert rdp.rdp(1e8) == pytest.approx(e, rel=1e-6)
    assert rdp.rdp(1e8) <= e


@given(st.floats(0.1, 10.0), st.floats(0.2, 5.0))
def test_sensitivity_enters_as_delta_over_b(b, sens):
    mech = accounting.mechanism("laplace", b=b, sensitivity=sens)
    for a in (1.5, 4.0, 50.0):
        assert mech.curve(RDP).rdp(a) == pytest.approx(laplace_rdp(a, sens / b), rel=1e-9)


@pytest.mark.parametrize("b", [0.5, 1.0, 4.0])
def test_profile_is_the_closed_form(b):
    e = 1.0 / b
    prof = accounting.mechanism("laplace", b=b).curve(PrivacyProfile)
    eps = np.concatenate([np.linspace(-3 * e, 3 * e, 121), [e, -e, 0.0]])
    want = laplace_delta(e, eps)
    # and, independently of the formula, by quadrature of (p − e^ε q)₊ over the line
    from scipy import integrate

    def hockey(x):
        f = lambda y: max(0.5 / b * math.exp(-abs(y - 1.0) / b)  # noqa: E731
                          - math.exp(x) * 0.5 / b * math.exp(-abs(y) / b), 0.0)
        return sum(integrate.quad(f, lo, hi, epsabs=1e-14, epsrel=1e-12, limit=200)[0]
                   for lo, hi in ((-60 * b, 0.0), (0.0, 1.0), (1.0, 60 * b + 1)))
    for d in ("forward", "backward"):
        np.testing.assert_allclose(prof.delta(eps, d), want, rtol=1e-12, atol=1e-15)
    for x in (-0.5 * e, 0.0, 0.3 * e, 0.9 * e):
        assert hockey(x) == pytest.approx(float(laplace_delta(e, x)), rel=1e-8, abs=1e-13)


@pytest.mark.parametrize("b", [0.5, 1.0, 4.0])
def test_pld_brackets_the_profile(b):
    e = 1.0 / b
    pld = accounting.mechanism("laplace", b=b).curve(PLD, step=STEP)
    eps = np.linspace(-1.2 * e, 1.2 * e, 2001) + 0.37 * STEP
    exact = laplace_delta(e, eps)
    for d in ("forward", "backward"):
        lo, up = pld.delta(eps, d, "lower"), pld.delta(eps, d)
        assert np.all(up >= exact * (1 - 1e-12) - 1e-300)
        assert np.all(lo <= exact * (1 + 1e-12) + 1e-300)
        assert np.max(up - exact) < STEP ** 2        # the pessimistic side is O(step²) tight
    # pure ε-DP: no δ left beyond e (up to one grid cell of the pessimistic rounding)
    assert float(pld.epsilon(1e-12)) <= e + STEP
    deltas = np.array([1e-3, 0.1])
    lo, up = pld.epsilon_interval(deltas)
    exact = e + 2 * np.log1p(-deltas)
    assert np.all(lo <= exact + 1e-12) and np.all(exact <= up + 1e-12)


@pytest.mark.xfail(reason=("BUG (accuracy regression, commit 37c4c3b): accounting/discretise.py convex_minorant "
                          "rounds the Laplace loss atom at ε = Δ/b (on a grid point) down one "
                          "cell and lumps ~30 cells before it into it (lower law: mass 0.516 at "
                          "0.999, zeros at 0.996–0.998), so the optimistic δ is 5e-4 below the "
                          "exact one just below Δ/b: an O(step) gap, not the stated O(step²) "
                          "(it was 6e-8 at d4b90da)"), strict=True)
@pytest.mark.parametrize("b", [0.5, 1.0, 4.0])
def test_pld_bracket_is_within_the_stated_error(b):
    pld = accounting.mechanism("laplace", b=b).curve(PLD, step=STEP)
    eps = np.linspace(-1.2 / b, 1.2 / b, 2001) + 0.37 * STEP
    for d in ("forward", "backward"):
        assert np.max(pld.delta(eps, d) - pld.delta(eps, d, "lower")) < STEP ** 2


def test_pld_rdp_brackets_table_ii():
    pld = accounting.mechanism("laplace", b=1.0).curve(PLD, step=STEP)
    alphas = np.array([1.5, 2.0, 5.0, 20.0])
    rdp = pld.to(RDP)
    want = np.array([laplace_rdp(a, 1.0) for a in alphas])
    assert np.all(rdp.rdp(alphas) >= want * (1 - 1e-12))
    assert np.all(rdp.rdp(alphas, bound="lower") <= want * (1 + 1e-12))
    np.testing.assert_allclose(rdp.rdp(alphas), want, rtol=1e-5)


def test_rho_is_the_kl_divergence_at_every_scale():
    for b in (0.3, 1.0, 7.0):
        e = 1.0 / b
        z = accounting.mechanism("laplace", b=b).curve(ZCDP)
        assert z.rho() == pytest.approx(e + math.expm1(-e), rel=1e-14)
        # ρ is the sup of D_α/α … reached as α → 1 (the Table II curve lies below ρα)
        alphas = np.linspace(1.001, 50, 200)
        assert np.all([laplace_rdp(a, e) <= z.rho() * a * (1 + 1e-12) for a in alphas])


@pytest.mark.parametrize("b", [1e-300, -1.0, math.nan, math.inf])   # (0: no noise, answered)
def test_bad_scale(b):
    with pytest.raises(ValueError, match="b must"):
        accounting.mechanism("laplace", b=b)

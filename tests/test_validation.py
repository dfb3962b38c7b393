"""Argument checks: every bad input fails at the boundary with a message naming it."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, strategies as st

import accounting
from accounting import PLD, RDP, Accountant, PrivacyProfile, TradeOff, ZCDP, default_registry
from accounting.validation import (check_array, check_count, check_positive, check_probability,
                                   check_real)


# ---------------------------------------------------------------------- the checks
@given(st.floats(allow_nan=False, allow_infinity=False, min_value=-1e300, max_value=1e300))
def test_check_real_accepts_finite_reals(x):
    assert check_real("x", x) == x
    assert check_real("x", np.float32(1.5)) == 1.5
    assert check_real("x", np.int64(3)) == 3.0


@pytest.mark.parametrize("value,exc,msg", [
    ("1", TypeError, "x must be a real number"),
    (None, TypeError, "x must be a real number"),
    (True, TypeError, "x must be a real number"),
    (1 + 2j, TypeError, "x must be a real number"),
    (math.nan, ValueError, "x must be a number, got NaN"),
    (math.inf, ValueError, "x must be finite"),
])
def test_check_real_rejects(value, exc, msg):
    with pytest.raises(exc, match=msg):
        check_real("x", value)


def test_check_real_ranges():
    assert check_real("x", 0.0, lo=0.0) == 0.0
    with pytest.raises(ValueError, match=r"x must be in \(0, 1\], got 0"):
        check_real("x", 0.0, lo=0.0, hi=1.0, lo_open=True)
    with pytest.raises(ValueError, match=r"x must be in \[0, 1\), got 1"):
        check_real("x", 1.0, lo=0.0, hi=1.0, hi_open=True)
    assert check_real("x", math.inf, allow_inf=True) == math.inf


@given(st.floats(1e-300, 1e300))
def test_check_positive(x):
    assert check_positive("s", x) == x
    with pytest.raises(ValueError, match="s must be"):
        check_positive("s", -x)


@given(st.floats(0.0, 1.0))
def test_check_probability_open_ends(p):
    if 0.0 < p < 1.0:
        assert check_probability("p", p) == p
    else:
        with pytest.raises(ValueError, match=r"p must be in \(0, 1\)"):
            check_probability("p", p)
    if 0.0 < p:
        assert check_probability("q", p, hi_open=False) == p


@given(st.integers(1, 10 ** 9))
def test_check_count(n):
    assert check_count("count", n) == n
    assert check_count("count", float(n)) == n          # integral floats are accepted
    assert check_count("count", np.int32(min(n, 2 ** 31 - 1))) == min(n, 2 ** 31 - 1)


@pytest.mark.parametrize("value,exc", [(0, ValueError), (-2, ValueError), (1.5, TypeError),
                                       (True, TypeError), ("3", TypeError), (math.nan, TypeError)])
def test_check_count_rejects(value, exc):
    with pytest.raises(exc, match="count"):
        check_count("count", value)


def test_check_array():
    out = check_array("eps", [0.0, 1.0, 2.0], lo=0.0)
    assert out.dtype == float and out.shape == (3,)
    assert check_array("eps", 2.0).shape == ()
    with pytest.raises(ValueError, match="eps must not contain NaN"):
        check_array("eps", [0.0, math.nan])
    with pytest.raises(ValueError, match="eps must be finite"):
        check_array("eps", [0.0, math.inf])
    assert check_array("eps", [-math.inf, math.inf], allow_inf=True).size == 2
    with pytest.raises(ValueError, match=r"eps must be in \[0, inf\), got -1"):
        check_array("eps", [0.0, -1.0], lo=0.0)
    with pytest.raises(TypeError, match="eps must be a real number or an array"):
        check_array("eps", "abc")
    with pytest.raises(TypeError, match="booleans"):
        check_array("eps", [True, False])


# ----------------------------------------------------- public entry points (REFERENCE)
@pytest.fixture(scope="module")
def curves():
    g = accounting.mechanism("gaussian", sigma=1.0)
    pld = g.curve(PLD, step=1e-2)
    return {"pld": pld, "profile": g.curve(PrivacyProfile), "rdp": g.curve(RDP),
            "zcdp": g.curve(ZCDP), "tradeoff": g.curve(TradeOff), "mech": g}


BAD_MECHANISMS = [
    ("gaussian", {"sigma": 0.0}, ValueError, "sigma"),
    ("gaussian", {"sigma": -1.0}, ValueError, "sigma"),
    ("gaussian", {"sigma": math.nan}, ValueError, "sigma"),
    ("gaussian", {"sigma": "1"}, TypeError, "sigma"),
    ("gaussian", {"sigma": math.inf}, ValueError, "sigma"),
    ("gaussian", {"sigma": 1.0, "sensitivity": 0.0}, ValueError, "sensitivity"),
    ("gaussian", {"sigma": 1.0, "neighbouring": "sideways"}, ValueError, "neighbouring"),
    ("laplace", {"b": 0.0}, ValueError, "b must"),
    ("laplace", {"b": None}, TypeError, "b must"),
    ("subsampled_gaussian", {"q": 0.0, "sigma": 1.0}, ValueError, "q must"),
    ("subsampled_gaussian", {"q": 1.5, "sigma": 1.0}, ValueError, "q must"),
    ("subsampled_gaussian", {"q": -0.1, "sigma": 1.0}, ValueError, "q must"),
    ("subsampled_gaussian", {"q": math.nan, "sigma": 1.0}, ValueError, "q must"),
    ("subsampled_gaussian", {"q": 0.1, "sigma": 0.0}, ValueError, "sigma"),
    ("randomized_response", {"p": 0.0}, ValueError, "p must"),
    ("randomized_response", {"p": 1.0}, ValueError, "p must"),
    ("randomized_response", {"p": 1.2}, ValueError, "p must"),
    ("randomized_response", {"p": "0.7"}, TypeError, "p must"),
]


@pytest.mark.parametrize("name,params,exc,msg", BAD_MECHANISMS)
def test_bad_mechanism_parameters(name, params, exc, msg):
    with pytest.raises(exc, match=msg):
        accounting.mechanism(name, **params)


def test_q_one_and_p_half_are_allowed():
    assert accounting.mechanism("subsampled_gaussian", q=1.0, sigma=1.0).q == 1.0
    assert accounting.mechanism("randomized_response", p=0.5).p == 0.5


@pytest.mark.parametrize("kind", ["pld", "profile", "rdp", "zcdp"])
@pytest.mark.parametrize("delta", [0.0, 1.0, -1e-3, 2.0, math.nan])
def test_epsilon_rejects_delta_outside_the_unit_interval(curves, kind, delta):
    with pytest.raises(ValueError, match="delta"):
        curves[kind].epsilon(delta)


@pytest.mark.parametrize("alpha", [1.0, 0.999, 0.0, -3.0, math.nan])
def test_rdp_rejects_orders_at_most_one(curves, alpha):
    with pytest.raises(ValueError, match="alpha"):
        curves["rdp"].rdp(alpha)


@pytest.mark.parametrize("count,exc", [(0, ValueError), (1.5, TypeError)])
def test_counts(curves, count, exc):
    for kind in ("pld", "rdp", "zcdp"):
        with pytest.raises(exc, match="count"):
            curves[kind].self_compose(count)
    with pytest.raises(exc, match="count"):
        Accountant().compose(curves["mech"], count=count)


def test_unknown_mechanism():
    with pytest.raises(ValueError, match="unknown mechanism 'gausian'"):
        default_registry().mechanism("gausian")


@pytest.mark.parametrize("kind", ["pld", "profile"])
def test_direction_and_bound_words(curves, kind):
    with pytest.raises(ValueError, match="direction must be one of 'forward', 'backward', 'max'"):
        curves[kind].delta(1.0, direction="sideways")
    with pytest.raises(ValueError, match="bound must be 'upper' or 'lower'"):
        curves[kind].delta(1.0, bound="middle")
    with pytest.raises(ValueError, match="direction"):
        curves["tradeoff"].beta(0.5, direction="sideways")
    with pytest.raises(ValueError, match="bound"):
        curves["rdp"].rdp(2.0, bound="middle")
    # one spelling only: the enum's exact string (a typo must not pick the other side)
    with pytest.raises(ValueError, match="direction"):
        curves[kind].delta(1.0, direction="FORWARD")
    with pytest.raises(ValueError, match="bound"):
        curves[kind].delta(1.0, bound="Upper")
    assert np.isfinite(curves[kind].delta(1.0, direction="forward", bound="upper"))


def test_no_silent_nan(curves):
    for kind in ("pld", "profile"):
        with pytest.raises(ValueError, match="epsilon"):
            curves[kind].delta(math.nan)
    with pytest.raises(ValueError, match="alpha"):
        curves["tradeoff"].beta(math.nan)


def test_positive_range_message_does_not_admit_infinity():
    with pytest.raises(ValueError) as info:
        accounting.mechanism("gaussian", sigma=0.0)
    assert "inf]" not in str(info.value)

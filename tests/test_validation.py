"""Argument checks: every bad input fails at the boundary with a message naming it."""

from __future__ import annotations

import math
import re

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


# σ = 0, b = 0, q = 0 and sensitivity 0 are degenerate corners, answered exactly
# (tests/plugins/test_corners.py); just beside them is still refused
BAD_MECHANISMS = [
    ("gaussian", {"sigma": 1e-300}, ValueError, "sigma"),
    ("gaussian", {"sigma": -1.0}, ValueError, "sigma"),
    ("gaussian", {"sigma": math.nan}, ValueError, "sigma"),
    ("gaussian", {"sigma": "1"}, TypeError, "sigma"),
    ("gaussian", {"sigma": math.inf}, ValueError, "sigma"),
    ("gaussian", {"sigma": 1.0, "sensitivity": -1.0}, ValueError, "sensitivity"),
    ("gaussian", {"sigma": 1.0, "neighbouring": "sideways"}, ValueError, "neighbouring"),
    ("laplace", {"b": 1e-300}, ValueError, "b must"),
    ("laplace", {"b": None}, TypeError, "b must"),
    ("subsampled_gaussian", {"q": 1e-320, "sigma": 1.0}, ValueError, "q must"),
    ("subsampled_gaussian", {"q": 1.5, "sigma": 1.0}, ValueError, "q must"),
    ("subsampled_gaussian", {"q": -0.1, "sigma": 1.0}, ValueError, "q must"),
    ("subsampled_gaussian", {"q": math.nan, "sigma": 1.0}, ValueError, "q must"),
    ("subsampled_gaussian", {"q": 0.1, "sigma": 1e-3}, ValueError, "sigma"),
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


@pytest.mark.parametrize("alpha", [0.999, 0.0, -3.0, -math.inf, math.nan])
def test_rdp_rejects_orders_below_one(curves, alpha):   # α = 1 is the KL, α = ∞ D_∞
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
        accounting.mechanism("gaussian", sigma=1e-300)
    assert "inf]" not in str(info.value)


# -------------------------------------------------- counts, arrays, options (issue 10)
def test_check_count_refuses_huge_counts():
    from accounting.validation import MAX_COUNT
    assert check_count("count", MAX_COUNT) == 2 ** 53
    for bad in (MAX_COUNT + 1, 1e30, 10 ** 30, np.float64(1e23)):
        with pytest.raises(ValueError, match=r"count must be an integer <= 9007199254740992"):
            check_count("count", bad)
    with pytest.raises(ValueError, match=r"n must be an integer <= 10"):
        check_count("n", 11, maximum=10)
    with pytest.raises(TypeError, match="count must be an integer, got bool"):
        check_count("count", np.bool_(True))


@pytest.mark.parametrize("value,what", [("1e-5", "str"), (b"1", "bytes"), (1e-5 + 0j, "complex"),
                                        (np.array(["1"]), "strings"),
                                        (np.array([1 + 0j]), "complex numbers"),
                                        ([1.0, None], "real numbers"), ("", "str")])
def test_check_array_refuses_non_reals(value, what):
    with pytest.raises(TypeError, match=f"delta must be .*{re.escape(what)}"):
        check_array("delta", value)


def test_check_options():
    from accounting.validation import check_options
    check_options("f()", {"step": 1}, ["step", "tail"])
    with pytest.raises(TypeError, match=r"f\(\) got unknown option 'stpe'; allowed: step, tail"):
        check_options("f()", {"stpe": 1}, ["tail", "step"])
    with pytest.raises(TypeError, match=r"unknown options 'a', 'b'; allowed: none"):
        check_options("f()", {"b": 1, "a": 2}, [])


# ------------------------------------------------------------ declared ranges
from accounting.pairs.mechanism import NOISE_SCALE, Range  # noqa: E402


def test_range_bounds_and_messages():
    r = Range(0.5, 5.0)
    assert r.bounds() == (0.5, 5.0) and r.describe() == "[0.5, 5]"
    assert r.check("beta", 0.5) == 0.5 and r.check("beta", 5.0) == 5.0
    with pytest.raises(ValueError, match=r"beta must be in \[0.5, 5\], got 0.4"):
        r.check("beta", 0.4)
    opened = Range(0.0, 1.0, lo_open=True, hi_open=True)
    assert opened.describe() == "(0, 1)"
    with pytest.raises(ValueError, match=r"p must be in \(0, 1\), got 1"):
        opened.check("p", 1.0)
    counts = Range(1, 100, integer=True)
    assert counts.check("n", 100.0) == 100
    with pytest.raises(TypeError, match="n must be an integer"):
        counts.check("n", 2.5)
    with pytest.raises(ValueError, match="n must be an integer <= 100"):
        counts.check("n", 101)


def test_relative_range_scales_with_the_sensitivity():
    g = accounting.mechanism("gaussian", sigma=1e-91, sensitivity=1e-90)   # σ/Δ = 0.1
    assert NOISE_SCALE.bounds(g) == pytest.approx((1e-98, 1e-82))
    with pytest.raises(ValueError, match=r"sensitivity must be in \[1e-100, 1e\+100\]"):
        accounting.mechanism("gaussian", sigma=1e-300, sensitivity=1e-299)
    assert NOISE_SCALE.describe() == "[1e-08, 1e+08]·sensitivity or 0"
    with pytest.raises(ValueError, match=r"sigma must be in .* got 1e-300 \(the range is "
                                         r"\[1e-08, 1e\+08\]·sensitivity with sensitivity = 1"):
        accounting.mechanism("gaussian", sigma=1e-300)
    from accounting_mechanisms.discrete import DECAY_RATE     # the deprecated rate a = 1/scale
    assert DECAY_RATE.per == "sensitivity" and DECAY_RATE.per_power == -1
    d = accounting.mechanism("discrete_laplace", scale=1e3, sensitivity=1000)    # a·Δ = 1
    assert DECAY_RATE.bounds(d) == pytest.approx((1e-11, 1e5))
    with pytest.raises(ValueError, match="pass the instance"):
        NOISE_SCALE.bounds()


@pytest.mark.parametrize("name", sorted(default_registry().mechanisms))
def test_declared_ranges_are_enforced_at_both_ends(name):
    """Each declared end is accepted and a value just beyond it refused, naming the field."""
    cls = default_registry().mechanism(name)
    base = _valid(name)
    for field, rng in cls.ranges().items():
        if field == "sensitivity" or field in ("weights", "means", "scales") or rng.integer:
            continue
        unit = float(base.get(rng.per, 1.0)) ** rng.per_power if rng.per else 1.0
        lo, hi = rng.lo * unit, rng.hi * unit
        for end, beyond, is_open in ((lo, lo * (1 - 1e-6) - 1e-300 if lo > 0 else lo - 1e-6,
                                      rng.lo_open),
                                     (hi, hi * (1 + 1e-6) + 1e-300, rng.hi_open)):
            if not is_open:
                cls(**{**base, field: end})
            with pytest.raises(ValueError, match=rf"\b{field}\b must be"):
                cls(**{**base, field: beyond})


def _valid(name: str) -> dict:
    """Parameters in the middle of every declared range."""
    special = {
        "gaussian_mixture": dict(weights=(0.5, 0.5), means=(0.0, 1.0), scales=(1.0, 2.0)),
        "poisson_subsampled": dict(base=accounting.mechanism("gaussian", sigma=1.0), q=0.1),
        "poisson_replace_one": dict(base=accounting.mechanism("laplace", b=1.0), q=0.1),
        "mixture_of_gaussians": dict(sigma=1.0, sensitivities=1.0, sampling_probs=1.0),
        "truncated_poisson_gaussian": dict(q=0.01, sigma=1.0, dataset_size=1000, max_batch=20),
        "mechanism_mixture": dict(mechanisms=accounting.mechanism("gaussian", sigma=1.0),
                                  probs=1.0),
        "repeat_and_select": dict(base=accounting.mechanism("gaussian", sigma=1.0), mean=10.0),
        "sampled_without_replacement": dict(
            base=accounting.mechanism("gaussian", sigma=1.0, neighbouring="replace_one"),
            batch_size=10, dataset_size=100),
        "shuffled": dict(base=accounting.mechanism("gaussian", sigma=1.0), batch_size=10,
                         dataset_size=100),
        "random_allocation": dict(base=accounting.mechanism("gaussian", sigma=1.0), steps=4),
    }
    if name in special:
        return special[name]
    cls = default_registry().mechanism(name)
    out = {}
    for field, rng in cls.ranges().items():
        if field == "sensitivity":
            continue
        unit = 1.0
        lo, hi = rng.lo * unit, rng.hi * unit
        out[field] = math.sqrt(lo * hi) if rng.log else (lo + hi) / 2 if lo > 0 or not rng.lo_open \
            else hi / 2
    return out


def test_every_registered_mechanism_builds_in_the_middle_of_its_ranges():
    for name in default_registry().mechanisms:
        default_registry().mechanism(name)(**_valid(name))


@pytest.mark.parametrize("name,params,field", [
    ("gaussian", dict(sigma=1e-300), "sigma"),        # was OverflowError in RDP
    ("gaussian", dict(sigma=5e-324), "sigma"),        # was accepted
    ("discrete_gaussian", dict(sigma=1e-300), "sigma"),   # was ZeroDivisionError
    ("laplace", dict(b=1e20), "b"),                   # D_α rounded to −1.5e−36
    ("subsampled_gaussian", dict(q=0.1, sigma=1e-8), "sigma"),   # did not finish in 20 s
    ("student_t", dict(nu=3.0, scale=1e-4), "scale"),  # ρ* = 3270 against D_α ≈ 34
    ("generalised_gaussian", dict(beta=0.1, scale=1.0), "beta"),  # negative D_α
    ("gaussian", dict(sigma=1.0, sensitivity=1e300), "sensitivity"),
])
def test_hostile_parameters_are_refused(name, params, field):
    with pytest.raises(ValueError, match=rf"{field} must be"):
        accounting.mechanism(name, **params)

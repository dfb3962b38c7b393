"""Strict inputs on the Python API: unknown options refused, curves checked when
built, query arguments never coerced from strings, booleans or complex numbers."""

from __future__ import annotations

import numpy as np
import pytest

import accounting
from accounting import PLD, RDP, ZCDP, PrivacyProfile, TradeOff, convert
from accounting.curves.converters import GRID_OPTIONS, check_options, profile_to_pld
from accounting.curves.curve import Provenance
from accounting.vocabulary import Exactness
from accounting.numerics.loss import LossPMF
from accounting.curves.rdp import CGF

KINDS = (PLD, PrivacyProfile, TradeOff, RDP, ZCDP)


@pytest.fixture(scope="module")
def gauss():
    return accounting.mechanism("gaussian", sigma=1.0)


@pytest.fixture(scope="module")
def curves(gauss):
    return {kind: gauss.curve(kind, step=1e-2) for kind in KINDS}


# ------------------------------------------------------------ unknown options
@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.__name__)
def test_curve_builders_refuse_unknown_options(gauss, kind):
    # the case: curve(PLD, stpe=1e-2) silently ran at the default step
    with pytest.raises(TypeError, match=r"'stpe'.*allowed: step, tail, lower"):
        gauss.curve(kind, stpe=1e-2)
    with pytest.raises(TypeError, match=r"'colour', 'size'"):
        gauss.pair().curve(kind, colour="red", size=3)


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.__name__)
@pytest.mark.parametrize("option,value,exc", [
    ("step", -1e-3, ValueError), ("step", 0.0, ValueError), ("step", float("nan"), ValueError),
    ("step", "1e-3", TypeError), ("tail", 0.5, ValueError), ("tail", 0.0, ValueError),
    ("lower", "yes", TypeError), ("lower", 1, TypeError),
])
def test_option_values_are_checked_on_every_route(gauss, kind, option, value, exc):
    # checked whether or not the route builds a PLD (a Gaussian's RDP never does)
    with pytest.raises(exc, match=option):
        gauss.curve(kind, **{option: value})


@pytest.mark.parametrize("source,target", [(PLD, RDP), (PLD, PrivacyProfile), (PLD, TradeOff),
                                           (PrivacyProfile, PLD), (RDP, PrivacyProfile),
                                           (RDP, ZCDP), (ZCDP, RDP), (TradeOff, PrivacyProfile)])
def test_converters_refuse_unknown_options(curves, source, target):
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'stpe'; allowed"):
        convert(curves[source], target, stpe=1e-2)
    with pytest.raises(TypeError, match="'stpe'"):
        curves[source].to(target, stpe=1e-2)


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.__name__)
def test_conversion_to_the_same_kind_refuses_options(curves, kind):
    # nothing runs, so the option would be ignored: refused, naming it
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'stpe'; allowed here: none"):
        curves[kind].to(kind, stpe=1e-2)
    with pytest.raises(TypeError, match="'step'"):
        convert(curves[kind], kind, step=1e-3)
    assert curves[kind].to(kind) is curves[kind]


def test_grid_options_still_work(gauss, curves):
    coarse = gauss.curve(PLD, step=2e-2, tail=1e-15, lower=False)
    assert coarse.step == pytest.approx(2e-2) and coarse.lower is None
    prof = curves[PrivacyProfile]
    with pytest.raises(TypeError, match="'stpe'"):
        profile_to_pld(prof, stpe=1e-2)
    assert profile_to_pld(prof, step=5e-2).step == pytest.approx(5e-2)
    assert check_options("x", {"step": None}) == {"step": None}
    assert GRID_OPTIONS == ("step", "tail", "lower")


# ---------------------------------------------------------- curves when built
def _law():
    return LossPMF.from_atoms(np.array([-0.5, 0.5]), np.array([0.5, 0.5]))


@pytest.mark.parametrize("build", [
    lambda: PLD(("a", "b")),
    lambda: PLD((_law(), "b")),
    lambda: PLD((_law(), _law()), ("a", "b")),
    lambda: PLD((_law(), _law(), _law())),
    lambda: PLD(None),
    lambda: PrivacyProfile(3),
    lambda: PrivacyProfile(object()),
    lambda: TradeOff("beta"),
    lambda: RDP("x"),
    lambda: RDP(lambda t, d: t),           # a bare function is not a CGF
    lambda: RDP(CGF.of(5)),
    lambda: RDP(CGF(((1.0,),))),
    lambda: ZCDP(("a", 1.0)),
    lambda: ZCDP((True, 1.0)),
    lambda: ZCDP((0.5, 0.5), provenance="exact"),
    lambda: Provenance("exact"),
    lambda: Provenance(Exactness.EXACT, ("a", 3)),
])
def test_curves_validate_their_contents(build):
    with pytest.raises((TypeError, ValueError)):
        build()


def test_curves_check_consistency_when_built():
    coarse = LossPMF.on_grid(0.1, -2, np.array([0.25, 0.5, 0.25]))
    fine = LossPMF.on_grid(0.05, -4, np.array([0.25, 0.5, 0.25]))
    with pytest.raises(ValueError, match="PLD laws must share one grid step.*0.05, 0.1"):
        PLD((coarse, fine))
    with pytest.raises(ValueError, match="share one grid step"):
        PLD((coarse, coarse), (fine, fine))
    with pytest.raises(ValueError, match="lower rho must not exceed upper rho; backward"):
        ZCDP((1.0, 1.0), (0.5, 2.0))
    assert ZCDP((1.0, 1.0), (0.5, 1.0)).rho_interval("forward") == (0.5, 1.0)


def test_curve_errors_name_the_side():
    with pytest.raises(TypeError, match=r"PLD.upper forward must be a LossPMF, got str"):
        PLD(("a", "b"))
    with pytest.raises(TypeError, match=r"PLD.lower backward must be a LossPMF"):
        PLD((_law(), _law()), (_law(), 2.0))
    with pytest.raises(TypeError, match=r"PrivacyProfile.upper must be a ProfileSide"):
        PrivacyProfile(3)
    with pytest.raises(TypeError, match=r"RDP.upper must be a CGF"):
        RDP("x")
    with pytest.raises(ValueError, match="rho must be >= 0|rho must be in"):
        ZCDP((-1.0, 1.0))
    # well-formed curves are fine, and a conversion's evolve() keeps them checked
    pld = PLD((_law(), _law()), provenance=Provenance(Exactness.NUMERICAL, ("hand-made",)))
    assert str(pld.provenance) == "numerical (hand-made)"


# -------------------------------------------------------------- query inputs
@pytest.mark.parametrize("bad", ["1e-5", b"1e-5", True, 1e-5 + 0j, [1e-5, "1e-6"], [1e-5, True],
                                 np.array(["1e-5"]), np.array([True]), None, {"d": 1e-5}])
def test_queries_refuse_non_real_input(curves, bad):
    with pytest.raises(TypeError, match="delta"):
        curves[PLD].epsilon(bad)
    with pytest.raises(TypeError, match="delta"):
        curves[PrivacyProfile].epsilon(delta=bad)


@pytest.mark.parametrize("bad", ["2", b"2", True, 2 + 0j, ["2"], [2.0, False]])
def test_rdp_and_tradeoff_refuse_non_real_input(curves, bad):
    with pytest.raises(TypeError, match="alpha"):
        curves[RDP].rdp(bad)
    with pytest.raises(TypeError, match="alpha"):
        curves[TradeOff].beta(bad)
    with pytest.raises(TypeError, match="epsilon"):
        curves[PLD].delta(bad)
    with pytest.raises(TypeError, match="t must"):
        curves[RDP].cgf(bad)


def test_real_inputs_of_every_numeric_type_still_work(curves):
    from fractions import Fraction
    want = float(curves[RDP].rdp(2.0))
    for good in (2, np.float32(2.0), np.int64(2), Fraction(2), [2.0], np.array([2.0])):
        assert float(np.ravel(curves[RDP].rdp(good))[0]) == pytest.approx(want)

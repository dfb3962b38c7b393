"""Calibration (``accounting.analysis.calibration``); the ACS variance study built on
it is tested in ``test_acs_study.py``.

Reference values: closed forms of ``closed_forms`` (analytic Gaussian, the improved RDP
conversion and the CKS zCDP conversion, minimised independently of the library).
"""

from __future__ import annotations

import math

import pytest
from closed_forms import cks_zcdp_epsilon, gaussian_epsilon, improved_rdp_epsilon
from scipy import optimize

import accounting
from accounting import Accountant
from accounting.analysis.calibration import (
    Calibration,
    MechanismFamily,
    calibrate,
    calibrate_workload,
)
from accounting.ledger import Ledger

calibrate_dpsgd = pytest.importorskip("accounting_mechanisms.dpsgd").calibrate_dpsgd
Term = MechanismFamily

EPS, DELTA = 3.0, 1e-5
RTOL = 1e-9


def mixture(s: float) -> accounting.Mechanism:
    """½N(−s, s²) + ½N(s, s²): a family of mechanisms given as a callable."""
    return accounting.mechanism("gaussian_mixture", weights=(0.5, 0.5), means=(-s, s),
                                scales=(s, s))


def gaussian_sigma_exact(k: int, eps: float, delta: float) -> float:
    """σ with exact ε(δ) = eps for k uses of N(0, σ²): the analytic Gaussian of
    Balle & Wang 2018 at μ = √k/σ, solved for μ."""
    mu = optimize.brentq(lambda m: gaussian_epsilon(m, delta) - eps, 1e-3, 50.0, xtol=1e-14)
    return math.sqrt(k) / mu


# ---------------------------------------------------------- the result record
def test_result_is_feasible_end_of_a_narrow_bracket():
    c = calibrate("laplace", "b", epsilon=1.0, delta=1e-6, count=20, accountant="rdp",
                  rtol=1e-7)
    assert isinstance(c, Calibration)
    assert c.parameter == "b" and c.accountant == "rdp" and c.target == 1.0
    lo, hi = c.bracket
    assert hi == c.value and lo < hi <= lo * (1 + 1.01e-7)
    assert c.epsilon <= 1.0
    # the library's own RDP accountant (global search over α) agrees at both ends
    at = lambda b: float(Accountant().compose(accounting.mechanism("laplace", b=b), 20)
                         .under("rdp").epsilon(1e-6))
    assert at(hi) <= 1.0 < at(lo)
    assert math.isclose(at(hi), c.epsilon, rel_tol=1e-9)
    assert c.order > 1 and c.evaluations >= 3
    assert c.uses[0][1] == 20 and c.uses[0][0].b == c.value


def test_rdp_pure_dp_composition_calibrates_to_its_max_divergence():
    """3 uses of Laplace(b) are (3/b, 0)-DP: the conversion takes the order α = ∞
    (ε ≤ D_∞ = 3/b), so ε = 1 at δ = 1e-10 needs b = 3 exactly, at α = ∞; finite
    orders alone (main) asked for b = 3.0015."""
    c = calibrate("laplace", "b", epsilon=1.0, delta=1e-10, count=3, accountant="rdp",
                  rtol=1e-9)
    assert c.value == pytest.approx(3.0, rel=2e-9) and c.epsilon <= 1.0
    assert c.order == math.inf and "α = inf" in c.describe()


def test_rdp_gaussian_matches_improved_conversion_closed_form():
    k = 330
    c = calibrate("gaussian", "sigma", epsilon=EPS, delta=DELTA, count=k, accountant="rdp",
                  rtol=RTOL)
    eps_at = lambda s: improved_rdp_epsilon(lambda a: a * k / (2 * s * s), DELTA)
    assert eps_at(c.value) <= EPS + 1e-9
    assert eps_at(c.bracket[0]) > EPS - 1e-9
    assert math.isclose(eps_at(c.value), EPS, abs_tol=1e-7)


def test_zcdp_laplace_matches_cks_conversion_of_kl():
    """ρ* of Laplace is its KL, e + e^{−e} − 1 (REFERENCE §6); d uses compose to d·ρ*,
    and the CKS conversion (Cor. 13) of that ρ meets the target."""
    d = 330
    c = calibrate("laplace", "b", epsilon=EPS, delta=DELTA, count=d, accountant="zcdp",
                  rtol=RTOL)
    rho = lambda b: d * (1 / b + math.expm1(-1 / b))
    assert cks_zcdp_epsilon(rho(c.value), DELTA) <= EPS + 1e-8
    assert math.isclose(cks_zcdp_epsilon(rho(c.value), DELTA), EPS, abs_tol=1e-6)


# --------------------------------------------------- Gaussian: RDP = zCDP
@pytest.mark.parametrize("k", [330, 1060])
def test_gaussian_rdp_and_zcdp_calibrations_coincide(k):
    r = calibrate("gaussian", "sigma", epsilon=EPS, delta=DELTA, count=k, accountant="rdp")
    z = calibrate("gaussian", "sigma", epsilon=EPS, delta=DELTA, count=k, accountant="zcdp")
    assert r.value ** 2 / z.value ** 2 == pytest.approx(1.0, abs=1e-6)


# ------------------------------------------------ RDP never needs more noise
def test_rdp_never_needs_more_noise_than_zcdp():
    for d in (1, 10, 100):
        r = calibrate("laplace", "b", epsilon=1.0, delta=1e-6, count=d, accountant="rdp")
        z = calibrate("laplace", "b", epsilon=1.0, delta=1e-6, count=d, accountant="zcdp")
        assert r.value < z.value
    # a heterogeneous workload sharing one multiplier: Gaussians and Laplace counts
    terms = [Term("gaussian", "sigma", count=50), Term("laplace", "b", count=10,
                                                        multiplier=0.5)]
    r = calibrate_workload(terms, epsilon=2.0, delta=1e-5, accountant="rdp")
    z = calibrate_workload(terms, epsilon=2.0, delta=1e-5, accountant="zcdp")
    assert r.value < z.value
    # DP-SGD: zCDP cannot see subsampling, RDP can
    r = calibrate_dpsgd(0.05, 200, epsilon=2.0, delta=1e-5, accountant="rdp", rtol=1e-4)
    z = calibrate_dpsgd(0.05, 200, epsilon=2.0, delta=1e-5, accountant="zcdp", rtol=1e-4,
                        start=r.value)
    assert r.value < 0.5 * z.value


# --------------------------------------------------------- PLD soundness
@pytest.mark.parametrize("k, eps, delta", [(330, 3.0, 1e-5), (10, 1.0, 1e-6)])
def test_pld_gaussian_matches_analytic_and_is_never_below(k, eps, delta):
    c = calibrate("gaussian", "sigma", epsilon=eps, delta=delta, count=k, step=1e-4)
    exact = gaussian_sigma_exact(k, eps, delta)
    assert c.value >= exact                      # sound: never less noise than needed
    assert c.value / exact - 1 < 2e-6            # within the grid tolerance and rtol
    assert gaussian_epsilon(math.sqrt(k) / c.value, delta) <= eps


# ---------------------------------------------------------------- DP-SGD
@pytest.mark.parametrize("accountant", ["pld", "rdp"])
def test_dpsgd_sigma_is_feasible_and_tight(accountant):
    q, steps, eps, delta = 0.01, 1000, 1.0, 1e-5
    c = calibrate_dpsgd(q, steps, epsilon=eps, delta=delta, accountant=accountant)

    def eps_at(sigma):
        m = accounting.mechanism("subsampled_gaussian", q=q, sigma=sigma)
        return float(Accountant().compose(m, steps).under(accountant).epsilon(delta))
    assert c.parameter == "sigma" and c.uses[0][0].q == q
    assert c.ledger == pytest.importorskip("accounting_mechanisms.dpsgd").dpsgd_ledger(
        q, steps, c.value)
    assert eps_at(c.value) <= eps
    assert eps_at(c.value * (1 - 1e-3)) > eps


def test_dpsgd_pld_needs_less_noise_than_rdp():
    p = calibrate_dpsgd(0.01, 1000, epsilon=1.0, delta=1e-5)
    r = calibrate_dpsgd(0.01, 1000, epsilon=1.0, delta=1e-5, accountant="rdp")
    assert 0.9 * r.value < p.value < r.value


# --------------------------------------------------- heterogeneous workloads
def test_shared_multiplier_workload_matches_single_gaussian():
    """k₁ Gaussians of σ = x and k₂ of σ = 2x compose to one Gaussian with
    μ² = (k₁ + k₂/4)/x² (Dong, Roth, Su 2019, Cor. 3.3)."""
    k1, k2 = 30, 40
    one = calibrate("gaussian", "sigma", epsilon=1.0, delta=1e-6, accountant="rdp", rtol=RTOL)
    both = calibrate_workload([Term("gaussian", "sigma", count=k1),
                               Term("gaussian", "sigma", count=k2, multiplier=2.0)],
                              epsilon=1.0, delta=1e-6, accountant="rdp", rtol=RTOL)
    assert both.value == pytest.approx(one.value * math.sqrt(k1 + k2 / 4), rel=1e-7)


def test_callable_family_and_class_family():
    t = Term(mixture, "s", count=5)
    assert t.label == "s" and t.build(2.0).means == (-2.0, 2.0)
    cls = accounting.default_registry().mechanism("laplace")
    a = calibrate(cls, "b", epsilon=1.0, delta=1e-6, count=5, accountant="zcdp")
    b = calibrate("laplace", "b", epsilon=1.0, delta=1e-6, count=5, accountant="zcdp")
    assert a.value == b.value
    # fixed parameters: sensitivity 2 needs twice the scale
    c = calibrate("laplace", "b", epsilon=1.0, delta=1e-6, count=5, accountant="zcdp",
                  params={"sensitivity": 2.0}, rtol=RTOL)
    assert c.value == pytest.approx(2 * b.value, rel=1e-6)


# -------------------------------------------------------------- monotonicity
def test_non_monotone_family_is_refused():
    with pytest.raises(ValueError, match="non-increasing in x"):
        calibrate_workload(Term(lambda x: accounting.mechanism("gaussian", sigma=1 / x)),
                           epsilon=1.0, delta=1e-5, accountant="rdp")


def test_target_met_everywhere_or_nowhere():
    always = Term(lambda x: accounting.mechanism("gaussian", sigma=max(x, 100.0)))
    with pytest.raises(ValueError, match="nothing to calibrate"):
        calibrate_workload(always, epsilon=1.0, delta=1e-5, accountant="rdp", start=200.0)
    never = Term(lambda x: accounting.mechanism("gaussian", sigma=min(x, 0.5)))
    with pytest.raises(ValueError, match="no x up to"):
        calibrate_workload(never, epsilon=1.0, delta=1e-5, accountant="rdp")


# ---------------------------------------------------------------- bad input
GOOD = dict(epsilon=1.0, delta=1e-5, accountant="rdp")


@pytest.mark.parametrize("kwargs, exc, match", [
    (dict(epsilon=0.0), ValueError, "epsilon must be in"),
    (dict(epsilon=float("nan")), ValueError, "epsilon must be a number"),
    (dict(epsilon="1"), TypeError, "epsilon must be a real number"),
    (dict(delta=0.0), ValueError, "delta must be in"),
    (dict(delta=1.0), ValueError, "delta must be in"),
    (dict(count=0), ValueError, "count must be an integer >= 1"),
    (dict(count=True), TypeError, "count must be an integer"),
    (dict(count=2.5), TypeError, "count must be an integer"),
    (dict(accountant="pdl"), ValueError, "accountant must be one of pld, rdp, zcdp"),
    (dict(rtol=0.0), ValueError, "rtol must be in"),
    (dict(rtol=0.5), ValueError, "rtol must be in"),
    (dict(start=-1.0), ValueError, "start must be in"),
    (dict(step=0.0), ValueError, "step must be in"),
])
def test_bad_arguments(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        calibrate("gaussian", "sigma", **{**GOOD, **kwargs})


@pytest.mark.parametrize("family, solve, params, exc, match", [
    ("gausian", "sigma", None, ValueError, "unknown mechanism 'gausian'"),
    ("gaussian", "b", None, ValueError, "solve must name a real parameter.*sigma"),
    ("gaussian", None, None, ValueError, "solve must name"),
    ("gaussian", "neighbouring", None, ValueError, "solve must name"),
    ("gaussian", "sigma", {"sigma": 1.0}, ValueError, "parameter being solved"),
    ("gaussian", "sigma", {"scale": 1.0}, ValueError, "unknown parameter 'scale'"),
    ("gaussian", "sigma", {"sensitivity": -1.0}, ValueError, "gaussian: sensitivity must be"),
    (42, "sigma", None, TypeError, "family must be a mechanism name"),
    (lambda x: 1.0, "x", None, TypeError, "must return a Mechanism"),
    (mixture, "s", {"s": 1.0}, ValueError, "params apply to a registered"),
])
def test_bad_families(family, solve, params, exc, match):
    with pytest.raises(exc, match=match):
        calibrate(family, solve, params=params, **GOOD)


def test_bad_workloads_and_helpers():
    with pytest.raises(ValueError, match="terms must not be empty"):
        calibrate_workload([], **GOOD)
    with pytest.raises(TypeError, match=r"terms\[1\] must be a MechanismFamily"):
        calibrate_workload([Term("gaussian", "sigma"), "laplace"], **GOOD)
    with pytest.raises(ValueError, match="multiplier must be in"):
        Term("gaussian", "sigma", multiplier=0.0)
    with pytest.raises(ValueError, match="q must be in"):
        calibrate_dpsgd(0.0, 100, epsilon=1.0, delta=1e-5)
    with pytest.raises(ValueError, match="q must be in"):
        calibrate_dpsgd(1.5, 100, epsilon=1.0, delta=1e-5)
    with pytest.raises(ValueError, match="steps must be an integer >= 1"):
        calibrate_dpsgd(0.1, 0, epsilon=1.0, delta=1e-5)


def test_pure_dp_calibration_under_the_pld():
    """δ = 0: ten Laplace uses are (10/b)-DP exactly, so ε ≤ 1 needs b ≥ 10; the
    answer is feasible and within the bracket's tolerance of 10. RDP cannot answer δ = 0."""
    res = accounting.calibrate("laplace", "b", epsilon=1.0, delta=0.0, count=10)
    assert res.value >= 10.0 and res.value <= 10.0 * (1 + 1e-5)
    assert res.epsilon <= 1.0 and res.delta == 0.0
    with pytest.raises(ValueError, match="delta"):
        accounting.calibrate("laplace", "b", epsilon=1.0, delta=0.0, count=10, accountant="rdp")


# ------------------------------------------------------- families x ↦ Ledger
def test_family_of_ledgers_matches_terms():
    """A callable x ↦ Ledger is the general family: 30 Gaussians of σ = x and 40 of
    σ = 2x give the same calibration as the two MechanismFamily terms, and the
    Calibration carries the ledger at its value."""
    def family(x):
        return (Ledger.build("gaussian", 30, sigma=x) +
                Ledger.build("gaussian", 40, sigma=2 * x))
    a = calibrate_workload(family, epsilon=1.0, delta=1e-6, accountant="rdp", rtol=RTOL,
                           parameter="sigma")
    b = calibrate_workload([MechanismFamily("gaussian", "sigma", count=30),
                            MechanismFamily("gaussian", "sigma", count=40, multiplier=2.0)],
                           epsilon=1.0, delta=1e-6, accountant="rdp", rtol=RTOL)
    assert a.value == b.value and a.parameter == b.parameter == "sigma"
    assert a.ledger == family(a.value) and a.ledger.count == 70
    assert a.uses == a.ledger.mechanisms()
    # the ledger at the answer meets the target, checked by an accountant (whose own
    # order search lands within 1e-10 of calibration's certified order)
    eps = Accountant.of(a.ledger).under("rdp").epsilon(1e-6)
    assert a.epsilon <= 1.0 and eps == pytest.approx(a.epsilon, rel=1e-9)


def test_family_must_return_a_ledger():
    with pytest.raises(TypeError, match="must return a Ledger"):
        calibrate_workload(lambda x: accounting.mechanism("gaussian", sigma=x), **GOOD)
    with pytest.raises(TypeError, match="family must be a callable x -> Ledger"):
        calibrate_workload(42, **GOOD)


def test_deprecated_aliases_warn_and_work():
    with pytest.warns(DeprecationWarning, match="MechanismFamily"):
        old = accounting.Term
    assert old is MechanismFamily
    # the DP-SGD preset moved to the plugin; the core keeps no alias that would name it
    with pytest.raises(AttributeError, match="calibrate_dpsgd"):
        accounting.calibrate_dpsgd
    with pytest.raises(AttributeError):
        accounting.no_such_name

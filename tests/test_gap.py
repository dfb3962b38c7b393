"""The information gap (accounting.gap) against closed forms, independent quadrature
and the figures of the unifying-accounting paper (arXiv:2610.02414v1, §3–§4)."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from scipy import integrate
from scipy.optimize import minimize_scalar
from scipy.special import gamma as G

import accounting
from accounting.ledger import Ledger
from accounting import (
    ComposedPair,
    allocation_gap,
    calibrated_family,
    composition_gap,
    discrete_pair,
    information_gap,
    loss_cumulants,
)
from accounting.analysis.gap import LocalExpansion


def gaussian(sigma, s=1.0):
    return accounting.mechanism("gaussian", sigma=sigma, sensitivity=s)


def laplace(b, s=1.0):
    return accounting.mechanism("laplace", b=b, sensitivity=s)


def mixture(sigma, s=1.0):
    """½N(−σ, σ²) + ½N(σ, σ²): the paper's Gaussian mixture (§4.1, §4.3)."""
    return accounting.mechanism("gaussian_mixture", weights=(0.5, 0.5), means=(-sigma, sigma),
                                scales=(sigma, sigma), sensitivity=s)


def mixture_at_rho(rho):
    return mixture(1.0 / math.sqrt(2.0 * rho))


def slope(x, y):
    return float(np.polyfit(np.log(x), np.log(y), 1)[0])


# ------------------------------------------------------------------ Gaussian
@pytest.mark.parametrize("sigma", [0.3, 1.0, 4.0])
def test_gaussian_gap_is_identically_zero(sigma):
    t = np.geomspace(1e-4, 1e4, 33)
    g = information_gap(gaussian(sigma), t)
    assert g.rho == pytest.approx(1.0 / (2.0 * sigma ** 2), rel=1e-15)
    assert g.t_star == 0.0  # a flat ratio: every order attains ρ*
    assert np.all(np.abs(g.gap) <= 1e-12 * np.maximum(1.0, g.envelope))
    assert np.all(np.abs(g.gap[t <= 10]) <= 1e-12)
    # n copies: still a Gaussian, still no gap
    g10 = information_gap(accounting.compose((gaussian(sigma).pair(), 10)), t)
    assert np.isclose(g10.rho, 10 * g.rho, rtol=1e-14)
    assert np.all(np.abs(g10.gap) <= 1e-12 * np.maximum(1.0, g10.envelope))


def test_gaussian_by_generic_quadrature_has_no_gap():
    """β = 2 through the generic additive-noise numerics (no closed form at all):
    ρ* from the numerical envelope, K by quadrature — the gap is roundoff."""
    mech = accounting.mechanism("generalised_gaussian", beta=2.0, scale=math.sqrt(2.0))
    t = np.array([0.1, 1.0, 10.0])
    g = information_gap(mech.generic_pair(), t, "forward")
    # a flat ratio is taken as its t → 0 endpoint, bounded above by K(t₁)/t₁ at the
    # second grid order t₁ ≈ 1.15e-6: pessimistic by about t₁·κ₂/2 = 5.8e-7·ρ*
    assert g.t_star == 0.0
    assert 0.5 <= g.rho <= 0.5 * (1 + 1.2e-6)
    assert np.all(g.gap >= 0) and np.all(g.gap <= 1.2e-6 * g.envelope)


# ------------------------------------------------------------------- Laplace
def _laplace_cgf_mp(e, t):
    """Mironov 2017 Table II, in 50-digit arithmetic: K(t) = t·D_{1+t}."""
    mpmath.mp.dps = 50
    e, a = mpmath.mpf(e), mpmath.mpf(1) + mpmath.mpf(t)
    return float(mpmath.log(a / (2 * a - 1) * mpmath.exp((a - 1) * e)
                            + (a - 1) / (2 * a - 1) * mpmath.exp(-a * e)))


@pytest.mark.parametrize("e", [0.05, 1.0, 3.0])
def test_laplace_gap_against_mpmath(e):
    t = np.array([0.01, 0.3, 1.0, 4.0, 30.0])
    g = information_gap(laplace(1.0 / e), t)
    kl = e + math.exp(-e) - 1.0
    assert math.isclose(g.rho, kl, rel_tol=1e-12) and g.t_star == 0.0
    want = np.array([kl * tt * (tt + 1) - _laplace_cgf_mp(e, tt) for tt in t])
    assert np.allclose(g.gap, want, rtol=1e-9, atol=1e-15)
    assert np.all(g.gap > 0)
    assert np.allclose(g.gap_per_order, want / t, rtol=1e-9)


# ------------------------------------------------ Poisson-subsampled Gaussian
def _sg_cgf_integer_mp(q, sigma, alpha):
    """K(α − 1) = log Σ_i C(α,i) q^i (1−q)^{α−i} e^{(i²−i)/(2σ²)} (Mironov, Talwar,
    Zhang 2019, §3.3), integer α, 50 digits."""
    mpmath.mp.dps = 50
    q, s2 = mpmath.mpf(q), mpmath.mpf(sigma) ** 2
    total = mpmath.fsum(mpmath.binomial(alpha, i) * q ** i * (1 - q) ** (alpha - i)
                        * mpmath.exp((i * i - i) / (2 * s2)) for i in range(alpha + 1))
    return float(mpmath.log(total))


@pytest.mark.parametrize("q,sigma", [(0.5, 1.0), (0.1, 1.0), (0.01, 2.0), (1e-3, 0.8)])
def test_subsampled_gaussian_rho_is_one_over_two_z_squared(q, sigma):
    t = np.array([1.0, 2.0, 3.0])
    g = information_gap(accounting.mechanism("subsampled_gaussian", q=q, sigma=sigma), t)
    rho = 1.0 / (2.0 * sigma ** 2)
    assert g.rho == rho and g.t_star == np.inf
    assert g.rho_direction is accounting.Direction.FORWARD
    want = np.array([_sg_cgf_integer_mp(q, sigma, int(tt) + 1) for tt in t])
    assert np.allclose(g.cgf, want, rtol=1e-10)
    assert np.allclose(g.gap, rho * t * (t + 1) - want, rtol=1e-10)
    # the sup is the t → ∞ limit: the ratio approaches ρ* from below
    big = information_gap(accounting.mechanism("subsampled_gaussian", q=q, sigma=sigma),
                          [1e4], "forward")
    assert 0.98 * rho < big.cgf[0] / (1e4 * (1e4 + 1)) <= rho


def test_subsampled_gap_fills_the_zcdp_bound_as_q_vanishes():
    sigma = 1.0
    qs = [1.0, 0.5, 0.1, 1e-2, 1e-3, 1e-4]
    rel = []
    for q in qs:
        g = information_gap(accounting.mechanism("subsampled_gaussian", q=q, sigma=sigma), 1.0)
        # α = 2: A₂ = 1 + q²(e^{1/σ²} − 1) exactly
        want = 1.0 / sigma ** 2 - math.log1p(q * q * math.expm1(1.0 / sigma ** 2))
        assert math.isclose(float(g.gap), want, rel_tol=1e-12, abs_tol=2e-6 if q == 1 else 0)
        rel.append(float(g.relative_gap))
    # q = 1: the plain Gaussian, no gap (up to the add direction's numerical envelope,
    # pessimistic by t₁·Var[L]/2 ≈ 6e-7 relative at its t → 0 end)
    assert 0 <= rel[0] < 2e-6
    assert np.all(np.diff(rel) > 0)                 # the gap rises as q falls
    assert 1.0 - rel[-1] < 2e-8                     # → the whole zCDP bound


# --------------------------------------------------------- gap versus shift
def test_mixture_gap_is_quadratic_in_the_shift():
    """Paper Fig. 4(a) (t = 1) and Fig. 11 (t = 1.5): fitted slope 2.00."""
    s = np.geomspace(1e-3, 1e-2, 5)
    for t in (1.0, 1.5):
        gaps = [float(information_gap(mixture(1.0, x), t, "forward", local=False).gap) for x in s]
        assert slope(s, gaps) == pytest.approx(2.00, abs=0.02)
        assert slope(s, gaps) == pytest.approx(2.000, abs=5e-4)   # Fig. 11 prints 2.000


def test_laplace_gap_is_quartic_in_the_shift():
    """Paper Fig. 4(a): fitted slope 4.00; Fig. 11 (t = 1.5): 3.997."""
    s = np.geomspace(1e-3, 1e-2, 5)
    for t, paper in ((1.0, 4.00), (1.5, 3.997)):
        gaps = [float(information_gap(laplace(1.0, x), t, local=False).gap) for x in s]
        assert slope(s, gaps) == pytest.approx(4.00, abs=0.02)
        # the paper's figure to its printed digits (4.00 at t = 1, 3.997 at t = 1.5)
        assert slope(s, gaps) == pytest.approx(paper, abs=0.005 if t == 1.0 else 5e-4)


# ----------------------------------------------------------------- cumulants
def test_gaussian_cumulants():
    mu = 0.7
    c = loss_cumulants(gaussian(1.0 / mu))
    assert c.k1 == pytest.approx(mu ** 2 / 2, rel=1e-12)
    assert c.k2 == pytest.approx(mu ** 2, rel=1e-12)
    assert abs(c.k3) < 1e-13 and abs(c.k4) < 1e-13


def test_laplace_cumulants_against_the_loss_law():
    """L for (Lap(e, 1), Lap(0, 1)): −e with mass ½e^{−e}, e with mass ½, and 2x − e
    for x ~ Lap(e) on (0, e) — moments by scipy quad, independently of the library."""
    e = 0.5
    def moment(k):
        inner = integrate.quad(lambda x: (2 * x - e) ** k * 0.5 * math.exp(-(e - x)), 0, e,
                               epsabs=0, epsrel=1e-13)[0]
        return inner + 0.5 * math.exp(-e) * (-e) ** k + 0.5 * e ** k
    m1, m2, m3, m4 = (moment(k) for k in (1, 2, 3, 4))
    k2 = m2 - m1 ** 2
    k3 = m3 - 3 * m2 * m1 + 2 * m1 ** 3
    k4 = m4 - 4 * m3 * m1 - 3 * m2 ** 2 + 12 * m2 * m1 ** 2 - 6 * m1 ** 4
    c = loss_cumulants(laplace(1.0 / e), "backward")
    assert c.k1 == pytest.approx(e + math.exp(-e) - 1, rel=1e-12)
    assert (c.k1, c.k2, c.k3, c.k4) == pytest.approx((m1, k2, k3, k4), rel=1e-9)


def test_discrete_pair_cumulants_from_atoms():
    p = np.array([0.1, 0.2, 0.3, 0.25, 0.15])
    q = np.array([0.3, 0.25, 0.2, 0.15, 0.1])
    loss = np.log(p / q)
    c = loss_cumulants(discrete_pair(p, q))
    m = np.dot(p, loss)
    cm = [np.dot(p, (loss - m) ** k) for k in (2, 3, 4)]
    assert (c.k1, c.k2, c.k3, c.k4) == pytest.approx(
        (m, cm[0], cm[1], cm[2] - 3 * cm[0] ** 2), rel=1e-12)


def _gg_chi(beta):
    """χ_β = (3I² − E[S⁴])/24 for the score S of density ∝ exp(−|x|^β):
    I = β²Γ(2 − 1/β)/Γ(1/β), E[S⁴] = β⁴Γ(4 − 3/β)/Γ(1/β) (−κ₄/24 of L = −sS + O(s²))."""
    i = beta ** 2 * G(2 - 1 / beta) / G(1 / beta)
    s4 = beta ** 4 * G(4 - 3 / beta) / G(1 / beta)
    return (3 * i * i - s4) / 24


def _chi(mech_at_shift, s):
    """b₄/s⁴ = −κ₄/(24 s⁴) at shift s."""
    return -loss_cumulants(mech_at_shift(s)).k4 / (24.0 * s ** 4)


def test_generalised_gaussian_quartic_coefficient():
    """Paper Prop. 4.5: χ₁ = 1/12, χ₂ = 0."""
    gg = lambda beta: lambda s: accounting.mechanism(  # noqa: E731
        "generalised_gaussian", beta=beta, scale=1.0, sensitivity=s)
    # β = 1: χ(s) = 1/12 + O(s) (κ₄(L/s) = −2 + O(|s|)); Richardson removes the O(s)
    c1, c2 = _chi(gg(1.0), 1e-3), _chi(gg(1.0), 5e-4)
    assert c1 == pytest.approx(1 / 12, rel=2e-3)
    assert 2 * c2 - c1 == pytest.approx(1 / 12, rel=1e-5)
    assert abs(_chi(gg(2.0), 1e-3)) < 1e-9
    assert _chi(gg(1.5), 1e-3) == pytest.approx(_gg_chi(1.5), rel=1e-5)
    # the gap itself: Γ(1) = χ·(t(t+1))²·s⁴ + o(s⁴) at t = 1
    s = 1e-3
    g = information_gap(laplace(1.0, s), 1.0)
    assert float(g.gap) / (4 * s ** 4) == pytest.approx(1 / 12, rel=2e-3)


def _student_chi(nu):
    """Score S = (ν+1)Y/(ν+Y²) of t_ν; with W = Y²/(ν+Y²) ~ Beta(½, ν/2):
    I = (ν+1)/(ν+3), E[S⁴] = 3(ν+1)³(ν+2)/(ν(ν+3)(ν+5)(ν+7))."""
    i = (nu + 1) / (nu + 3)
    s4 = 3 * (nu + 1) ** 3 * (nu + 2) / (nu * (nu + 3) * (nu + 5) * (nu + 7))
    return (3 * i * i - s4) / 24


def test_student_t_quartic_coefficient_peaks_near_6_013():
    """Paper Prop. 4.4: the quartic coefficient has a unique maximiser ν ≈ 6.013052641."""
    s = 1e-3
    st = lambda nu: lambda x: accounting.mechanism(  # noqa: E731
        "student_t", nu=nu, scale=1.0, sensitivity=x)
    for nu in (3.0, 6.0, 20.0):
        assert _chi(st(nu), s) == pytest.approx(_student_chi(nu), rel=1e-5)
    best = minimize_scalar(lambda nu: -_chi(st(nu), s), bounds=(4.0, 9.0), method="bounded",
                           options={"xatol": 2e-3})
    assert best.x == pytest.approx(6.013, abs=0.01)
    # → 0 in the Gaussian limit, like the closed form (χ(ν) ≈ 3/(4ν) as ν → ∞)
    assert _chi(st(1e3), s) == pytest.approx(_student_chi(1e3), rel=1e-4)
    assert _chi(st(1e3), s) < 0.03 * _chi(st(6.013), s)


def test_local_expansion_tracks_the_gap():
    t = np.array([0.5, 1.0, 2.0])
    # Student-t: sup at t → 0 (a ≈ 0), quartic leading term
    g = information_gap(accounting.mechanism("student_t", nu=6.0, scale=1.0, sensitivity=0.1),
                        t, "forward")
    assert g.t_star == 0.0
    assert 0 <= g.local.a < 1e-5 * g.rho   # only the pessimistic t → 0 endpoint bound
    assert np.allclose(g.local.gap(t), g.gap, rtol=0.02)
    # mixture: sup at t → ∞, the s² term a = ρ* − κ₁ dominates
    g = information_gap(mixture(1.0, 0.05), t, "forward")
    assert g.t_star == np.inf and g.local.a > 0
    assert np.allclose(g.local.gap(t), g.gap, rtol=0.01)
    # the dropped O(κ₅) terms are small against κ₄
    assert abs(g.local.identity_residual) < 1e-2 * abs(g.local.cumulants.k4)


# --------------------------------------------------------------- composition
@pytest.mark.parametrize("mech", [laplace(2.0), mixture(1.0)], ids=["laplace", "mixture"])
def test_n_copies_scale_rho_and_gap_by_n(mech):
    t = np.array([0.25, 1.0, 4.0])
    one = information_gap(mech, t)
    n = 7
    many = information_gap(accounting.compose((mech.pair(), n)), t)
    assert many.rho == pytest.approx(n * one.rho, rel=1e-13)
    assert many.t_star == one.t_star
    assert np.allclose(many.gap, n * one.gap, rtol=1e-12)
    assert np.allclose(many.cgf, n * one.cgf, rtol=1e-12)


def test_distinct_components_two_nonnegative_terms():
    """Σ n_i Γ_i = (Σ n_i ρ*_i − ρ*_prod)·t(t+1) + Γ_prod (paper §3.3). Laplace has its
    sup at t → 0, the subsampled Gaussian at t → ∞: the product's ρ* is strictly below
    the sum."""
    t = np.array([0.5, 1.0, 2.0])
    e, q = 2.0, 0.01
    lap = laplace(1.0 / e)
    sg = accounting.mechanism("subsampled_gaussian", q=q, sigma=1.0)
    c = composition_gap([(lap, 3), (sg, 2)], t, "forward")
    kl_lap = e + math.exp(-e) - 1
    assert c.rho_sum == pytest.approx(3 * kl_lap + 2 * 0.5, rel=1e-14)
    # the product's sup is its t → 0 limit Σ n_i E[L_i]; the subsampled KL by quad:
    # L = log(1 − q + q·e^{x − 1/2}) under P = (1 − q)N(0, 1) + qN(1, 1)
    pdf = lambda x: ((1 - q) * math.exp(-x * x / 2) + q * math.exp(-(x - 1) ** 2 / 2)) / math.sqrt(2 * math.pi)  # noqa: E731
    kl_sg = integrate.quad(lambda x: pdf(x) * math.log1p(q * math.expm1(x - 0.5)), -40, 40,
                           points=[0.0, 1.0], epsabs=1e-15, epsrel=1e-10, limit=200)[0]
    assert c.product.t_star == 0.0
    assert c.product.rho == pytest.approx(3 * kl_lap + 2 * kl_sg, rel=1e-5)
    assert c.product.rho >= 3 * kl_lap + 2 * kl_sg       # never below the sup
    assert c.slack == pytest.approx(2 * (0.5 - kl_sg), rel=1e-4)
    u = t * (t + 1)
    assert np.allclose(c.gap_sum, c.slack * u + c.product.gap, rtol=1e-12)
    assert np.allclose(c.gap_sum, sum(n * p.gap for p, n in c.parts), rtol=1e-12)
    assert np.all(c.product.gap >= 0)
    # the same through a ComposedPair
    c2 = composition_gap(ComposedPair(((lap.pair(), 3), (sg.pair(), 2))), t, "forward")
    assert np.allclose(c2.gap_sum, c.gap_sum, rtol=1e-12)
    # and through a Ledger (the parts in its order), bit for bit the sequence's answer
    ledger = Ledger.of(lap, 3) + Ledger.of(sg, 2)
    c3 = composition_gap(ledger, t, "forward")
    assert np.array_equal(c3.gap_sum, c.gap_sum) and c3.rho_sum == c.rho_sum
    assert [n for _, n in c3.parts] == [3, 2]
    with pytest.raises(ValueError, match="must not be empty"):
        composition_gap(Ledger(), t)


# ---------------------------------------------------------------- allocation
def test_allocation_reproduces_the_paper():
    """Paper §4.3 / Fig. 5: n = 8, ρ_total = 1/2, t = 1, uniform → concentrated."""
    lap_family = calibrated_family(lambda b: accounting.mechanism("laplace", b=b), 1e-3, 1e3)
    got = {(name, alloc): float(allocation_gap(fam, 0.5, 8, 1.0, alloc).gap)
           for name, fam in (("laplace", lap_family), ("mixture", mixture_at_rho))
           for alloc in ("uniform", "concentrated")}
    assert got["laplace", "uniform"] == pytest.approx(0.037202015, abs=1e-9)
    assert got["laplace", "concentrated"] == pytest.approx(0.193535993, abs=1e-9)
    assert got["mixture", "uniform"] == pytest.approx(0.435179700, abs=1e-9)
    assert got["mixture", "concentrated"] == pytest.approx(0.342190807, abs=1e-9)
    # Fig. 12 (t = 1.5): the directions persist
    lap = [float(allocation_gap(lap_family, 0.5, 8, 1.5, a).gap) for a in ("uniform", "concentrated")]
    mix = [float(allocation_gap(mixture_at_rho, 0.5, 8, 1.5, a).gap)
           for a in ("uniform", "concentrated")]
    assert lap[0] < lap[1] and mix[0] > mix[1]


def test_allocation_explicit_budgets_and_identity():
    lap_family = calibrated_family(lambda b: accounting.mechanism("laplace", b=b), 1e-3, 1e3)
    budgets = [0.25, 0.125, 0.125, 0.0]
    a = allocation_gap(lap_family, 0.5, 4, [0.5, 1.0], budgets)
    parts = [information_gap(lap_family(r), [0.5, 1.0]).gap for r in (0.25, 0.125)]
    assert np.allclose(a.gap, parts[0] + 2 * parts[1], rtol=1e-10)


# ----------------------------------------------------------------- bad input
def test_bad_input():
    lap = laplace(1.0)
    with pytest.raises(ValueError, match=r"t must be in \(0, 1e\+06\]"):
        information_gap(lap, [1.0, 0.0])
    with pytest.raises(ValueError, match="t must not contain NaN"):
        information_gap(lap, float("nan"))
    with pytest.raises(ValueError, match="t must be finite"):
        information_gap(lap, np.inf)
    with pytest.raises(ValueError, match="1-d array"):
        information_gap(lap, np.ones((2, 2)))
    with pytest.raises(TypeError, match="t must be"):
        information_gap(lap, "one")
    with pytest.raises(TypeError, match="pair_or_mechanism must be a Pair or a Mechanism"):
        information_gap(0.5)
    with pytest.raises(ValueError, match="direction must be one of"):
        information_gap(lap, 1.0, "sideways")
    with pytest.raises(TypeError, match="local must be a bool"):
        information_gap(lap, 1.0, local="yes")
    with pytest.raises(ValueError, match="'forward' or 'backward'"):
        loss_cumulants(lap, "max")
    with pytest.raises(ValueError, match="no cumulants"):
        loss_cumulants(accounting.mechanism("subsampled_gaussian", q=0.1, sigma=1.0))
    with pytest.raises(ValueError, match="must not be empty"):
        composition_gap([])
    with pytest.raises(ValueError, match="count must be an integer >= 1"):
        composition_gap([(lap, 0)])
    with pytest.raises(TypeError, match="single Laplace"):
        composition_gap(lap)
    with pytest.raises(ValueError, match="rho_total must be in"):
        allocation_gap(mixture_at_rho, -1.0, 4)
    with pytest.raises(ValueError, match="n must be an integer >= 1"):
        allocation_gap(mixture_at_rho, 0.5, 0)
    with pytest.raises(ValueError, match="allocation must be 'uniform'"):
        allocation_gap(mixture_at_rho, 0.5, 4, allocation="spread")
    with pytest.raises(ValueError, match="must sum to rho_total"):
        allocation_gap(mixture_at_rho, 0.5, 2, allocation=[0.1, 0.1])
    with pytest.raises(ValueError, match="n = 3 budgets"):
        allocation_gap(mixture_at_rho, 0.5, 3, allocation=[0.25, 0.25])
    with pytest.raises(ValueError, match="not 0.25"):
        allocation_gap(lambda rho: laplace(1.0), 0.5, 2)  # ignores ρ
    with pytest.raises(ValueError, match="need lo < hi"):
        calibrated_family(lambda b: laplace(b), 2.0, 1.0)
    with pytest.raises(ValueError, match="outside"):
        calibrated_family(lambda b: laplace(b), 1.0, 2.0)(5.0)
    # a PLD-only pair: its upper Rényi curve is +∞, so there is no gap to report
    pld_only = accounting.LawPair(*(2 * ((accounting.LossPMF.from_atoms(
        np.array([0.5]), np.array([0.9]), 0.1),) * 2,)))
    with pytest.raises(ValueError, match="is \\+∞ at t"):
        information_gap(pld_only, 1.0)


def test_local_expansion_object():
    c = loss_cumulants(laplace(1.0))
    lex = LocalExpansion(c, 0.5)
    t = np.array([0.5, 2.0])
    want = ((0.5 - c.k1) * t * (t + 1) - c.k3 / 6 * t ** 2 * (t + 1)
            - c.k4 / 24 * t ** 2 * (t ** 2 - 1))
    assert np.allclose(lex.gap(t), want, rtol=1e-14)
    with pytest.raises(ValueError, match="t must be in"):
        lex.gap(-1.0)


# --------------------------------------------------------------------- plots
def test_plots_draw_the_numbers():
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from accounting.plot import (
        plot_allocation,
        plot_gap,
        plot_gap_vs_parameter,
        plot_gap_vs_shift,
    )
    t = np.array([0.5, 1.0, 2.0])
    g = information_gap(laplace(1.0), t)
    ax = plot_gap(g)
    rdp, env = ax.lines[0].get_ydata(), ax.lines[1].get_ydata()
    assert np.allclose(env - rdp, g.gap_per_order, rtol=1e-12)
    s = np.array([1e-3, 2e-3, 4e-3])
    ax = plot_gap_vs_shift(s, 3.0 * s ** 4, label="quartic")
    assert "slope 4.000" in ax.get_legend().get_texts()[0].get_text()
    ax = plot_gap_vs_parameter(lambda q: accounting.mechanism("subsampled_gaussian", q=q,
                                                              sigma=1.0), [0.01, 1.0], t=[1.0])
    assert np.allclose(ax.lines[0].get_ydata(),
                       [1 - math.log1p(1e-4 * math.expm1(1.0)), 0.0], atol=2e-6)
    ax = plot_allocation({"mixture": mixture_at_rho}, 0.5, 8, t=[1.0])
    assert np.allclose([ln.get_ydata()[0] for ln in ax.lines], [0.435179700, 0.342190807],
                       atol=1e-9)
    with pytest.raises(ValueError, match="same length"):
        plot_gap_vs_shift([1e-3, 2e-3], [1.0])
    plt.close("all")


def test_plot_without_matplotlib_names_the_extra(monkeypatch):
    import sys

    from accounting import plot
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    with pytest.raises(ImportError, match=r"install the 'plot' extra"):
        plot.plot_gap_vs_shift([1e-3, 2e-3], [1.0, 2.0])

"""The characteristic function φ(t) = E[e^{itL}] as a curve kind
(``accounting.curves.characteristic``): closed forms against independent quadrature,
the identities every φ obeys, composition by multiplication, the certified inversion
φ → PLD against closed-form and direct PLDs, RDP → φ, and the subsampled Gaussian's
φ under remove and add (what autodp's ``test_pld_sample_remove_only`` and
``test_pld_sample_add_only`` check, with our own parameters and numbers)."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from scipy import integrate
from scipy.stats import norm

import accounting
from accounting.curves.characteristic import (CharacteristicFunction, PhiTerm,
                                              characteristic_to_pld, law_log_mgf,
                                              rdp_to_characteristic, rounding_remainder,
                                              discretisation_factor)
from accounting.curves.pld import PLD, compose_plds
from accounting.curves.rdp import CGF, RDP
from accounting.vocabulary import Exactness

T = np.array([-3.0, -0.7, 0.0, 0.25, 1.0, 2.5, 6.0])


def _phi(name, **params):
    return accounting.mechanism(name, **params).curve(CharacteristicFunction)


def _gdp_delta(mu, eps):
    """δ(ε) of μ-GDP (Dong, Roth, Su, arXiv:1905.02383, Cor. 2.13)."""
    return norm.cdf(-eps / mu + mu / 2) - np.exp(eps) * norm.cdf(-eps / mu - mu / 2)


# ------------------------------------------------------------ closed forms
def test_gaussian_phi_is_the_closed_form_and_mpmath_quadrature():
    mu = 1.3
    phi = _phi("gaussian", sigma=1.0 / mu)
    assert phi.is_exact
    got = phi.phi(T)
    closed = np.exp(1j * T * mu ** 2 / 2 - T ** 2 * mu ** 2 / 2)
    np.testing.assert_allclose(got, closed, rtol=1e-14, atol=1e-15)
    for t in (0.25, 1.0, 2.5):
        # L = μx − μ²/2 under P: x ~ N(μ, 1)
        def integrand(x, t=t):
            return mpmath.npdf(x, mu, 1) * mpmath.expj(t * (mu * x - mu ** 2 / 2))
        ref = complex(mpmath.quad(integrand, [-mpmath.inf, mu, mpmath.inf]))
        assert abs(complex(phi.phi(t)) - ref) < 1e-12
    # symmetric: the backward law is the same
    np.testing.assert_allclose(phi.phi(T, "backward"), got, rtol=1e-14, atol=1e-15)


def test_laplace_phi_is_mpmath_quadrature_of_its_loss_law():
    b = 0.8
    e = 1.0 / b
    phi = _phi("laplace", b=b)
    for t in (0.25, 1.0, 2.5, 6.0):
        # P = Lap(e, 1), L = |x| − |x − e|
        def integrand(x, t=t):
            return 0.5 * mpmath.exp(-abs(x - e)) * mpmath.expj(t * (abs(x) - abs(x - e)))
        ref = complex(mpmath.quad(integrand, [-mpmath.inf, 0, e, mpmath.inf]))
        for d in ("forward", "backward"):
            assert abs(complex(phi.phi(t, d)) - ref) < 1e-12


def test_randomized_response_phi_is_the_exact_sum():
    p = 0.8
    phi = _phi("randomized_response", p=p)
    ell = math.log(p / (1 - p))
    brute = p * np.exp(1j * T * ell) + (1 - p) * np.exp(-1j * T * ell)
    np.testing.assert_allclose(phi.phi(T), brute, rtol=1e-14, atol=1e-15)
    # RR composed 7 times is the binomial law: φ^7
    np.testing.assert_allclose((phi * 7).phi(T), brute ** 7, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("name, params", [("gaussian", {"sigma": 0.7}), ("laplace", {"b": 1.5}),
                                          ("randomized_response", {"p": 0.9})])
def test_identities_of_every_phi(name, params):
    phi = _phi(name, **params)
    for d in ("forward", "backward"):
        v = phi.phi(T, d)
        assert np.all(np.abs(v) <= 1 + 1e-15)
        np.testing.assert_allclose(phi.phi(-T, d), np.conj(v), rtol=1e-14, atol=1e-15)
        assert phi.phi(0.0, d) == pytest.approx(1.0, abs=1e-15)
        # K(−1) = log E[e^{−L}]: forward E_P[dQ/dP] = Q(P > 0) = 1, backward (−L under Q)
        # E_Q[dP/dQ] = P(Q > 0) = 1, both pairs being mutually absolutely continuous
        assert abs(complex(phi.cgf(-1.0, d))) < 1e-13
        # the real order t = 1 is the Rényi CGF: D_2 = K(1)
        rdp = accounting.mechanism(name, **params).curve(RDP)
        assert complex(phi.cgf(1.0, d)).real == pytest.approx(float(rdp.renyi(2.0, d)), rel=1e-12)


def test_composition_multiplies():
    g = _phi("gaussian", sigma=1.0)
    lap = _phi("laplace", b=2.0)
    both = g + lap * 3
    np.testing.assert_allclose(both.phi(T), g.phi(T) * lap.phi(T) ** 3, rtol=1e-13, atol=1e-15)
    # k Gaussians of μ are one of μ√k (exact GDP composition)
    np.testing.assert_allclose((g * 4).phi(T), _phi("gaussian", sigma=0.5).phi(T),
                               rtol=1e-13, atol=1e-15)
    assert both.provenance.exactness is Exactness.EXACT


def test_exact_terms_state_only_rounding_error():
    g = _phi("gaussian", sigma=1.0) * 10
    assert np.all(g.error(T) < 1e-13)


def test_a_term_of_grid_laws_is_their_exact_sum_and_inverts_to_them():
    pld = accounting.mechanism("randomized_response", p=0.7).curve(PLD)
    fwd, bwd = pld.law("forward"), pld.law("backward")
    phi = CharacteristicFunction(((2, PhiTerm.from_laws(fwd, bwd, "RR on the grid")),))
    brute = np.array([np.sum(fwd.masses * np.exp(1j * t * fwd.losses)) for t in T]) ** 2
    np.testing.assert_allclose(phi.phi(T), brute, rtol=1e-12, atol=1e-15)
    back = phi.to(PLD, step=pld.step)
    lo, up = back.delta_interval(EPS)
    # the term is the φ of these (pessimistic) laws, on both sides: the inversion gives
    # back their composition, within its rounding allowance
    dup = (pld * 2).delta(EPS)
    assert np.all(lo <= dup) and np.all(dup <= up) and np.all(up - lo < 1e-12)
    with pytest.raises(ValueError, match="grid of step"):
        phi.to(PLD, step=2 * pld.step)


# ------------------------------------------------------------ φ → PLD
EPS = np.array([0.0, 0.5, 1.0, 2.0, 3.0])


def test_inverted_gaussian_brackets_the_exact_gdp_profile():
    mu = 1.0
    pld = _phi("gaussian", sigma=1.0).to(PLD)
    assert pld.provenance.exactness is Exactness.UPPER
    lo, up = pld.delta_interval(EPS)
    exact = _gdp_delta(mu, EPS)
    assert np.all(lo <= exact) and np.all(exact <= up)
    # connect-the-dots above: O(step²) plus the inversion's floor (mass at +∞);
    # rounding down below: O(step)
    assert np.all((up - exact) / exact < 3e-6)
    assert np.all((exact - lo) / exact < 5e-4)
    assert pld.law("forward").inf_mass < 1e-8


def test_privacy_queries_on_phi_go_through_the_inversion():
    phi = _phi("gaussian", sigma=1.0)
    assert "characteristic→pld (inversion)" in phi.explain("delta").path
    lo, up = phi.delta_interval(EPS)
    exact = _gdp_delta(1.0, EPS)
    assert np.all(lo <= exact) and np.all(exact <= up)
    assert float(phi.epsilon(1e-6)) == pytest.approx(float(phi.to(PLD).epsilon(1e-6)), rel=1e-12)


def test_inverted_gaussian_composition_is_mu_gdp():
    # 3 × N(σ = 2) and 2 × N(σ = 1): μ = sqrt(3/4 + 2)
    phi = _phi("gaussian", sigma=2.0) * 3 + _phi("gaussian", sigma=1.0) * 2
    lo, up = phi.to(PLD).delta_interval(EPS)
    exact = _gdp_delta(math.sqrt(3 / 4 + 2), EPS)
    assert np.all(lo <= exact) and np.all(exact <= up)


def test_inverted_laplace_and_rr_bracket_the_direct_pld():
    lap = accounting.mechanism("laplace", b=1.0)
    direct = lap.curve(PLD)
    pld = (lap.curve(CharacteristicFunction) * 2).to(PLD)
    dlo, dup = (direct * 2).delta_interval(EPS)
    lo, up = pld.delta_interval(EPS)
    assert np.all(lo <= dlo + 1e-12) and np.all(dup <= up + 1e-12)
    assert np.all(up - dup < 1e-8) and np.all(dlo - lo < 1e-8)
    # the loss of 2 × Laplace(e = 1) never exceeds 2: δ(2) = 0, within the inversion's floor
    assert up[-1] < 1e-8 and lo[-1] == 0.0
    # the closed-form φ and that of the direct PLD's law: within the stated |t|·step
    t = np.array([0.3, 2.0])
    grid = np.exp(law_log_mgf(direct.law("forward"), 1j * t))
    assert np.all(np.abs(lap.curve(CharacteristicFunction).phi(t) - grid) <= t * direct.step)


def test_inversion_of_a_mixed_product_matches_the_direct_composition():
    # a Gaussian (inverted through its closed form and decay) with a Poisson-subsampled
    # Gaussian (through its certified lattice law) and randomized response
    g = accounting.mechanism("gaussian", sigma=2.0)
    sg = accounting.mechanism("subsampled_gaussian", sigma=1.0, q=0.05)
    rr = accounting.mechanism("randomized_response", p=0.6)
    phi = g.curve(CharacteristicFunction) + sg.curve(CharacteristicFunction) * 3 \
        + rr.curve(CharacteristicFunction)
    lo, up = phi.to(PLD).delta_interval(EPS)
    direct = compose_plds([(g.curve(PLD), 1), (sg.curve(PLD), 3), (rr.curve(PLD), 1)])
    dlo, dup = direct.delta_interval(EPS)
    # both are certified brackets of the same truth: they overlap, and agree closely
    assert np.all(lo <= dup) and np.all(dlo <= up)
    # (the inversion's floor: its rounding allowance, a few 1e-9 of δ at every ε)
    floor = phi.to(PLD).law("forward").inf_mass
    assert 0 < floor < 1e-8
    np.testing.assert_allclose(up, dup, rtol=1e-5, atol=floor)


def test_rounding_remainder_is_negligible_for_a_gaussian_and_infinite_without_decay():
    assert rounding_remainder(0.5, 2e-4) == 0.0
    assert rounding_remainder(1e-9, 1e-4) > 0 and rounding_remainder(0.0, 1e-4) == math.inf
    a, h = 1e-8, 2e-4
    g = math.exp(-a * math.pi ** 2 / h ** 2)
    assert rounding_remainder(a, h) == pytest.approx(4 / math.pi * g / (1 - g ** 8), rel=1e-12)
    assert rounding_remainder(a, h, connect_the_dots=True) == pytest.approx(
        rounding_remainder(a, h) * (1 + 4 / (1 - math.exp(-h))), rel=1e-12)


@pytest.mark.parametrize("pessimistic", [True, False])
def test_discretisation_factor_is_the_integral_of_its_periodic_factor(pessimistic):
    """c_0(t) = (1/h)∫_0^h g_t(r) dr by mpmath, g_t(r) = e^{−itr}(1 + w(r)(e^{ith} − 1))
    with w(r) = (1 − e^{−r})/(1 − e^{−h}) (connect-the-dots), or e^{−itr} (rounding down)."""
    h = 0.05
    for t in (0.0, 0.7, -3.0, math.pi / h):
        def g(r, t=t):
            w = (1 - mpmath.exp(-r)) / (1 - mpmath.exp(-h)) if pessimistic else 0
            return mpmath.expj(-t * r) * (1 + w * (mpmath.expj(t * h) - 1))
        ref = complex(mpmath.quad(g, [0, h]) / h)
        got = complex(discretisation_factor(np.array([t]), h, pessimistic)[0])
        assert abs(got - ref) < 1e-13


# ------------------------------------------------------------ RDP → φ → PLD
def test_rdp_to_phi_recovers_the_pld_from_the_renyi_curve():
    """arXiv:2610.02414 §2 as a computation: the exact Rényi curve of a Gaussian
    composition determines φ = exp(K(it)), whose inversion brackets the exact profile."""
    rdp = accounting.mechanism("gaussian", sigma=2.0).curve(RDP) * 3 \
        + accounting.mechanism("gaussian", sigma=1.0).curve(RDP) * 2
    phi = rdp.to(CharacteristicFunction)
    mu = math.sqrt(3 / 4 + 2)
    np.testing.assert_allclose(phi.phi(T), np.exp(1j * T * mu ** 2 / 2 - T ** 2 * mu ** 2 / 2),
                               rtol=1e-12, atol=1e-15)
    lo, up = phi.to(PLD).delta_interval(EPS)
    exact = _gdp_delta(mu, EPS)
    assert np.all(lo <= exact) and np.all(exact <= up)
    assert np.all((up - lo) / exact < 5e-4)
    # a term without a decay rate (nor a lattice law) cannot be inverted: refused
    bare = rdp_to_characteristic(RDP(CGF.of(lambda t, d: t * (t + 1) / 2,
                                            analytic=lambda z, d: z * (z + 1) / 2)))
    with pytest.raises(ValueError, match="neither a decay rate"):
        bare.to(PLD)


def test_rdp_to_phi_refuses_a_bound():
    rdp = accounting.mechanism("subsampled_gaussian", sigma=1.0, q=0.01).curve(RDP)
    with pytest.raises(ValueError, match="declares no analytic continuation"):
        rdp.to(CharacteristicFunction)


def test_rdp_to_pld_still_goes_through_the_profile():
    """φ continues only some RDP curves, so the graph never routes RDP → PLD through
    it (rdp→characteristic is labelled a bound for that reason)."""
    from accounting.curves.graph import CORE, find_path
    path = [edge.name for edge in find_path(list(CORE), RDP, PLD)]
    assert path == ["rdp→profile (improved conversion)", "profile→pld (connect-the-dots)"]
    path = [edge.name for edge in find_path(list(CORE), RDP, CharacteristicFunction)]
    assert path == ["rdp→characteristic (analytic continuation)"]


# ------------------------------------------------------------ autodp's φ tests
def _subsampled_reference(q, sigma, t, direction):
    """∫ of e^{itL} against the direction's law, by adaptive quadrature: P =
    (1 − q)N(0, σ²) + qN(1, σ²), Q = N(0, σ²); forward (remove) L under P, backward
    (add) −L under Q."""
    mu = 1.0 / sigma

    def loss(x):   # x in units of σ
        return np.log1p(q * np.expm1(mu * x - mu ** 2 / 2))

    if direction == "forward":
        def dens(x):
            return (1 - q) * norm.pdf(x) + q * norm.pdf(x - mu)
        sign = 1.0
    else:
        dens, sign = norm.pdf, -1.0
    re = integrate.quad(lambda x: dens(x) * math.cos(sign * t * loss(x)), -40, 40 + mu,
                        limit=400, epsabs=1e-14, epsrel=1e-13)[0]
    im = integrate.quad(lambda x: dens(x) * math.sin(sign * t * loss(x)), -40, 40 + mu,
                        limit=400, epsabs=1e-14, epsrel=1e-13)[0]
    return complex(re, im)


TS = np.array([1.1 ** k for k in range(2, 20, 3)])


def direct_step(m):
    return m.curve(PLD).step


@pytest.mark.parametrize("q, direction", [(0.01, "forward"), (0.01, "backward"),
                                          (0.001, "backward")])
def test_pld_sample_remove_and_add(q, direction):
    """autodp's ``test_pld_sample_remove_only`` / ``_add_only``: φ of the
    Poisson-subsampled Gaussian two ways. Ours: the φ of its pessimistic PLD law (a
    numerical term with a stated error); the reference: quadrature of the exact loss
    law. Remove is the forward direction, add the backward one."""
    m = accounting.mechanism("subsampled_gaussian", sigma=1.0, q=q)
    phi = m.curve(CharacteristicFunction)
    assert phi.provenance.exactness is Exactness.NUMERICAL
    got = phi.phi(TS, direction)
    err = phi.error(TS, direction)
    ref = np.array([_subsampled_reference(q, 1.0, t, direction) for t in TS])
    assert np.all(np.abs(got - ref) <= err)
    assert np.all(err <= 3 * TS * 2 * direct_step(m))   # the stated error is ~2|t|h
    # the log φ agree to autodp's two places (relative), and much better in fact
    rel = np.abs(np.log(got) - np.log(ref)) / np.abs(np.log(ref))
    assert np.all(rel < 5e-3)
    assert np.all(np.abs(got - ref) < 1e-6)
    # the PLD recovered from φ brackets the direct PLD's δ(ε)
    direct = m.curve(PLD)
    lo, up = phi.to(PLD).delta_interval(EPS / 10, direction)
    dlo, dup = direct.delta_interval(EPS / 10, direction)
    assert np.all(lo <= dlo + 1e-15) and np.all(dup <= up + 1e-15)
    assert np.all(up - dup < 1e-7)


# ------------------------------------------------------------ bad input
def test_bad_input_is_refused_clearly():
    phi = _phi("gaussian", sigma=1.0)
    with pytest.raises(ValueError, match="'forward' or 'backward'"):
        phi.phi(1.0, "max")
    with pytest.raises(ValueError, match="t must not contain NaN"):
        phi.phi(np.nan)
    with pytest.raises(TypeError, match="CharacteristicFunction with a"):
        phi.compose(accounting.mechanism("gaussian", sigma=1.0).curve(PLD))
    with pytest.raises(TypeError, match="unexpected keyword"):
        characteristic_to_pld(phi, stpe=1e-3)
    with pytest.raises(ValueError, match="step must be at least"):
        characteristic_to_pld(phi, step=1e-9)
    with pytest.raises(ValueError, match="count"):
        phi * 0
    with pytest.raises(TypeError, match=r"terms\[0\] must be a \(count, PhiTerm\)"):
        CharacteristicFunction(((1, "not a term"),))
    with pytest.raises(ValueError, match="decay"):
        PhiTerm(lambda z, d: 0 * z, decay=(-1.0, None))

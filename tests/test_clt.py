"""The CLT (GDP) approximation: exact where the composition is Gaussian, labelled an
approximation, and shown to under-report against the certified PLD bracket."""

from __future__ import annotations

import numpy as np
import pytest

import accounting as ac
from accounting.analysis.clt import clt_mu, gdp_profile, poisson_gaussian_mu


def test_gaussians_compose_to_their_exact_mu():
    # n Gaussians of σ compose to μ = √n/σ exactly (Gaussian DP), and the CLT returns it
    g = ac.mechanism("gaussian", sigma=2.0)
    assert clt_mu([(g, 4)]) == pytest.approx(1.0, rel=1e-6)
    h = ac.mechanism("gaussian", sigma=1.0)
    assert clt_mu([(g, 4), (h, 3)]) == pytest.approx(2.0, rel=1e-6)   # √(4/4 + 3/1)


def test_the_gdp_profile_is_the_gaussian_mechanisms():
    exact = ac.mechanism("gaussian", sigma=1.0).curve(ac.PrivacyProfile)
    eps = np.array([-1.0, 0.0, 0.5, 2.0, 5.0])
    np.testing.assert_allclose(gdp_profile(1.0).delta(eps), exact.delta(eps), rtol=1e-10)
    assert float(gdp_profile(1.0).delta(np.inf)) == 0.0
    assert float(gdp_profile(0.0).delta(0.0)) == 0.0


def test_poisson_closed_form_matches_the_general_clt_at_small_rates():
    q, sigma, steps = 256 / 60000, 1.1, 14062
    general = clt_mu([(ac.mechanism("subsampled_gaussian", q=q, sigma=sigma), steps)])
    assert general == pytest.approx(poisson_gaussian_mu(q, sigma, steps), rel=0.02)
    assert poisson_gaussian_mu(q, sigma, steps) == pytest.approx(
        q * np.sqrt(steps * (np.exp(1 / sigma ** 2) - 1)), rel=1e-15)


def test_it_is_labelled_an_approximation_and_under_reports_where_it_should():
    prof = gdp_profile(0.5)
    assert prof.provenance.exactness is ac.Exactness.NUMERICAL
    assert not prof.provenance.exactness.certified
    assert "not a bound" in str(prof.provenance)
    # few steps at a large rate: the CLT's ε is below the certified lower end
    mech = ac.mechanism("subsampled_gaussian", q=0.1, sigma=1.0)
    clt = float(gdp_profile(poisson_gaussian_mu(0.1, 1.0, 10)).epsilon(1e-5))
    lo, _ = ac.Accountant().compose(mech, count=10).epsilon_interval(1e-5)
    assert clt < 0.7 * float(lo)


def test_bad_input_names_the_parameter():
    with pytest.raises(ValueError, match="sigma"):
        poisson_gaussian_mu(0.1, 0.0, 10)
    with pytest.raises(ValueError, match="q"):
        poisson_gaussian_mu(1.5, 1.0, 10)
    with pytest.raises(ValueError, match="components"):
        clt_mu([])
    with pytest.raises(TypeError, match=r"components\[0\]"):
        clt_mu([ac.mechanism("gaussian", sigma=1.0)])
    with pytest.raises(ValueError, match="mu"):
        gdp_profile(-1.0)
    with pytest.raises(ValueError, match="finite moments"):   # a loss that is +∞ with mass ½
        clt_mu([(ac.discrete_pair([0.5, 0.5, 0.0], [0.0, 0.5, 0.5]), 1)])

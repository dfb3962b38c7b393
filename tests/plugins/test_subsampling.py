"""Poisson subsampling of any base: profiles by the amplification identity, Rényi
curves by quadrature, checked against independent computations."""

import attrs
import mpmath as mp
import numpy as np
import pytest
from scipy import integrate

import accounting
from accounting import PLD, RDP, ZCDP, PrivacyProfile, TradeOff
from accounting.pairs.additive import AdditiveNoise
from accounting.vocabulary import Direction
from accounting_mechanisms import subsampled_gaussian_rdp as exact_sgm
from accounting_mechanisms.gaussian import GaussianPair
from accounting_mechanisms.subsampling import PoissonSubsampled, PoissonSubsampledPair

ALPHAS = np.array([1.5, 2.0, 3.7, 10.0, 40.0])


@pytest.mark.parametrize("q, z", [(0.1, 0.8), (0.01, 1.5), (0.3, 3.0)])
def test_generic_quadrature_matches_the_exact_subsampled_gaussian(q, z):
    pair = PoissonSubsampledPair(GaussianPair(1.0 / z), q)   # the generic wrapper, not the plugin
    fwd = pair._cgf(ALPHAS - 1, Direction.FORWARD) / (ALPHAS - 1)
    bwd = pair._cgf(ALPHAS - 1, Direction.BACKWARD) / (ALPHAS - 1)
    np.testing.assert_allclose(fwd, exact_sgm.rdp_remove(q, z, ALPHAS), rtol=1e-9)
    np.testing.assert_allclose(bwd, exact_sgm.rdp_add(q, z, ALPHAS), rtol=1e-9)


@pytest.mark.parametrize("alpha", [2.0, 3.5])
def test_subsampled_laplace_rdp_matches_mpmath(alpha):
    q, b = 0.05, 1.0
    rdp = accounting.mechanism("subsampled_laplace", q=q, b=b).curve(RDP)
    mp.mp.dps = 30
    qq, a = mp.mpf(q), mp.mpf(alpha)
    f = lambda x: mp.exp(-abs(x)) / 2            # noqa: E731
    g = lambda x: mp.exp(-abs(x - 1)) / 2        # noqa: E731
    mix = lambda x: (1 - qq) * f(x) + qq * g(x)  # noqa: E731
    fwd = mp.log(mp.quad(lambda x: f(x) * (mix(x) / f(x)) ** a, [-mp.inf, 0, 1, mp.inf])) / (a - 1)
    bwd = mp.log(mp.quad(lambda x: mix(x) * (f(x) / mix(x)) ** a, [-mp.inf, 0, 1, mp.inf])) / (a - 1)
    assert float(rdp.rdp(alpha, "forward")) == pytest.approx(float(fwd), rel=1e-8)
    assert float(rdp.rdp(alpha, "backward")) == pytest.approx(float(bwd), rel=1e-8)


@pytest.mark.parametrize("eps", [0.0, 0.02, 0.1, 0.5])
def test_subsampled_laplace_profile_matches_quadrature(eps):
    q = 0.05
    pair = accounting.mechanism("subsampled_laplace", q=q, b=1.0).pair()
    f = lambda x: np.exp(-abs(x)) / 2              # noqa: E731
    mix = lambda x: (1 - q) * f(x) + q * f(x - 1)  # noqa: E731
    fwd = integrate.quad(lambda x: max(mix(x) - np.exp(eps) * f(x), 0.0), -60, 60,
                         points=[0, 1], limit=400, epsabs=1e-14)[0]
    bwd = integrate.quad(lambda x: max(f(x) - np.exp(eps) * mix(x), 0.0), -60, 60,
                         points=[0, 1], limit=400, epsabs=1e-14)[0]
    assert float(pair.profile(eps, "forward")) == pytest.approx(fwd, rel=1e-7, abs=1e-13)
    assert float(pair.profile(eps, "backward")) == pytest.approx(bwd, rel=1e-7, abs=1e-13)


@attrs.frozen
class Logistic(AdditiveNoise):
    """A user-defined noise given only as a log-density."""

    name = "test_logistic"
    s: float = 1.0

    def log_density(self, x):
        y = np.abs(np.asarray(x, dtype=float)) / self.s
        return -y - 2.0 * np.log1p(np.exp(-y))


def test_user_noise_wrapped_in_poisson_subsampling_gets_every_curve():
    mech = PoissonSubsampled(Logistic(1.0), q=0.1)
    pld = mech.curve(PLD, step=1e-3)
    prof = mech.curve(PrivacyProfile)
    eps = np.linspace(-0.5, 1.5, 81)
    for d in ("forward", "backward"):
        assert np.all(pld.delta(eps, d) >= prof.delta(eps, d, bound="lower") - 1e-12)
        assert np.all(pld.delta(eps, d, bound="lower") <= prof.delta(eps, d) + 1e-12)
    rdp = mech.curve(RDP).rdp(ALPHAS)
    assert np.all(np.isfinite(rdp)) and np.all(np.diff(rdp) >= 0)
    # the PLD's (finite) lower Rényi curve sits below the quadrature, and close to it
    low = pld.to(RDP).rdp(ALPHAS[:3], bound="lower")
    assert np.all(low <= rdp[:3] * (1 + 1e-9))
    np.testing.assert_allclose(low, rdp[:3], rtol=2e-2)
    rho = mech.curve(ZCDP).rho()
    assert np.all(rho * ALPHAS[:4] >= rdp[:4] * (1 - 1e-9))
    beta = mech.curve(TradeOff).beta(np.linspace(0, 1, 101))
    assert np.all((beta >= 0) & (beta <= 1)) and np.all(np.diff(beta) <= 1e-12)

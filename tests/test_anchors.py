"""Agreement with the optional anchors: dp_accounting's PLD accountant and
prv_accountant (the ``bench`` extra; each test skips cleanly without its package).

Workloads, Poisson-subsampled Gaussian, δ = 1e-5:
  (a) DP-SGD on MNIST: q = 256/60000, σ = 1.1, 14062 steps (tight ε ≈ 2.3816);
  (b) q = 0.01, σ = 1.0, 1000 steps.

Measured (ours at the default step 2e-4; dp_accounting connect-the-dots at grid 1e-4;
PRV with eps_error 0.01, delta_error 1e-10):

  (a) ours [2.380846, 2.381958]   dp_accounting 2.381686   PRV (2.371598, 2.381599, 2.391601)
  (b) ours [1.828179, 1.828265]   dp_accounting 1.828244   PRV (1.818238, 1.828239, 1.838240)

i.e. our upper is +1.1e-4 (a) / +1.2e-5 (b) from dp_accounting's, our lower −0.047%
(a) / −0.005% (b) from our upper. (At HEAD, before the current discretise.py work,
the lowers were 2.372085 and 1.828043: −0.42% and −0.012%; the 0.5% bound holds
for both.)
"""

from __future__ import annotations

import functools

import pytest

import accounting as ac

pytestmark = pytest.mark.bench

DELTA = 1e-5
WORKLOADS = {
    "dpsgd-mnist": (256 / 60000, 1.1, 14062),
    "q0.01-sigma1-1000": (0.01, 1.0, 1000),
}
#: dp_accounting's answer for (a), as published and as measured here
DPSGD_EPSILON = 2.3816


@functools.lru_cache(maxsize=None)
def ours(q: float, sigma: float, steps: int) -> tuple[float, float]:
    """Our certified (lower, upper) ε(δ) at the default step."""
    acct = ac.Accountant().compose(ac.mechanism("subsampled_gaussian", q=q, sigma=sigma), steps)
    lo, hi = acct.epsilon_interval(DELTA)
    return float(lo), float(hi)


@functools.lru_cache(maxsize=None)
def dp_accounting_epsilon(q: float, sigma: float, steps: int, grid: float = 1e-4) -> float:
    from dp_accounting import dp_event
    from dp_accounting.pld import pld_privacy_accountant
    acc = pld_privacy_accountant.PLDAccountant(value_discretization_interval=grid)
    acc.compose(dp_event.SelfComposedDpEvent(
        dp_event.PoissonSampledDpEvent(q, dp_event.GaussianDpEvent(sigma)), steps))
    return float(acc.get_epsilon(DELTA))


@functools.lru_cache(maxsize=None)
def prv_epsilon(q: float, sigma: float, steps: int) -> tuple[float, float, float]:
    from prv_accountant import PoissonSubsampledGaussianMechanism, PRVAccountant
    acc = PRVAccountant(
        prvs=[PoissonSubsampledGaussianMechanism(noise_multiplier=sigma, sampling_probability=q)],
        max_self_compositions=[steps], eps_error=0.01, delta_error=1e-10)
    lo, est, hi = acc.compute_epsilon(delta=DELTA, num_self_compositions=[steps])
    return float(lo), float(est), float(hi)


@pytest.mark.parametrize("name", list(WORKLOADS))
def test_agrees_with_dp_accounting(name):
    pytest.importorskip("dp_accounting")
    q, sigma, steps = WORKLOADS[name]
    ref = dp_accounting_epsilon(q, sigma, steps)
    lo, hi = ours(q, sigma, steps)
    assert 0 < lo <= hi
    # the certified interval holds a value within 0.1% of theirs
    assert lo <= ref * (1 + 1e-3) and hi >= ref * (1 - 1e-3)
    # theirs is a pessimistic estimate, so it cannot be below our certified lower
    assert lo <= ref
    assert abs(hi / ref - 1) <= 1e-3
    assert (hi - lo) / hi <= 5e-3
    if name == "dpsgd-mnist":
        assert ref == pytest.approx(DPSGD_EPSILON, abs=1e-3)
        assert hi == pytest.approx(DPSGD_EPSILON, abs=1e-3)


@pytest.mark.parametrize("name", list(WORKLOADS))
def test_overlaps_prv_accountant(name):
    pytest.importorskip("prv_accountant")
    q, sigma, steps = WORKLOADS[name]
    p_lo, p_est, p_hi = prv_epsilon(q, sigma, steps)
    lo, hi = ours(q, sigma, steps)
    assert p_lo <= p_est <= p_hi
    assert max(lo, p_lo) <= min(hi, p_hi), ((lo, hi), (p_lo, p_hi))
    # both estimates are within their stated errors of the truth (PRV: eps_error 0.01)
    assert abs(p_est - hi) <= 0.01 + (hi - lo)


@pytest.mark.parametrize("q, z", [(0.1, 0.8), (0.3, 1.5), (0.01, 1.0)])
def test_subsampled_gaussian_rdp_against_dp_accounting(q, z):
    """Integer orders: both exact, so equal. Fractional orders: dp_accounting sums the
    absolute values of the signed series (REFERENCE §2), an over-estimate or +∞; ours is
    exact, so never above theirs."""
    pytest.importorskip("dp_accounting")
    from dp_accounting.rdp import rdp_privacy_accountant as r
    rdp = ac.mechanism("subsampled_gaussian", q=q, sigma=z).curve(ac.RDP)
    ints = [2.0, 3.0, 8.0, 32.0]
    theirs = [r._compute_rdp_poisson_subsampled_gaussian(q, z, [a])[0] for a in ints]
    assert rdp.rdp(ints, "forward") == pytest.approx(theirs, rel=1e-9)
    frac = [1.5, 3.7, 10.5]
    theirs = [r._compute_rdp_poisson_subsampled_gaussian(q, z, [a])[0] for a in frac]
    mine = rdp.rdp(frac, "forward")
    assert all(m <= t * (1 + 1e-12) for m, t in zip(mine, theirs))


@pytest.mark.parametrize("gamma, z", [(0.01, 1.0), (0.001, 0.8), (0.1, 2.0)])
def test_without_replacement_rdp_is_tighter_than_dp_accounting(gamma, z):
    """Sampling without replacement, replace-one, Gaussian with σ in units of the
    replace-one sensitivity: dp_accounting uses the general bound of Wang, Balle,
    Kasiviswanathan 2019 (Thm 27); ours comes from the dominating pair. Both are
    upper bounds; ours is measured 0.42–1.00 of theirs (α = 2…64)."""
    pytest.importorskip("dp_accounting")
    from dp_accounting.rdp import rdp_privacy_accountant as r
    from accounting_mechanisms.subsampling import SampledWithoutReplacement
    base = ac.mechanism("gaussian", sigma=z, neighbouring="replace_one")
    n = 100000
    mech = SampledWithoutReplacement(base, round(gamma * n), n)
    alphas = [2.0, 3.0, 8.0, 16.0, 64.0]
    mine = mech.curve(ac.RDP).rdp(alphas)
    theirs = [r._compute_rdp_sample_wor_gaussian_scalar(gamma, z, a) for a in alphas]
    assert all(m <= t * (1 + 1e-9) for m, t in zip(mine, theirs))
    assert mine[0] < 0.8 * theirs[0]


#: DP-SGD configurations for the RDP accountant comparison, with δ = 1e-5
RDP_WORKLOADS = [(256 / 60000, 1.1, 14062), (0.01, 0.8, 1000), (0.1, 2.0, 100),
                 (0.01, 1.0, 10000), (0.001, 5.0, 1000)]


@pytest.mark.parametrize("q, sigma, steps", RDP_WORKLOADS)
def test_rdp_accountant_epsilon_not_above_dp_accounting(q, sigma, steps):
    """ε at δ = 1e-5 by our RDP accountant — a certified Rényi curve (exact integer
    orders, a fractional series with a proven remainder) minimised over continuous α —
    is never above dp_accounting's RdpAccountant (its fixed orders, an uncertified
    fractional series), and close to it (same conversion, Canonne, Kamath, Steinke
    2020, Prop. 12)."""
    pytest.importorskip("dp_accounting")
    import dp_accounting
    from dp_accounting import rdp
    acc = rdp.RdpAccountant()
    acc.compose(dp_accounting.SelfComposedDpEvent(
        dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(sigma)), steps))
    theirs = float(acc.get_epsilon(DELTA))
    mine_acc = ac.Accountant().compose(ac.mechanism("subsampled_gaussian", q=q, sigma=sigma),
                                       steps)
    mine = float(mine_acc.under("rdp").epsilon(DELTA))
    assert mine <= theirs
    assert mine >= 0.8 * theirs
    assert mine_acc.curve(ac.RDP).provenance.exactness is ac.Exactness.UPPER

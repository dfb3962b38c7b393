"""The calibration's bracket search (``analysis.calibration._bracket``):

* a step refused for its grid size (``GridSizeError``) is not the end: the search
  goes halfway (in log x) back towards the last value it evaluated and finds the
  bracket where grids fit (``calibrate_risk`` of 100 subsampled Gaussians, q = 0.01,
  TPR 0.67 at FPR 0.1, stepped from σ = 0.239 to 0.052 and died on the grid; the
  answer is σ = 0.16670);
* a target that holds with no noise at all answers σ = 0 (it said "sigma must be in
  [0.01, 1e+08]" once the search stepped below the range, or "nothing to
  calibrate"), under every accountant and for risk targets too.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

import accounting as ac
from accounting import Ledger
from accounting.analysis.calibration import (MechanismFamily, calibrate, calibrate_risk,
                                             calibrate_workload)
from accounting.numerics.loss import GridSizeError


def _gaussian_behind_a_wall(wall: float):
    """One Gaussian use of σ = x, refused like a grid too large below ``wall``."""
    def family(x: float) -> Ledger:
        if x < wall:
            raise GridSizeError(f"the composition at x = {x:g} needs too many grid points")
        return Ledger.of(ac.mechanism("gaussian", sigma=x), 1)
    return family


def _gaussian_sigma_for_tpr(tpr: float, fpr: float) -> float:
    """μ-GDP: TPR = Φ(Φ⁻¹(FPR) + μ), μ = 1/σ (Dong, Roth, Su 2019, arXiv:1905.02383)."""
    return 1.0 / (stats.norm.ppf(tpr) - stats.norm.ppf(fpr))


# ------------------------------------------------------------ grid refusals
#: TPR at FPR 0.1 of one Gaussian use with σ = 1.5 (μ = 2/3): the target below
FPR, SIGMA = 0.1, 1.5
TPR = float(stats.norm.cdf(stats.norm.ppf(FPR) + 1.0 / SIGMA))


def test_risk_search_steps_back_from_a_refused_grid():
    """From σ = 16 the search steps down 16, 14.5, 12.0, 8.2, 3.83, then 0.83, which is
    refused (wall at 1.2); halfway back (in log σ), 1.79, is evaluated, then 1.22
    (halfway to the refusal), which brackets the answer 1.5 of the closed form."""
    got = calibrate_risk(_gaussian_behind_a_wall(1.2), tpr=TPR, fpr=FPR, start=16.0)
    assert 1.2 <= got.bracket[0] < got.value
    assert got.value == pytest.approx(_gaussian_sigma_for_tpr(TPR, FPR), rel=1e-5)
    # the closed form at the answer and at the bracket's lower end
    closed = [float(stats.norm.cdf(stats.norm.ppf(FPR) + 1.0 / s)) for s in got.bracket]
    assert closed[1] <= TPR * (1 + 1e-6) and closed[0] > TPR * (1 - 1e-6)
    assert got.achieved <= TPR


def _gaussian_rdp_epsilon(sigma: float, delta: float) -> float:
    """min over α of the improved conversion of the Gaussian's D_α = α/(2σ²) (Mironov
    2017, Prop. 7; Canonne, Kamath, Steinke 2020, arXiv:2004.00010, Prop. 12)."""
    from scipy.optimize import minimize_scalar

    def eps(log_t: float) -> float:
        a = 1.0 + math.exp(log_t)
        return a / (2 * sigma ** 2) + math.log1p(-1 / a) - (math.log(delta) + math.log(a)) / (a - 1)
    return float(minimize_scalar(eps, bounds=(-10.0, 10.0), method="bounded",
                                 options={"xatol": 1e-10}).fun)


def test_epsilon_search_steps_back_from_a_refused_grid():
    """The same for ε(δ) under RDP (0.052 is refused, 0.112 is not): the answer meets
    the closed-form RDP bound and the bracket's lower end does not; the Gaussian's
    exact profile (Balle, Wang 2018, arXiv:1805.06530, Thm 8) at the answer is ≤ δ."""
    got = calibrate_workload(_gaussian_behind_a_wall(0.08), epsilon=30.0, delta=1e-5,
                             accountant="rdp", start=1.0)
    assert got.bracket[0] >= 0.08
    assert _gaussian_rdp_epsilon(got.value, 1e-5) <= 30.0 * (1 + 1e-9)
    assert _gaussian_rdp_epsilon(got.bracket[0], 1e-5) > 30.0
    sigma = got.value
    exact = (stats.norm.cdf(-30.0 * sigma + 0.5 / sigma)
             - math.exp(30.0) * stats.norm.cdf(-30.0 * sigma - 0.5 / sigma))
    assert exact <= 1e-5


def test_a_wall_above_the_answer_is_reported_as_a_grid_refusal():
    with pytest.raises(GridSizeError, match=r"meets the target.*was refused") as info:
        calibrate_risk(_gaussian_behind_a_wall(1.6), tpr=TPR, fpr=FPR, start=16.0)
    # it searched right up to the wall: the last feasible value is within 1e-5 of it
    found = float(str(info.value).split("x = ")[1].split(" ")[0])
    assert 1.6 <= found <= 1.6 * (1 + 1e-5)
    assert isinstance(info.value, ValueError)


@pytest.mark.slow
def test_risk_calibration_of_the_refused_workload():
    """The workload of the report: 100 × subsampled Gaussian (q = 0.01), TPR ≤ 0.67 at
    FPR 0.1. Checked at the answer and just below it by dp_accounting's pessimistic
    PLD (grid 1e-3, coarser than ours: 2.5e-6 above 0.67 at our answer), when
    installed. Measured: σ = 0.1667015 (bracket lo 0.16670144), 12 evaluations, ~60 s;
    dp_accounting's TPR 0.6700024 at it and 0.6700134 at 0.999 of it."""
    family = MechanismFamily("subsampled_gaussian", "sigma", count=100, params={"q": 0.01})
    got = calibrate_risk(family, tpr=0.67, fpr=0.1)
    assert 0.052 < got.bracket[0] < got.value < 0.2
    assert got.achieved <= 0.67
    pytest.importorskip("dp_accounting")
    at, below = (_dp_accounting_tpr(s) for s in (got.value, 0.999 * got.value))
    assert abs(at - 0.67) <= 1e-5 and below > 0.67 + 5e-6


def _dp_accounting_tpr(sigma: float) -> float:
    """max over both directions of the TPR at FPR 0.1 of dp_accounting's pessimistic
    PLD of the workload: the remove pair's Neyman–Pearson test, and the add pair's
    through the inverse of the same trade-off curve (T(Q, P) = T(P, Q)⁻¹)."""
    from scipy.optimize import brentq
    from dp_accounting.pld import privacy_loss_distribution as pld
    law = pld.from_gaussian_mechanism(sigma, sampling_prob=0.01, pessimistic_estimate=True,
                                      value_discretization_interval=1e-3)
    pmf = law.self_compose(100)._pmf_remove.to_dense_pmf()
    losses = (pmf._lower_loss + np.arange(pmf._probs.size)) * pmf._discretization
    p = pmf._probs
    q = p * np.exp(-losses)
    cum = np.cumsum(p)

    def tpr(alpha: float) -> float:
        # reject P where the loss is smallest (Q/P largest), randomised at the edge
        k = int(np.searchsorted(cum, alpha))
        return float(q[:k].sum() + (alpha - (cum[k - 1] if k else 0.0)) / p[k] * q[k])
    remove = tpr(0.1)
    add = 1.0 - brentq(lambda a: tpr(a) - 0.9, 1e-12, 0.9, xtol=1e-14)
    return max(remove, add)


# ---------------------------------------------------------------- no noise
@pytest.mark.parametrize("accountant", ["rdp", "zcdp", "pld"])
def test_a_target_met_with_no_noise_answers_zero(accountant):
    """q = 0: no record is ever used, ε = 0 with no noise at all."""
    got = calibrate("subsampled_gaussian", "sigma", epsilon=1.0, delta=1e-5, count=10,
                    params={"q": 0.0}, accountant=accountant)
    assert got.value == 0.0 and got.bracket == (0.0, 0.0)
    assert 0.0 <= got.epsilon <= 1.0
    assert got.uses[0][0].sigma == 0.0


def test_no_noise_is_exactly_zero_epsilon_when_delta_covers_the_rate():
    """Without noise, Poisson sampling at q is (0, q)-DP exactly: δ(ε) = q for ε ≥ 0
    (the non-private mechanism only on the sampled record). δ = 0.01 ≥ q = 0.001:
    σ = 0 with ε = 0 under the PLD (the search used to die discretising losses past
    ±700 at tiny σ)."""
    got = calibrate("subsampled_gaussian", "sigma", epsilon=1.0, delta=0.01,
                    params={"q": 0.001})
    assert got.value == 0.0 and got.epsilon == 0.0
    # and δ = 0.0005 < q is not met at σ = 0: a positive σ
    assert calibrate("subsampled_gaussian", "sigma", epsilon=1.0, delta=5e-4,
                     params={"q": 0.001}, accountant="rdp").value > 0.0


@pytest.mark.parametrize("accountant", ["rdp", "pld"])
def test_a_risk_target_met_with_no_noise_answers_zero(accountant):
    family = MechanismFamily("subsampled_gaussian", "sigma", count=5, params={"q": 0.0})
    got = calibrate_risk(family, advantage=0.01, accountant=accountant)
    assert got.value == 0.0 and got.bracket == (0.0, 0.0) and got.achieved <= 0.01


def test_zero_is_only_answered_for_a_noise_parameter():
    """A callable family's x = 0 means nothing known: met everywhere is still refused."""
    always = MechanismFamily(lambda x: ac.mechanism("gaussian", sigma=max(x, 100.0)))
    with pytest.raises(ValueError, match="nothing to calibrate"):
        calibrate_workload(always, epsilon=1.0, delta=1e-5, accountant="rdp", start=200.0)


def _gaussian_sigma(mu_per_unit: float, count: int, eps: float, delta: float) -> float:
    """The exact σ with δ(ε) = δ for ``count`` Gaussians of sensitivity 1: μ = √count/σ
    (Dong–Roth–Su, arXiv:1905.02383, Cor. 3.3) and δ(ε) = Φ(−ε/μ + μ/2) −
    e^ε Φ(−ε/μ − μ/2) (Balle–Wang, arXiv:1805.06530, Thm 8), solved by Brent."""
    from scipy.optimize import brentq

    def excess(sigma: float) -> float:
        mu = mu_per_unit * math.sqrt(count) / sigma
        return float(stats.norm.cdf(-eps / mu + mu / 2)
                     - math.exp(eps) * stats.norm.cdf(-eps / mu - mu / 2)) - delta
    return float(brentq(excess, 0.05, 500.0, xtol=1e-15, rtol=1e-14))


@pytest.mark.parametrize("count, eps, delta", [(1, 1.0, 1e-5), (10, 2.0, 1e-6), (300, 0.5, 1e-9)])
def test_the_secant_closes_a_bracket_around_the_exact_root(count, eps, delta):
    """Gaussian compositions are answered exactly (μ-GDP), so the calibrated bracket
    must hold the closed-form σ, be no wider than rtol, and the log–log secant with its
    closing step takes four or five evaluations (Brent's method took six or seven)."""
    exact = _gaussian_sigma(1.0, count, eps, delta)
    for rtol in (1e-6, 1e-10):
        cal = calibrate("gaussian", "sigma", epsilon=eps, delta=delta, count=count, rtol=rtol)
        lo, hi = cal.bracket
        assert lo < exact * (1 + 1e-12) and exact < hi * (1 + 1e-12)
        assert hi / lo - 1 <= rtol
        assert cal.evaluations <= 5

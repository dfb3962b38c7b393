"""Privacy filters and the Rényi odometer (``accounting.adaptive``), tested by simulation.

An adaptive adversary picks each mechanism from the outputs it has seen; the filter
must never admit a sequence whose composed privacy (the library's own accountant on
the realised sequence) exceeds its budget, Monte Carlo estimates of the interaction's
δ(ε) must stay below the filter's guarantee, and the odometer must bound the realised
privacy loss at every step at once. Negative controls show each Monte Carlo check
fails for a filter or odometer that cheats.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import ndtr

import accounting
from accounting.adaptive import BudgetExhausted, GaussianFilter, RDPFilter, RDPOdometer
from accounting.adaptive.filters import rdp_budget_for


def gdp_delta(mu: float, eps: float) -> float:
    """δ(ε) of μ-GDP (Balle and Wang, arXiv:1805.06530, Thm 8), written out here."""
    return float(ndtr(-eps / mu + mu / 2) - np.exp(eps) * ndtr(-eps / mu - mu / 2))


def gaussian(sigma: float) -> accounting.Mechanism:
    return accounting.mechanism("gaussian", sigma=sigma)


# ------------------------------------------------------------------ RDP filter
def test_rdp_filter_on_a_fixed_sequence_admits_what_the_rdp_accountant_allows() -> None:
    sigma, eps, delta = 5.0, 2.0, 1e-5
    f = RDPFilter.for_target(eps, delta)
    (alpha,), (budget,) = f.orders, f.budget
    # closed form: n Gaussians cost n·α/(2σ²) at order α
    expected = int(np.floor(budget * 2 * sigma ** 2 / alpha * (1 + 1e-12)))
    n = 0
    while f.propose(gaussian(sigma)).admitted:
        n += 1
    assert n == expected
    assert budget == pytest.approx(float(rdp_budget_for(eps, delta, np.array([alpha]))[0]))
    assert float(f.epsilon(delta)) == pytest.approx(eps, rel=1e-12)
    # the non-adaptive accountant on the same fixed sequence: within the filter's ε,
    # and one more step would take its Rényi answer past ε (the filter is not wasteful)
    acct = accounting.Accountant().compose(gaussian(sigma), n)
    assert float(acct.epsilon(delta)) <= eps
    assert float(acct.under("rdp").epsilon(delta)) <= eps
    more = accounting.Accountant().compose(gaussian(sigma), n + 1).under("rdp")
    assert float(more.epsilon(delta)) > eps


def test_rdp_filter_refuses_then_stays_closed_and_admit_raises() -> None:
    f = RDPFilter(1.0, [2.0])            # D_2 of Gaussian(σ) is 1/σ²
    assert f.propose(gaussian(1.5)).admitted            # 0.444
    refused = f.propose(gaussian(1.0))                  # +1 > 1
    assert not refused.admitted and "budget exceeded" in refused.reason
    later = f.propose(gaussian(100.0))                  # cheap, but the filter is closed
    assert not later.admitted and "closed by the refusal at step 1" in later.reason
    with pytest.raises(BudgetExhausted) as info:
        f.admit(gaussian(100.0))
    assert info.value.decision.step == 3
    assert float(f.spent[0]) == pytest.approx(1 / 1.5 ** 2)
    assert f.admitted == 1 and [d.admitted for d in f.decisions] == [True, False, False, False]


def test_rdp_filter_keep_open_admits_a_cheaper_proposal_after_a_refusal() -> None:
    f = RDPFilter(1.0, [2.0], keep_open=True)
    assert f.propose(gaussian(1.5)).admitted
    assert not f.propose(gaussian(1.0)).admitted
    assert f.propose(gaussian(2.0)).admitted            # 0.444 + 0.25 ≤ 1
    assert float(f.spent[0]) <= 1.0


def test_rdp_filter_adaptive_adversary_never_exceeds_its_budget() -> None:
    """The adversary picks σ (and Gaussian or Laplace) from the last output; the
    admitted sequence, accounted non-adaptively by the library, stays within ε."""
    eps, delta = 1.5, 1e-5
    rng = np.random.default_rng(2026)
    for _ in range(4):
        f = RDPFilter.for_target(eps, delta, plan=gaussian(4.0))
        admitted: list[accounting.Mechanism] = []
        y, scale = 0.0, 6.0
        for _step in range(200):
            scale = 6.0 + 4.0 * min(abs(y) / scale, 2.0)      # noisier after a large output
            mech = (gaussian(scale) if y >= 0 else
                    accounting.mechanism("laplace", b=2.0 * scale))
            decision = f.propose(mech)
            if not decision.admitted:
                break
            admitted.append(mech)
            y = float(rng.normal(0.0, scale))
        assert admitted and f.closed
        assert np.all(f.spent <= f.budget * (1 + 1e-12))
        acct = accounting.Accountant()
        for m in admitted:
            acct.compose(m)
        assert float(acct.under("rdp").epsilon(delta)) <= eps * (1 + 1e-9)
        assert float(acct.epsilon(delta)) <= eps


def test_rdp_filter_guarantee_is_a_bound_over_the_tracked_orders() -> None:
    f = RDPFilter([0.5, 1.0], [2.0, 8.0])
    curve = f.guarantee()
    assert curve.provenance.exactness is accounting.Exactness.UPPER
    np.testing.assert_allclose(curve.renyi([1.5, 2.0, 5.0, 8.0]), [0.5, 0.5, 1.0, 1.0])
    assert np.isinf(float(curve.renyi(9.0)))
    # its (ε, δ) never below the filter's own, which minimises over the two orders
    assert float(curve.epsilon(1e-6)) >= float(f.epsilon(1e-6)) - 1e-9


@pytest.mark.parametrize("bad, error, words", [
    (dict(budget=0.0), ValueError, "budget"),
    (dict(budget=float("nan")), ValueError, "budget"),
    (dict(budget=[1.0, 2.0], orders=[2.0]), ValueError, "one per order"),
    (dict(budget=1.0, orders=[1.0]), ValueError, "orders"),
    (dict(budget=1.0, orders=[]), ValueError, "orders"),
    (dict(budget="1"), TypeError, "budget"),
    (dict(budget=1.0, keep_open="yes"), TypeError, "keep_open"),
])
def test_rdp_filter_bad_input(bad: dict, error: type, words: str) -> None:
    with pytest.raises(error, match=words):
        RDPFilter(**bad)


def test_rdp_filter_bad_target_and_proposal() -> None:
    with pytest.raises(ValueError, match="delta"):
        RDPFilter.for_target(1.0, 1.5)
    with pytest.raises(ValueError, match="epsilon"):
        RDPFilter.for_target(-1.0, 1e-5)
    with pytest.raises(ValueError, match="positive Rényi budget"):
        RDPFilter.for_target(1e-3, 1e-12, orders=[1.5, 2.0])
    with pytest.raises(TypeError, match="proposal"):
        RDPFilter(1.0).propose("gaussian")


# ------------------------------------------------------------- Gaussian filter
def run_gdp_interactions(mu: float, paths: int, seed: int, *, cheat: bool = False
                         ) -> np.ndarray:
    """The privacy loss L of ``paths`` adaptive interactions under P: each step's μ_t is
    chosen from the last output (larger after a positive one), each step admitted by a
    ``GaussianFilter(mu)``; ``cheat`` skips the filter for one more step past it."""
    rng = np.random.default_rng(seed)
    losses = np.zeros(paths)
    for i in range(paths):
        f = GaussianFilter(mu)
        y, total, extra = 0.0, 0.0, cheat
        for _ in range(50):
            mu_t = 0.7 if y > 0.5 else 0.25
            if not f.propose(mu_t).admitted:
                if not extra:
                    break
                extra = False      # the cheat: run it anyway, once
            y = mu_t + rng.standard_normal()     # an output of P = N(μ_t, 1)
            total += mu_t * y - mu_t ** 2 / 2    # its privacy loss log dP/dQ
        losses[i] = total
    return losses


def test_gaussian_filter_monte_carlo_delta_within_mu_gdp() -> None:
    """δ(ε) = E_P[(1 − e^{ε−L})₊] of the adaptive interaction, estimated with its
    standard error, stays within the μ-GDP profile; a filter that lets one step past
    the budget is caught by the same estimate."""
    mu, paths = 1.0, 3000
    eps = np.array([0.0, 0.5, 1.0])
    for cheat, should_hold in ((False, True), (True, False)):
        losses = run_gdp_interactions(mu, paths, seed=7, cheat=cheat)
        terms = np.maximum(0.0, 1.0 - np.exp(eps[:, None] - losses[None, :]))
        est, se = terms.mean(axis=1), terms.std(axis=1, ddof=1) / np.sqrt(paths)
        bound = np.array([gdp_delta(mu, e) for e in eps])
        if should_hold:
            assert np.all(est - 4 * se <= bound), (est, se, bound)
        else:
            assert np.any(est - 4 * se > bound), (est, se, bound)


def test_gaussian_filter_counts_mu_squared_and_reports_mu_gdp() -> None:
    f = GaussianFilter(1.0)
    assert [f.propose(gaussian(2.0)).admitted for _ in range(5)] == [True] * 4 + [False]
    assert f.spent == pytest.approx(1.0)
    assert f.remaining() == pytest.approx(0.0, abs=1e-7)
    g = f.guarantee()
    assert g.provenance.exactness is accounting.Exactness.UPPER
    for e in (0.0, 1.0, 3.0):
        assert float(g.delta(e)) == pytest.approx(gdp_delta(1.0, e), rel=1e-9)
    # on a fixed sequence the guarantee is the non-adaptive composition: 4 × μ = 1/2
    acct = accounting.Accountant().compose(gaussian(2.0), 4)
    assert float(acct.epsilon(1e-5)) <= float(f.epsilon(1e-5)) * (1 + 1e-3)
    assert float(acct.epsilon(1e-5)) == pytest.approx(float(f.epsilon(1e-5)), rel=1e-3)


def test_gaussian_filter_refuses_what_it_cannot_read_as_gdp() -> None:
    f = GaussianFilter(1.0)
    with pytest.raises(ValueError, match="not known to be μ-GDP"):
        f.propose(accounting.mechanism("laplace", b=1.0))
    with pytest.raises(ValueError, match="mu"):
        f.propose(-0.1)
    with pytest.raises(ValueError, match="mu"):
        GaussianFilter(0.0)
    with pytest.raises(TypeError, match="mu"):
        GaussianFilter("1")


# -------------------------------------------------------------------- odometer
MUS = (0.15, 0.4, 0.8)


def run_odometer_paths(paths: int, steps: int, delta: float, seed: int,
                       slack: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """(realised losses L_t, odometer ε_t) of adaptive Gaussian interactions under P,
    shape (paths, steps); ``slack=False`` is the cheat ε_t = min_α Σ ρ_t(α)."""
    rng = np.random.default_rng(seed)
    curves = {m: gaussian(1.0 / m).curve(accounting.RDP) for m in MUS}
    losses = np.zeros((paths, steps))
    bounds = np.zeros((paths, steps))
    for i in range(paths):
        odo = RDPOdometer(delta)
        y, total = 0.0, 0.0
        for t in range(steps):
            mu_t = MUS[2] if y > 1.0 else (MUS[1] if y > 0 else MUS[0])
            eps_t = odo.spend(curves[mu_t])
            y = mu_t + rng.standard_normal()
            total += mu_t * y - mu_t ** 2 / 2
            losses[i, t] = total
            bounds[i, t] = eps_t if slack else float(np.min(odo.spent))
    return losses, bounds


def test_odometer_bounds_the_realised_loss_at_every_step_at_once() -> None:
    delta, paths = 0.1, 1000
    for slack, should_hold in ((True, True), (False, False)):
        losses, bounds = run_odometer_paths(paths, 12, delta, seed=11, slack=slack)
        crossed = np.any(losses > bounds, axis=1)
        rate = crossed.mean()
        se = np.sqrt(max(rate * (1 - rate), 1e-12) / paths)
        if should_hold:
            assert rate - 3 * se <= delta, (rate, se)
        else:
            assert rate - 3 * se > delta, (rate, se)


def test_odometer_dominates_the_non_adaptive_accountant_on_the_realised_sequence() -> None:
    delta = 1e-5
    odo = RDPOdometer(delta)
    acct = accounting.Accountant()
    previous = 0.0
    for sigma in (3.0, 1.5, 4.0, 2.0, 2.0, 6.0):
        eps_t = odo.spend(gaussian(sigma))
        acct.compose(gaussian(sigma))
        assert eps_t >= float(acct.epsilon(delta))
        assert eps_t >= previous       # spending never lowers the reading
        previous = eps_t
    # closed form: Σρ(α) = α Σ 1/(2σ²), ε_t = min_α Σρ(α) + log(|Λ|/δ)/(α − 1)
    s = sum(1 / (2 * s_ ** 2) for s_ in (3.0, 1.5, 4.0, 2.0, 2.0, 6.0))
    a = odo.orders
    assert previous == pytest.approx(float(np.min(a * s + np.log(a.size / delta) / (a - 1))))
    assert odo.steps == 6 and len(odo.history) == 6


def test_odometer_bad_input() -> None:
    with pytest.raises(ValueError, match="delta"):
        RDPOdometer(0.0)
    with pytest.raises(ValueError, match="orders"):
        RDPOdometer(1e-5, orders=[0.5])
    with pytest.raises(TypeError, match="proposal"):
        RDPOdometer(1e-5).spend(3.0)


def test_rdp_filter_takes_an_accountant_as_one_step_and_refuses_uncertified_curves() -> None:
    f = RDPFilter(5.0, [2.0, 8.0])
    acct = accounting.Accountant().compose(gaussian(3.0), 3)      # D_α = 3α/18
    decision = f.propose(acct)
    assert decision.admitted
    np.testing.assert_allclose(decision.cost, [1 / 3, 4 / 3], rtol=1e-9)
    quadrature = accounting.mechanism("student_t", scale=2.0, nu=3.0)   # a numerical CGF
    with pytest.raises(ValueError, match="certified"):
        f.propose(quadrature)
    assert f.admitted == 1 and not f.closed


def test_a_budget_already_exceeded_is_refused_when_the_filter_is_built() -> None:
    with pytest.raises(ValueError, match="spent already exceeds the budget at order α = 2"):
        RDPFilter(1.0, [2.0], spent=gaussian(0.5))           # D_2 = 4 > 1
    f = RDPFilter(1.0, [2.0], spent=gaussian(2.0))            # 0.25 spent up front
    assert float(f.remaining()[0]) == pytest.approx(0.75)
    assert not f.propose(gaussian(1.0)).admitted              # 0.25 + 1 > 1
    with pytest.raises(ValueError, match="spent already exceeds"):
        GaussianFilter(1.0, spent=1.5)
    g = GaussianFilter(1.0, spent=gaussian(2.0))              # μ = 1/2 spent
    assert g.remaining() == pytest.approx(np.sqrt(0.75))


# ------------------------------------------------------------------ zCDP filter
def test_zcdp_filter_counts_rho_and_converts_over_every_order() -> None:
    from accounting.adaptive import ZCDPFilter
    sigma, rho = 4.0, 0.25                      # ρ_t = 1/(2σ²) = 1/32: eight fit
    f = ZCDPFilter(rho)
    n = 0
    while f.propose(gaussian(sigma)).admitted:
        n += 1
    assert n == 8 and f.closed and "Σ ρ_t against ρ" in f.decisions[-1].reason
    assert f.remaining() == pytest.approx(0.0, abs=1e-12)
    g = f.guarantee()
    assert g.provenance.exactness is accounting.Exactness.UPPER and g.rho() == pytest.approx(rho)
    # on the fixed sequence: the same as the non-adaptive zCDP answer, and above the PLD's
    acct = accounting.Accountant().compose(gaussian(sigma), n)
    assert float(f.epsilon(1e-5)) == pytest.approx(float(acct.under("zcdp").epsilon(1e-5)),
                                                   rel=1e-9)
    assert float(acct.epsilon(1e-5)) <= float(f.epsilon(1e-5))
    # a Rényi filter over one order admits no more than the zCDP filter here
    r = RDPFilter.for_target(float(f.epsilon(1e-5)), 1e-5, plan=gaussian(sigma))
    m = 0
    while r.propose(gaussian(sigma)).admitted:
        m += 1
    assert m <= n
    with pytest.raises(ValueError, match="rho"):
        ZCDPFilter(0.0)
    with pytest.raises(ValueError, match="spent already exceeds"):
        ZCDPFilter(0.1, spent=gaussian(1.0))          # ρ = 1/2


def test_rdp_filter_monte_carlo_delta_within_its_guarantee() -> None:
    """An adaptive Gaussian interaction under a Rényi filter for (ε, δ) = (1.5, 0.05):
    the estimated δ(ε) = E_P[(1 − e^{ε−L})₊] stays within δ, and is caught above it
    when the filter is ignored for a few steps past its budget."""
    eps, delta, paths = 1.5, 0.05, 2000
    mus = (0.2, 0.45)
    curves = {m: gaussian(1.0 / m).curve(accounting.RDP) for m in mus}
    rng = np.random.default_rng(3)
    template = RDPFilter.for_target(eps, delta, plan=curves[mus[0]])
    for cheat, should_hold in ((0, True), (6, False)):
        losses = np.zeros(paths)
        for i in range(paths):
            f = RDPFilter(template.budget, template.orders)
            y, total, extra = 0.0, 0.0, cheat
            for _ in range(200):
                mu_t = mus[1] if y > 0.3 else mus[0]
                if not f.propose(curves[mu_t]).admitted:
                    if extra == 0:
                        break
                    extra -= 1
                y = mu_t + rng.standard_normal()
                total += mu_t * y - mu_t ** 2 / 2
            losses[i] = total
        terms = np.maximum(0.0, 1.0 - np.exp(eps - losses))
        est, se = terms.mean(), terms.std(ddof=1) / np.sqrt(paths)
        print(f"cheat={cheat}: δ̂ = {est:.4f} ± {se:.4f} against δ = {delta}")
        if should_hold:
            assert est - 4 * se <= delta, (est, se)
        else:
            assert est - 4 * se > delta, (est, se)


@settings(max_examples=25, deadline=None)
@given(sigmas=st.lists(st.floats(0.5, 20.0), min_size=1, max_size=12),
       budget=st.floats(0.05, 5.0))
def test_rdp_filter_admits_exactly_the_prefixes_within_budget(sigmas: list[float],
                                                              budget: float) -> None:
    """Against the closed form D_α = α/(2σ²): a proposal is admitted iff the admitted
    total plus its cost stays within B at every order, and never afterwards once closed."""
    orders = np.array([2.0, 8.0])
    f = RDPFilter(budget, orders)
    total = np.zeros(2)
    closed = False
    for s in sigmas:
        cost = orders / (2 * s ** 2)
        fits = not closed and bool(np.all(total + cost <= budget * (1 + 1e-12)))
        assert f.propose(gaussian(s)).admitted is fits
        if fits:
            total = total + cost
        else:
            closed = True
        assert np.all(f.spent <= budget * (1 + 1e-12))
    np.testing.assert_allclose(f.spent, total, rtol=1e-12)


def test_rdp_filter_on_dp_sgd_steps() -> None:
    """Poisson-subsampled Gaussian steps (DP-SGD, q = 0.01, σ = 1): the filter admits
    ⌊B(α*)/D_α*⌋ of them, and the non-adaptive PLD of those is within ε."""
    step = accounting.mechanism("subsampled_gaussian", q=0.01, sigma=1.0)
    f = RDPFilter.for_target(2.0, 1e-5, plan=step)
    (alpha,), (budget,) = f.orders, f.budget
    curve = step.curve(accounting.RDP)          # built once: proposals may be curves
    per_step = float(curve.renyi(alpha))
    n = 0
    while f.propose(curve).admitted:
        n += 1
    assert n == int(np.floor(budget / per_step * (1 + 1e-12)))
    assert float(accounting.Accountant().compose(step, n).epsilon(1e-5)) <= 2.0

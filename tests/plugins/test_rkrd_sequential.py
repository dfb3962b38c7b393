"""The anytime-valid sequential audit (``accounting_rkrd.sequential``): the e-variables
against closed forms, the portfolio against the Kelly bet, the bin compression
against the direct fit, power and level on the half-noise experiment of
``benchmarks/audit_power.py`` (claim (1, 1e-3), Δ = 1, σ by the analytic Gaussian),
futility, the auditor method, its report and the command line."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy.stats import binom, norm

from accounting.cli.app import main
from accounting_rkrd import MechanismError, RKRDAuditor, SequentialReport, gaussian_sigma
from accounting_rkrd.sequential import (
    fit_bet,
    log_optimal_portfolio,
    price_relatives,
    sequential_test,
)

EPS, DELTA = 1.0, 1e-3
SIGMA = gaussian_sigma(EPS, DELTA)          # exactly (1, 1e-3)-DP at Δ = 1


def gaussian_draw(sigma: float):
    def draw(rng, k):
        return 1.0 + rng.normal(0.0, sigma, (k, 1)), rng.normal(0.0, sigma, (k, 1))
    return draw


def test_assets_mean_matches_the_closed_form_and_is_at_most_one_under_the_claim():
    rng = np.random.default_rng(0)
    n = 400_000
    x, y = 1.0 + rng.normal(0.0, SIGMA, n), rng.normal(0.0, SIGMA, n)
    taus = np.array([-2.0, 0.0, 0.5, 2.0, 4.0, 7.0])
    r = price_relatives(x, y, taus, EPS, DELTA)
    assert r.shape == (n, 24) and r.min() >= 0.0
    e = math.exp(EPS)
    p_hi, q_hi = norm.sf((taus - 1.0) / SIGMA), norm.sf(taus / SIGMA)
    gaps = np.concatenate([p_hi - e * q_hi, (1 - q_hi) - e * (1 - p_hi),
                           q_hi - e * p_hi, (1 - p_hi) - e * (1 - q_hi)]) - DELTA
    exact = 1.0 + gaps / (e + DELTA)
    se = r.std(axis=0) / math.sqrt(n)
    assert np.all(np.abs(r.mean(axis=0) - exact) < 5 * se + 1e-12)
    assert exact.max() <= 1.0 + 1e-12          # the claim holds: no asset gains on average
    # the tight set {x > τ*} of the Gaussian at ε = 1 has gap 0: the null's boundary
    tau_star = 0.5 + EPS * SIGMA ** 2
    p, q = norm.sf((tau_star - 1) / SIGMA), norm.sf(tau_star / SIGMA)
    assert p - e * q - DELTA == pytest.approx(0.0, abs=1e-9)


def test_portfolio_is_the_kelly_bet():
    # one asset paying 2 w.p. p, else 0: the log-optimal fraction is 2p − 1 (Kelly)
    p = 0.6
    assets = np.array([[2.0], [0.0]])
    c = log_optimal_portfolio(assets, weights=np.array([p, 1 - p]), iterations=2000)
    assert c[1] == pytest.approx(2 * p - 1, abs=1e-3) and c.sum() == pytest.approx(1.0)
    # counts are repeated rows
    rows = np.repeat(assets, [6, 4], axis=0)
    assert np.allclose(log_optimal_portfolio(rows, iterations=300),
                       log_optimal_portfolio(assets, np.array([6, 4]), iterations=300))


def test_bin_compression_is_the_same_fit():
    rng = np.random.default_rng(3)
    sx, sy = rng.normal(0.4, 1.0, 700), rng.normal(0.0, 1.0, 700)
    taus = np.quantile(np.concatenate([sx, sy]), np.linspace(0.05, 0.95, 9))
    direct = log_optimal_portfolio(price_relatives(sx, sy, taus, EPS, DELTA))
    assert np.allclose(fit_bet(sx, sy, taus, EPS, DELTA, None), direct, atol=1e-12)


def test_half_noise_is_rejected_with_a_median_under_1500_pairs():
    # true ε of σ/2 at δ = 1e-3 is 2.30 (benchmarks/audit_power.py); fixed-n uses 8000
    reps = [sequential_test(gaussian_draw(SIGMA / 2), epsilon=EPS, delta=DELTA, seed=s)
            for s in range(20)]
    drawn = np.array([r.n_drawn for r in reps])
    assert all(r.rejected and r.stopped == "violation" for r in reps)
    assert np.median(drawn) < 1500
    assert all(r.log_e_value >= math.log(20) for r in reps)
    assert all(r.n <= r.n_drawn <= r.max_n for r in reps)


def test_level_on_the_exactly_tight_gaussian_fast():
    reps = [sequential_test(gaussian_draw(SIGMA), epsilon=EPS, delta=DELTA, seed=s,
                            max_n=1000) for s in range(20)]
    rejected = sum(r.rejected for r in reps)
    assert binom.sf(rejected - 1, 20, 0.05) > 1e-3     # at most 4 of 20


@pytest.mark.slow
def test_level_over_200_honest_seeds_and_power_over_200():
    honest = [sequential_test(gaussian_draw(SIGMA), epsilon=EPS, delta=DELTA, seed=s,
                              max_n=5000).rejected for s in range(1000, 1200)]
    # Bin(200, 0.05): P(≥ 19) ≈ 0.006
    assert sum(honest) <= 18
    half = [sequential_test(gaussian_draw(SIGMA / 2), epsilon=EPS, delta=DELTA, seed=s)
            for s in range(2000, 2200)]
    assert np.mean([r.rejected for r in half]) >= 0.99
    assert np.median([r.n_drawn for r in half]) < 1500


def test_futility_stops_a_mechanism_far_more_private_than_claimed():
    rep = sequential_test(gaussian_draw(8 * SIGMA), epsilon=EPS, delta=DELTA, seed=1)
    assert rep.stopped == "futility" and not rep.rejected and rep.n < rep.max_n
    assert rep.detectable_epsilon is not None and rep.detectable_epsilon < EPS
    off = sequential_test(gaussian_draw(8 * SIGMA), epsilon=EPS, delta=DELTA, seed=1,
                          futility=False, max_n=1500)
    assert off.stopped == "budget" and off.n == 1500 and off.detectable_epsilon is None


def test_auditor_method_callable_samples_and_determinism():
    aud = RKRDAuditor()

    def fn(data, rng):
        return np.asarray(data, float) + rng.normal(0.0, SIGMA / 2, 1)
    one = aud.audit_sequential(fn, [1.0], [0.0], epsilon=EPS, delta=DELTA, seed=5)
    two = aud.audit_sequential(fn, [1.0], [0.0], epsilon=EPS, delta=DELTA, seed=5)
    assert one.rejected and one.to_dict()["pairs"] == two.to_dict()["pairs"]
    assert one.log_e_value == two.log_e_value
    rng = np.random.default_rng(0)
    x, y = gaussian_draw(SIGMA / 2)(rng, 3000)
    rep = aud.audit_sequential(samples=(x, y), epsilon=EPS, delta=DELTA, seed=0)
    assert rep.rejected and rep.n_drawn <= 3000 and rep.max_n == 3000
    short = aud.audit_sequential(samples=(x[:300], y[:300]), epsilon=EPS, delta=DELTA)
    assert short.max_n == 300 and short.n_drawn <= 300


def test_bad_input_and_user_errors():
    aud = RKRDAuditor()

    def fn(data, rng):
        return rng.normal(size=1)
    with pytest.raises(TypeError, match="unknown setting"):
        aud.audit_sequential(fn, 0, 1, epsilon=1.0, delta=1e-3, bandwidth=2.0)
    with pytest.raises(TypeError, match="either fn"):
        aud.audit_sequential(epsilon=1.0, delta=1e-3)
    with pytest.raises(ValueError, match="epsilon"):
        aud.audit_sequential(fn, 0, 1, epsilon=-1.0, delta=1e-3)
    with pytest.raises(ValueError, match="delta"):
        aud.audit_sequential(fn, 0, 1, epsilon=1.0, delta=1.5)
    with pytest.raises(ValueError, match="bet_fraction"):
        aud.audit_sequential(fn, 0, 1, epsilon=1.0, delta=1e-3, bet_fraction=0.0)
    with pytest.raises(ValueError, match="non-finite|NaN|finite"):
        aud.audit_sequential(samples=(np.full((50, 1), np.nan), np.zeros((50, 1))),
                             epsilon=1.0, delta=1e-3)

    def broken(data, rng):
        raise RuntimeError("boom")
    with pytest.raises(MechanismError, match="RuntimeError.*boom"):
        aud.audit_sequential(broken, 0, 1, epsilon=1.0, delta=1e-3)


def test_report_text_json_and_exact_round_trip():
    rep = sequential_test(gaussian_draw(SIGMA / 2), epsilon=EPS, delta=DELTA, seed=2)
    doc = json.loads(json.dumps(rep.to_dict()))
    assert doc["decision"] == "reject" and doc["stopped"] == "violation"
    assert doc["pairs"] == rep.n and doc["not_rejected_is_not_a_certificate"]
    assert "2509.07055" in doc["method"] and "REJECT" in str(rep)
    back = SequentialReport.from_dict(json.loads(json.dumps(rep.to_dict(exact=True))))
    assert back.n == rep.n and back.log_e_value == rep.log_e_value
    assert back.rejected and back.path[-1][0] == rep.path[-1][0]
    honest = sequential_test(gaussian_draw(SIGMA), epsilon=EPS, delta=DELTA, seed=2,
                             max_n=400)
    assert "not a certificate" in honest.verdict() and honest.decision == "not rejected"


def test_cli_sequential(tmp_path, capsys):
    rng = np.random.default_rng(4)
    x, y = gaussian_draw(SIGMA / 2)(rng, 3000)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", y)
    code = main(["audit", "--sequential", "--x", str(tmp_path / "x.npy"), "--y",
                 str(tmp_path / "y.npy"), "--epsilon", "1", "--delta", "1e-3", "--seed", "1",
                 "--json", "--fail-on-reject"])
    out, _ = capsys.readouterr()
    doc = json.loads(out)
    assert doc["command"] == "audit" and doc["mode"] == "sequential"
    assert doc["rejected"] and code == 3
    for extra, msg in ((["--n", "10"], "cannot be combined"),
                       (["--sweep"], "cannot be combined")):
        code = main(["audit", "--sequential", "--x", str(tmp_path / "x.npy"), "--y",
                     str(tmp_path / "y.npy"), "--epsilon", "1", "--delta", "1e-3", *extra])
        _, err = capsys.readouterr()
        assert code == 2 and msg in err
    code = main(["audit", "--x", str(tmp_path / "x.npy"), "--y", str(tmp_path / "y.npy"),
                 "--epsilon", "1", "--delta", "1e-3", "--max-n", "10"])
    _, err = capsys.readouterr()
    assert code == 2 and "--max-n belongs" in err

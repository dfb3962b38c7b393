"""The black-box API of the RKRD auditor: registry entry, report, callable audits, plot."""

from __future__ import annotations

import json

import numpy as np
import pytest

import accounting
from accounting_rkrd import (RKRDAuditor, audit_callable, audit_samples,
                             dp_lambda, gaussian_outputs, gaussian_sigma, rkrd_sweep)
from accounting_rkrd.claims import EpsDeltaClaim
from accounting_rkrd.holdout import witness_test
from accounting_rkrd.lower_bound import split_samples
from accounting_rkrd.witnesses import FAMILIES, candidates


def _gauss(n=150, d=6, mu=3.0, seed=0):
    rng = np.random.default_rng(seed)
    return gaussian_outputs(n, 1.0, mu, d, rng), gaussian_outputs(n, 1.0, 0.0, d, rng)


def _strip(doc: dict) -> dict:
    return {k: v for k, v in doc.items() if k != "seconds"}


def test_registered_under_rkrd():
    reg = accounting.default_registry()
    assert isinstance(reg.auditors["rkrd"], RKRDAuditor)
    assert reg.auditor_sources["rkrd"] == "rkrd"


def test_report_numbers_are_those_of_the_parts():
    x, y = _gauss()
    rep = audit_samples(x, y, epsilon=1.0, delta=1e-3, seed=11, sweep=True)
    lam0 = dp_lambda(1.0, 1e-3)
    assert rep.lambda0 == lam0 and rep.rkrdp.alphas == (2.0, 6.0, 12.0)
    # statistics: D̂ at λ₀ on all samples, median bandwidth (computed on request)
    direct = rkrd_sweep(x, y, rep.rkrdp.alphas, [lam0]).values[:, 0]
    np.testing.assert_allclose(rep.statistics, direct, rtol=1e-12)
    # the vacuous threshold is skipped and hands the whole level to the witness test
    assert rep.threshold_vacuous and rep.level_threshold == 0.0
    assert rep.rkrdp.held_out_statistics is None and "skipped" in rep.rkrdp.status
    assert rep.level_witness == 0.05 == rep.witness.level
    # the witness test is the documented split-sample computation, reproduced by hand
    ss = np.random.SeedSequence(11).spawn(4)
    xa, xb, ya, yb = split_samples(x, y, seed=int(ss[1].generate_state(1)[0]))
    c = 0.5 * (xa.mean(axis=0) + ya.mean(axis=0))
    cands = candidates(xa - c, ya - c, families=FAMILIES, bandwidth=None, kernel_points=1500,
                       rng=np.random.default_rng(ss[3]))
    wt = witness_test(cands, xb - c, yb - c, claim=EpsDeltaClaim(1.0, 1e-3), level=0.05)
    assert rep.witness == wt
    assert rep.rejected == (wt.epsilon_lower_bound > 1.0) == rep.rejected_by_witness
    assert rep.rejected          # μ = 3 is far from (1, 1e-3)-DP
    assert rep.epsilon_lower_bound == wt.epsilon_lower_bound
    lb = rep.lower_bound            # the LowerBound record of the best threshold
    best = max(wt.rows, key=lambda r: r.epsilon_bound)
    assert lb.epsilon == wt.epsilon_lower_bound and lb.threshold == best.threshold
    assert (lb.fpr_upper, lb.fnr_upper) == (best.fpr_upper, best.fnr_upper)
    assert lb.m_p == len(xb) and lb.witness.startswith(wt.family)
    # the sweep holds the λ grid and λ₀
    assert rep.sweep.at(12.0, lam0) == pytest.approx(rep.statistics[2], rel=1e-12)


def test_report_json_and_table():
    x, y = _gauss(seed=1)
    rep = audit_samples(x, y, epsilon=1.0, delta=1e-3, seed=5, sweep=True)
    doc = json.loads(json.dumps(rep.to_dict()))
    assert doc["claim"] == {"kind": "epsilon_delta", "epsilon": 1.0, "delta": 1e-3}
    assert doc["decision"] == rep.decision and doc["seed"] == 5
    assert doc["rkrdp_test"]["threshold"] == ["inf"] * 3 and doc["rkrdp_test"]["vacuous"]
    assert doc["lower_bound"]["epsilon"] == rep.epsilon_lower_bound
    assert doc["witness_test"]["family"] == rep.witness.family
    assert doc["detectable_epsilon"] == rep.detectable_epsilon
    assert doc["not_rejected_is_not_a_certificate"] is True
    assert "not an estimate of ε" in doc["descriptive"]["note"]
    assert np.array(doc["sweep"]["values"]).shape == (3, 10)
    text = str(rep)
    assert text.splitlines()[0].startswith("RKRD audit of the claim (ε, δ) = (1, 0.001)")
    assert f"ε ≥ {rep.epsilon_lower_bound:.4f}" in text and "vacuous" in text
    assert "seed 5" in text and "witness: " in text and "detectable ε" in text
    assert "not an estimate of ε" in text


def test_seed_reproduces_the_report():
    x, y = _gauss(seed=2)
    a = audit_samples(x, y, epsilon=1.0, delta=1e-3, seed=3, sweep=False).to_dict()
    b = audit_samples(x, y, epsilon=1.0, delta=1e-3, seed=3, sweep=False).to_dict()
    assert _strip(a) == _strip(b)
    c = audit_samples(x, y, epsilon=1.0, delta=1e-3, sweep=False)
    assert isinstance(c.seed, int) and c.seed >= 0


def test_level_is_split_when_the_threshold_is_finite():
    """δ = 0.5, ε = 0: λ₀ = 0.5 and 100 held-out samples give a finite threshold, so
    the test gets half the level; equal distributions are not rejected."""
    x, y = _gauss(mu=0.0, seed=4)
    rep = audit_samples(x, y, epsilon=0.0, delta=0.5, alphas=(2.0,), seed=1, sweep=False)
    assert not rep.threshold_vacuous and rep.rkrdp.status == "run"
    assert rep.level_threshold == rep.level_witness == 0.025
    assert rep.rkrdp.thresholds[0] > rep.rkrdp.held_out_statistics[0] and not rep.rejected
    assert rep.sweep is None and rep.statistics is None
    off = audit_samples(x, y, epsilon=0.0, delta=0.5, alphas=(2.0,), seed=1, sweep=False,
                        rkrdp=False)
    assert off.level_witness == 0.05 and off.rkrdp.held_out_statistics is None


def test_audit_callable_equals_audit_of_its_draws():
    sigma = 1.0

    def mechanism(data, rng):
        return np.asarray(data, float) + rng.normal(0.0, sigma, size=3)

    d0, d1 = [2.0, 0.0, 0.0], [0.0, 0.0, 0.0]
    rep = audit_callable(mechanism, d0, d1, n=80, epsilon=2.0, delta=1e-2, seed=9,
                         sweep=False)
    rng = np.random.default_rng(np.random.SeedSequence(9).spawn(4)[0])
    x = np.stack([mechanism(d0, rng) for _ in range(80)])
    y = np.stack([mechanism(d1, rng) for _ in range(80)])
    again = audit_samples(x, y, epsilon=2.0, delta=1e-2, seed=9, sweep=False)
    assert _strip(rep.to_dict()) == _strip(again.to_dict())


def test_bootstrap_in_the_report_and_progress(capsys, monkeypatch):
    monkeypatch.setattr("accounting.progress._tqdm", lambda: None)     # plain progress lines
    x, y = _gauss(n=60, d=3, mu=2.0, seed=6)
    ref = accounting.mechanism("gaussian", sigma=1.0)
    rep = audit_samples(x, y, epsilon=1.0, delta=1e-3, seed=1, reference=ref,
                        shift=[2.0, 0.0, 0.0], n_boot=9, progress=True, sweep=False)
    assert rep.bootstrap is not None and 0.1 <= rep.bootstrap.p_value <= 1.0
    assert rep.bootstrap.alpha == 12.0 and rep.bootstrap.lam == rep.lambda0
    assert "rkrd: bootstrap: 9/9 done" in capsys.readouterr().err
    assert "parametric bootstrap" in str(rep) and rep.to_dict()["bootstrap"]["n_boot"] == 9


@pytest.mark.parametrize("kwargs,exc,match", [
    (dict(epsilon=-1.0, delta=0.1), ValueError, r"epsilon must be in \[0"),
    (dict(epsilon=1.0, delta=0.0), ValueError, r"delta must be in \(0, 1\)"),
    (dict(epsilon=1.0, delta=0.1, colour="red"), TypeError, "unknown audit setting"),
    (dict(epsilon=1.0, delta=0.1, alphas=(0.5,)), ValueError, r"alpha must be in \[1"),
    (dict(epsilon=1.0, delta=0.1, reference=accounting.mechanism("gaussian", sigma=1.0)),
     ValueError, "shift"),
    (dict(epsilon=1.0, delta=0.1, seed=-3), ValueError, "seed must be an integer >= 0"),
])
def test_audit_samples_bad_input(kwargs, exc, match):
    x, y = _gauss(n=20, d=2, seed=7)
    with pytest.raises(exc, match=match):
        audit_samples(x, y, **kwargs)


def test_audit_callable_bad_input():
    with pytest.raises(TypeError, match="fn must be callable"):
        audit_callable(3, 0, 1, n=10, epsilon=1.0, delta=0.1)
    with pytest.raises(ValueError, match=r"n must be an integer >= 4"):
        audit_callable(lambda d, r: [d], 0, 1, n=3, epsilon=1.0, delta=0.1)
    with pytest.raises(ValueError, match="non-finite output"):
        audit_callable(lambda d, r: [np.nan], 0, 1, n=10, epsilon=1.0, delta=0.1)
    with pytest.raises(ValueError, match="same length"):
        audit_callable(lambda d, r: np.zeros(1 + int(r.random() < 0.5)), 0, 1, n=40,
                       epsilon=1.0, delta=0.1)
    with pytest.raises(TypeError, match="vector of real numbers"):
        audit_callable(lambda d, r: "abc", 0, 1, n=10, epsilon=1.0, delta=0.1)


def test_plot_sweep(tmp_path):
    pytest.importorskip("matplotlib")
    import matplotlib
    matplotlib.use("Agg")
    from accounting_rkrd import plot_sweep

    sigma = gaussian_sigma(2.0, 0.2, 10.0)
    sweeps = []
    for seed in range(2):
        rng = np.random.default_rng(seed)
        x, y = gaussian_outputs(60, sigma, 10.0, rng=rng), gaussian_outputs(60, sigma, 0.0,
                                                                          rng=rng)
        sweeps.append(rkrd_sweep(x, y, [2.0, 12.0], [1e-3, 1e-2, 1e-1]))
    ax = plot_sweep(sweeps, epsilon=2.0, delta=0.2, claim=(1.0, 0.005))
    lines = ax.get_lines()
    assert len(lines) == 2 + 4
    np.testing.assert_allclose(lines[1].get_ydata(), (sweeps[0].values[1] + sweeps[1].values[1])
                               / 2)
    assert lines[3].get_xdata()[0] == pytest.approx(dp_lambda(2.0, 0.2))
    ax.figure.savefig(tmp_path / "f.png")
    assert (tmp_path / "f.png").stat().st_size > 1000
    with pytest.raises(ValueError, match="same alphas and lambdas"):
        plot_sweep([sweeps[0], rkrd_sweep(x, y, [2.0], [1e-3])])



def test_sweep_is_computed_on_request_or_automatically_for_small_n():
    x, y = _gauss(n=40, d=2, seed=8)
    assert audit_samples(x, y, epsilon=1.0, delta=1e-3, seed=1).sweep is None
    auto = audit_samples(x, y, epsilon=1.0, delta=1e-3, seed=1, sweep=None)
    assert auto.sweep is not None and len(auto.statistics) == 3
    from accounting_rkrd.auditor import AUTO_SWEEP_MAX
    assert AUTO_SWEEP_MAX == 1000


def test_progress_reports_every_stage(capsys, monkeypatch):
    monkeypatch.setattr("accounting.progress._tqdm", lambda: None)     # plain progress lines
    def mechanism(data, rng):
        return np.asarray(data, float) + rng.normal(size=2)

    audit_callable(mechanism, [1.0, 0.0], [0.0, 0.0], n=60, epsilon=1.0, delta=0.5,
                   alphas=(2.0,), seed=2, progress=True, sweep=True, rkrdp=True)
    err = capsys.readouterr().err
    for stage in ("sampling 60 outputs", "rkrd: sampling: 120/120 done", "witness selection",
                  "witness family threshold", "witness family kernel",
                  "witness family likelihood_ratio", "witness family logistic", "chose ",
                  "RKRDP test", "descriptive λ sweep", "done"):
        assert stage in err, stage

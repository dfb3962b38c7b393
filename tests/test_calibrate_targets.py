"""Calibration to risk targets, for one neighbouring direction, and over integers
(``accounting.analysis.calibration``), against closed forms of the Gaussian.

k uses of N(0, σ²) with sensitivity Δ are μ-GDP with μ = Δ√k/σ (Dong, Roth, Su,
arXiv:1905.02383, Cor. 3.3): TPR at FPR α is 1 − Φ(Φ⁻¹(1 − α) − μ) and the advantage
2Φ(μ/2) − 1, so a TPR target t gives μ = Φ⁻¹(t) + Φ⁻¹(1 − α) and an advantage target
a gives μ = 2Φ⁻¹((1 + a)/2); σ = Δ√k/μ.
"""

from __future__ import annotations

import math

import pytest
from scipy.special import ndtri

import accounting
from accounting import Accountant
from accounting.analysis.calibration import (MechanismFamily, calibrate, calibrate_count,
                                             calibrate_risk)

STEP = 1e-3


@pytest.mark.parametrize("tpr,fpr,k", [(0.5, 0.01, 4), (0.1, 0.001, 1), (0.9, 0.1, 16)])
def test_tpr_target_matches_the_closed_form(tpr, fpr, k):
    mu = ndtri(tpr) + ndtri(1 - fpr)
    exact = math.sqrt(k) / mu
    got = calibrate_risk(MechanismFamily("gaussian", "sigma", count=k), tpr=tpr, fpr=fpr,
                         step=STEP)
    assert got.figure == "tpr" and got.achieved <= tpr
    # sound: never less noise than the exact answer; tight to the grid
    assert exact * (1 - 1e-6) <= got.value <= exact * (1 + 1e-3)
    assert got.bracket[0] < got.value


@pytest.mark.parametrize("adv", [0.05, 0.2, 0.6])
def test_advantage_target_matches_the_closed_form(adv):
    mu = 2 * ndtri((1 + adv) / 2)
    exact = 2.0 / mu           # k = 4
    got = calibrate_risk(MechanismFamily("gaussian", "sigma", count=4), advantage=adv,
                         step=STEP)
    assert got.achieved <= adv
    assert exact * (1 - 1e-6) <= got.value <= exact * (1 + 1e-3)


def test_integer_noise_scale_is_the_smallest_integer():
    """σ over the integers: the answer meets the target and one less does not."""
    fam = MechanismFamily("gaussian", "sigma", count=4)
    cont = calibrate_risk(fam, advantage=0.2, step=STEP)
    got = calibrate_risk(fam, advantage=0.2, step=STEP, integer=True)
    assert got.integer and got.value == math.ceil(cont.value) == 4
    assert got.bracket == (3.0, 4.0)
    # the same for an (ε, δ) target under RDP: check both integers directly
    c = calibrate("gaussian", "sigma", epsilon=0.3, delta=1e-5, count=4, integer=True,
                  accountant="rdp")
    assert c.value == int(c.value) and c.bracket == (c.value - 1, c.value)

    def eps(sigma):
        return float(Accountant().compose(accounting.mechanism("gaussian", sigma=sigma), 4)
                     .under("rdp").epsilon(1e-5))
    assert eps(c.value) <= 0.3 < eps(c.value - 1)


def test_one_direction_is_never_above_the_max():
    """Calibrating one direction needs at most the noise of the worse direction; for a
    subsampled Gaussian (asymmetric directions) strictly less than the max needs
    for the direction that is not the worst."""
    kw = dict(epsilon=1.0, delta=1e-5, count=50, params={"q": 0.05}, accountant="rdp")
    both = calibrate("subsampled_gaussian", "sigma", **kw)
    fwd = calibrate("subsampled_gaussian", "sigma", direction="forward", **kw)
    bwd = calibrate("subsampled_gaussian", "sigma", direction="backward", **kw)
    assert max(fwd.value, bwd.value) == pytest.approx(both.value, rel=1e-5)
    assert min(fwd.value, bwd.value) < both.value * (1 - 1e-4)


def test_count_is_the_largest_meeting_the_target():
    mech = accounting.mechanism("gaussian", sigma=20.0)
    k = calibrate_count(mech, epsilon=1.0, delta=1e-5, accountant="rdp")

    def eps(n):
        return float(Accountant().compose(mech, n).under("rdp").epsilon(1e-5))
    assert k > 1 and eps(k) <= 1.0 < eps(k + 1)
    assert calibrate_count(accounting.mechanism("gaussian", sigma=0.5), epsilon=1.0,
                           delta=1e-5, accountant="rdp") == 0


@pytest.mark.parametrize("kw,match", [
    (dict(tpr=0.5), "fpr"),
    (dict(tpr=0.5, fpr=0.01, advantage=0.1), "exactly one"),
    (dict(), "exactly one"),
    (dict(tpr=0.005, fpr=0.01), "tpr"),
    (dict(advantage=1.5), "advantage"),
    (dict(advantage=0.1, fpr=0.1), "fpr"),
])
def test_bad_risk_targets(kw, match):
    with pytest.raises(ValueError, match=match):
        calibrate_risk(MechanismFamily("gaussian", "sigma"), **kw)


def test_bad_flags():
    with pytest.raises(TypeError, match="integer"):
        calibrate("gaussian", "sigma", epsilon=1.0, delta=1e-5, integer="yes")
    with pytest.raises(ValueError, match="direction"):
        calibrate("gaussian", "sigma", epsilon=1.0, delta=1e-5, direction="sideways")
    with pytest.raises(TypeError, match="mechanism"):
        calibrate_count("gaussian", epsilon=1.0, delta=1e-5)


# ------------------------------------------------------------------ command line
def _cli(capsys, *argv):
    from accounting.cli import main
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_tpr_target(capsys):
    import json
    code, out, err = _cli(capsys, "calibrate", "gaussian", "--solve", "sigma", "--compose", "4",
                          "--tpr", "0.5", "--fpr", "0.01", "--step", str(STEP), "--json")
    # (stderr may carry main's DeprecationWarning for parallel.configs' import of Term)
    assert code == 0 and "error" not in err
    res = json.loads(out)
    exact = 2.0 / (ndtri(0.5) + ndtri(0.99))
    assert exact * (1 - 1e-6) <= res["value"] <= exact * (1 + 1e-3)
    assert res["achieved"] <= 0.5 and "upper bound" in res["bound"]
    assert res["target"] == {"figure": "tpr", "value": 0.5, "fpr": 0.01}


def test_cli_integer_and_direction(capsys):
    code, out, err = _cli(capsys, "calibrate", "gaussian", "--solve", "sigma", "--compose", "4",
                          "--advantage", "0.2", "--integer", "--step", str(STEP))
    assert code == 0 and "sigma = 4 (the smallest integer meeting the target)" in out
    code, out, _ = _cli(capsys, "calibrate", "gaussian", "--solve", "sigma", "--epsilon", "1",
                        "--delta", "1e-5", "--accountant", "rdp", "--direction", "backward")
    lib = calibrate("gaussian", "sigma", epsilon=1.0, delta=1e-5, accountant="rdp",
                    direction="backward")
    assert code == 0 and "the backward direction only" in out
    assert f"sigma = {lib.value:.10g}" in out


@pytest.mark.parametrize("argv,needle", [
    (["--tpr", "0.5"], "fpr"),
    (["--tpr", "0.5", "--fpr", "0.1", "--epsilon", "1", "--delta", "1e-5"], "not both"),
    (["--advantage", "2"], "advantage"),
])
def test_cli_bad_risk_targets(capsys, argv, needle):
    code, out, err = _cli(capsys, "calibrate", "gaussian", "--solve", "sigma", *argv)
    assert code == 2 and out == "" and err.count("\n") == 1 and needle in err

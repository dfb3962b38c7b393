"""``accounting risk`` and ``--plot`` on the query commands (in process,
``accounting.cli.main``): numbers against closed forms of the Gaussian, each figure's
direction stated, bad input as one line with exit status 2.

For N(μ, 1) vs N(0, 1) (μ-GDP): TPR at FPR α is Φ(μ − Φ⁻¹(1 − α)), the advantage
(total variation) is 2Φ(μ/2) − 1, and the Bayes risk at prior π is
π·(1 − δ(log((1 − π)/π))) with δ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2)
(Dong, Roth, Su, arXiv:1905.02383; Balle, Wang, arXiv:1805.06530, Thm 8).
"""

from __future__ import annotations

import importlib.util
import json
import math

import pytest
from scipy.special import ndtr, ndtri

from accounting.cli import main

STEP = "1e-3"


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _gauss_delta(mu, eps):
    return ndtr(-eps / mu + mu / 2) - math.exp(eps) * ndtr(-eps / mu - mu / 2)


@pytest.fixture(scope="module")
def gauss_json():
    """σ = 2 composed 4 times: μ = √4/2 = 1."""
    import io
    from contextlib import redirect_stdout
    buf = io.StringIO()
    with redirect_stdout(buf):
        code = main(["risk", "gaussian", "--sigma", "2", "--compose", "4", "--fpr", "0.001",
                     "0.01", "0.1", "--prior", "0.3", "--step", STEP, "--json"])
    assert code == 0
    return json.loads(buf.getvalue())


def test_tpr_is_a_sound_upper_bound_close_to_the_closed_form(gauss_json):
    mu = 1.0
    got = gauss_json["tpr_at_fpr"]
    assert "upper bound" in got["bound"]
    for a, t, lo in zip(got["fpr"], got["tpr"], got["tpr_lower"]):
        truth = float(ndtr(mu - ndtri(1 - a)))
        assert truth - 1e-12 <= t <= truth + 2e-3
        assert lo <= truth + 1e-12


def test_advantage_and_bayes_risk(gauss_json):
    mu, prior = 1.0, 0.3
    adv = gauss_json["advantage"]
    truth = 2 * ndtr(mu / 2) - 1
    assert "upper bound" in adv["bound"]
    assert truth - 1e-12 <= adv["value"] <= truth + 1e-3
    assert adv["lower"] <= truth + 1e-12
    risk = gauss_json["bayes_risk"]
    want = prior * (1 - _gauss_delta(mu, math.log((1 - prior) / prior)))
    assert "lower bound" in risk["bound"] and risk["prior"] == prior
    assert want - 1e-3 <= risk["value"] <= want + 1e-12


def test_gdp_summary_and_clt_are_labelled(gauss_json):
    assert gauss_json["gdp"]["mu"] == pytest.approx(1.0, abs=2e-3)
    assert "not a bound" in gauss_json["gdp"]["note"]
    clt = gauss_json["clt"]
    assert clt["mu"] == pytest.approx(1.0, rel=1e-3)   # the CLT is exact for the Gaussian
    assert "not a bound" in clt["note"]
    for a, t in zip(gauss_json["fpr"] if "fpr" in gauss_json else gauss_json["tpr_at_fpr"]["fpr"],
                    clt["tpr"]):
        assert t == pytest.approx(float(ndtr(clt["mu"] - ndtri(1 - a))), rel=1e-12)
    assert gauss_json["direction"].startswith("max over both")


def test_text_states_every_direction(capsys):
    code, out, err = run(capsys, "risk", "laplace", "--b", "1", "--fpr", "0.05",
                         "--step", STEP)
    assert code == 0 and err == ""
    assert "upper bound on every attack's TPR" in out
    assert "advantage (TPR − FPR) — upper bound" in out
    assert "lower bound on every attack's error" in out
    assert "not a bound" in out and "CLT approximation" in out
    # Laplace e = 1: the exact TPR at FPR α ≤ e^{-1}/2 is e·α (Neyman–Pearson on the
    # atom-free likelihood ratio: FPR Q(X>t) = e^{-t}/2, TPR P(X>t) = e^{-(t-1)}/2)
    line = next(l for l in out.splitlines() if "FPR 0.05:" in l)
    tpr = float(line.split("≤")[1].split()[0])
    assert math.e * 0.05 * (1 - 1e-7) <= tpr <= math.e * 0.05 + 2e-3   # 8 digits printed


@pytest.mark.parametrize("argv,needle", [
    (["risk", "gaussian", "--sigma", "1", "--fpr", "1.5"], "fpr"),
    (["risk", "gaussian", "--sigma", "1", "--prior", "0"], "prior"),
    (["risk", "gaussian", "--sigma", "1", "--prior", "nan"], "prior"),
    (["risk"], "MECHANISM"),
    (["risk", "gaussian"], "sigma"),
    (["risk", "gaussian", "--sigma", "1", "--gdp-alpha", "1"], "gdp-alpha"),
    (["risk", "gaussian", "--sigma", "1", "--plot", "/nonexistent/dir/x.png"], "--plot"),
])
def test_bad_input_is_one_line_exit_2(capsys, argv, needle):
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("accounting: error:") and needle in err


def test_help_lists_the_options(capsys):
    code, out, _ = run(capsys, "risk", "gaussian", "--help")
    assert code == 0
    for opt in ("--fpr", "--prior", "--plot", "--sigma", "--compose"):
        assert opt in out


def test_plot_without_matplotlib_is_one_line(capsys, monkeypatch, tmp_path):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "matplotlib" else real(name, *a))
    for argv in (["risk", "gaussian", "--sigma", "1"],
                 ["epsilon", "gaussian", "--sigma", "1", "--delta", "1e-5"]):
        code, out, err = run(capsys, *argv, "--plot", str(tmp_path / "x.png"))
        assert code == 2 and out == ""
        assert err.count("\n") == 1 and "matplotlib" in err
    assert not (tmp_path / "x.png").exists()


@pytest.mark.parametrize("argv", [
    ["risk", "gaussian", "--sigma", "2", "--compose", "4", "--step", STEP],
    ["epsilon", "gaussian", "--sigma", "2", "--compose", "4", "--delta", "1e-5", "--step", STEP],
    ["delta", "laplace", "--b", "2", "--epsilon", "1", "--accountant", "rdp"],
])
def test_plot_writes_an_image(capsys, tmp_path, argv):
    pytest.importorskip("matplotlib")
    path = tmp_path / "out.png"
    code, out, err = run(capsys, *argv, "--plot", str(path))
    assert code == 0 and err == ""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000


def test_plot_with_unknown_suffix_is_a_usage_error(capsys, tmp_path):
    pytest.importorskip("matplotlib")
    code, _, err = run(capsys, "delta", "laplace", "--b", "2", "--epsilon", "1",
                       "--accountant", "rdp", "--plot", str(tmp_path / "out.nosuchformat"))
    assert code == 2 and "--plot" in err and err.count("\n") == 1

"""The command line (``accounting.cli.app``) and workload files (``accounting.workload``).

Most tests call ``main([...])`` in-process; a few run ``python -m accounting.cli`` in
a subprocess to check the real exit status and stderr. Every numerical check uses
the RDP accountant (closed forms) or the PLD with a coarse grid, to stay fast.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import attrs
import numpy as np
import pytest
from scipy.optimize import minimize_scalar

import accounting
from accounting import Accountant, hookimpl, make_registry
from accounting.cli import app as cli
from accounting.cli.app import main
from accounting.cli.run import _job_workload
from accounting.registry.registry import default_registry
from accounting.workload import WorkloadError, load_workload, parse_workload

FLOAT = r"[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|inf)"


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def row_value(out: str, accountant: str) -> float:
    """The answer column of the first table row of ``accountant``."""
    m = re.search(rf"^\s+{accountant}\s+{FLOAT}\s+({FLOAT})", out, re.M)
    assert m, out
    return float(m.group(1))


def gaussian_rdp_epsilon(mu: float, delta: float) -> float:
    """ε from D_α = αμ²/2 by the improved conversion (Canonne, Kamath, Steinke 2020,
    Prop. 12), minimised over continuous α independently of the library."""
    def f(log_t):
        a = 1.0 + np.exp(log_t)
        return a * mu ** 2 / 2 + np.log1p(-1 / a) - (np.log(delta) + np.log(a)) / (a - 1)
    res = minimize_scalar(f, bounds=(-10, 10), method="bounded", options={"xatol": 1e-12})
    return float(res.fun)


# ------------------------------------------------------------------ listing
def test_mechanisms_lists_builtins(capsys):
    code, out, err = run(capsys, "mechanisms")
    assert code == 0 and err == ""
    for name in ("gaussian", "laplace", "randomized_response", "subsampled_gaussian"):
        assert re.search(rf"^  {name}\b", out, re.M), name
    assert "--sigma FLOAT (required)" in out
    assert "rdp→profile (improved conversion)" in out and "upper bound" in out
    assert "plugin errors (0): none" in out


def test_mechanisms_json(capsys):
    code, out, _ = run(capsys, "mechanisms", "--json")
    assert code == 0
    data = json.loads(out)
    names = {m["name"] for m in data["mechanisms"]}
    assert {"gaussian", "laplace", "randomized_response", "subsampled_gaussian"} <= names
    gauss = next(m for m in data["mechanisms"] if m["name"] == "gaussian")
    params = {p["name"]: p for p in gauss["parameters"]}
    assert params["sigma"]["required"] and params["sensitivity"]["default"] == 1.0
    assert params["neighbouring"]["default"] == "add_remove"
    assert gauss["plugin"] == "gaussian" and gauss["doc"]
    labels = {c["name"]: c["exactness"] for c in data["converters"]}
    assert labels["pld→profile"] == "exact"
    assert labels["rdp→zcdp (envelope)"] == "upper bound"
    assert data["errors"] == []


def test_mechanisms_shows_plugin_errors(capsys, monkeypatch):
    class Broken:
        @hookimpl
        def accounting_register_mechanisms(self, register):
            raise RuntimeError("boom")

    reg = make_registry()
    with pytest.warns(RuntimeWarning):
        reg.register_plugin(Broken(), "broken_plugin", strict=False)
    monkeypatch.setattr(cli, "default_registry", lambda: reg)
    code, out, _ = run(capsys, "mechanisms")
    assert code == 0
    assert "plugin errors (1):" in out and "broken_plugin" in out and "boom" in out
    code, out, _ = run(capsys, "mechanisms", "--json")
    assert any("broken_plugin" in e for e in json.loads(out)["errors"])


# ----------------------------------------------------------------- queries
def test_epsilon_gaussian_rdp_matches_library_and_closed_form(capsys):
    code, out, err = run(capsys, "epsilon", "gaussian", "--sigma", "1.0", "--compose", "100",
                         "--delta", "1e-5", "--accountant", "rdp")
    assert code == 0 and err == ""
    printed = row_value(out, "rdp")
    acct = Accountant().compose(accounting.mechanism("gaussian", sigma=1.0), count=100)
    library = float(acct.under("rdp").epsilon(1e-5))
    assert printed == pytest.approx(library, rel=1e-7)
    # 100 Gaussians of μ = 1: D_α = 100·α/2
    assert library == pytest.approx(gaussian_rdp_epsilon(10.0, 1e-5), rel=1e-8)
    assert "provenance:" in out and "improved conversion" in out


def test_epsilon_json_parses(capsys):
    code, out, _ = run(capsys, "epsilon", "gaussian", "--sigma", "2", "--compose", "4",
                       "--delta", "1e-5", "1e-6", "--accountant", "all", "--step", "1e-3",
                       "--json")
    assert code == 0
    data = json.loads(out)
    assert data["command"] == "epsilon" and data["mechanism"] == "gaussian"
    assert data["params"] == {"sigma": 2.0, "sensitivity": 1.0, "neighbouring": "add_remove"}
    assert data["count"] == 4 and data["delta"] == [1e-5, 1e-6] and data["step"] == 1e-3
    res = data["results"]
    assert set(res) == {"pld", "rdp", "zcdp"}
    for name, r in res.items():
        assert len(r["epsilon"]) == 2 and isinstance(r["provenance"], str)
        assert r["epsilon"][1] > r["epsilon"][0] > 0
    for (lo, hi), eps in zip(res["pld"]["interval"], res["pld"]["epsilon"]):
        assert lo <= hi == eps
    # four Gaussians of μ = 1/2 are one of μ = 1: all three bound the exact ε
    exact = float(accounting.mechanism("gaussian", sigma=1.0).curve(accounting.PrivacyProfile)
                  .epsilon(1e-5))
    assert res["pld"]["interval"][0][0] <= exact * (1 + 1e-6)
    assert res["pld"]["epsilon"][0] >= exact * (1 - 1e-6)
    assert res["rdp"]["epsilon"][0] >= res["pld"]["epsilon"][0]
    assert res["zcdp"]["rho"] == pytest.approx(4 * 0.5 ** 2 / 2)
    assert res["rdp"]["epsilon"][0] == pytest.approx(gaussian_rdp_epsilon(1.0, 1e-5), rel=1e-8)


def test_delta_vectorised_matches_library(capsys):
    code, out, _ = run(capsys, "delta", "laplace", "--b", "2", "--compose", "10", "--epsilon",
                       "1", "2", "3", "--accountant", "rdp", "--json")
    assert code == 0
    data = json.loads(out)
    got = data["results"]["rdp"]["delta"]
    acct = Accountant().compose(accounting.mechanism("laplace", b=2.0), count=10)
    want = acct.under("rdp").delta(np.array([1.0, 2.0, 3.0]))
    assert got == pytest.approx(list(want), rel=1e-9)
    assert got[0] > got[1] > got[2]


def test_delta_pld_text_has_interval(capsys):
    code, out, _ = run(capsys, "delta", "gaussian", "--sigma", "1", "--epsilon", "0.5",
                       "--accountant", "pld", "--step", "1e-3")
    assert code == 0
    m = re.search(rf"^\s+pld\s+{FLOAT}\s+({FLOAT})\s+\[({FLOAT}), ({FLOAT})\]", out, re.M)
    assert m, out
    d, lo, hi = map(float, m.groups())
    assert lo <= d and d == pytest.approx(hi, rel=1e-6)


def test_neighbouring_and_sensitivity_parameters(capsys):
    code, out, _ = run(capsys, "epsilon", "gaussian", "--sigma", "2", "--sensitivity", "2",
                       "--neighbouring", "replace-one", "--delta", "1e-5",
                       "--accountant", "rdp", "--json")
    assert code == 0
    data = json.loads(out)
    assert data["params"]["neighbouring"] == "replace_one"
    assert data["results"]["rdp"]["epsilon"][0] == pytest.approx(
        gaussian_rdp_epsilon(1.0, 1e-5), rel=1e-8)


def test_parameter_named_like_an_option(capsys, monkeypatch):
    """A parameter called ``step`` is offered as ``--param-step``; ``--step`` stays the
    PLD grid step."""
    from accounting_mechanisms.gaussian import Gaussian, GaussianPair

    @attrs.frozen
    class Stepped(Gaussian):
        """A Gaussian used ``step`` times in a row (μ = √step·Δ/σ)."""

        name = "stepped_gaussian"
        step: int = attrs.field(default=1)

        def pair(self):
            return GaussianPair(self.step ** 0.5 * self.sensitivity / self.sigma)

    class Plugin:
        @hookimpl
        def accounting_register_mechanisms(self, register):
            register(Stepped)

    reg = make_registry()
    reg.register_plugin(Plugin(), "stepped")
    monkeypatch.setattr(cli, "default_registry", lambda: reg)
    code, out, err = run(capsys, "epsilon", "stepped_gaussian", "--sigma", "2", "--param-step",
                         "4", "--delta", "1e-5", "--accountant", "rdp", "--step", "1e-3",
                         "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["params"]["step"] == 4 and data["step"] == 1e-3
    assert data["results"]["rdp"]["epsilon"][0] == pytest.approx(
        gaussian_rdp_epsilon(1.0, 1e-5), rel=1e-8)
    code, _, err = run(capsys, "epsilon", "stepped_gaussian", "--sigma", "2", "--param-step",
                       "1.5", "--delta", "1e-5")
    assert code == 2 and "invalid int value" in err


def test_help_exits_zero(capsys):
    for argv in (["--help"], ["epsilon", "--help"], ["epsilon", "gaussian", "--help"],
                 ["delta", "-h"], ["run", "--help"], ["demo", "--help"], ["--version"]):
        code, out, _ = run(capsys, *argv)
        assert code == 0, argv
        assert out
    _, out, _ = run(capsys, "epsilon", "subsampled_gaussian", "--help")
    assert "--q FLOAT" in out and "--sigma FLOAT" in out


# ---------------------------------------------------------------- workloads
WORKLOAD = """\
description = "gaussian then laplace"
step = 1e-3

[[mechanism]]
name = "gaussian"
sigma = 2.0
count = 5

[[mechanism]]
name = "laplace"
b = 2.0
sensitivity = 1.0
count = 10
"""


def hand_built(step: float = 1e-3) -> Accountant:
    acct = Accountant(step=step)
    acct.compose(accounting.mechanism("gaussian", sigma=2.0), count=5)
    acct.compose(accounting.mechanism("laplace", b=2.0, sensitivity=1.0), count=10)
    return acct


def test_workload_matches_hand_built_accountant(capsys, tmp_path):
    path = tmp_path / "job.toml"
    path.write_text(WORKLOAD)
    code, out, err = run(capsys, "epsilon", "--workload", str(path), "--delta", "1e-5",
                         "--accountant", "all", "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["workload"]["source"] == str(path)
    assert [m["name"] for m in data["workload"]["mechanisms"]] == ["gaussian", "laplace"]
    assert data["step"] == 1e-3  # from the file
    acct = hand_built()
    for name in ("pld", "rdp", "zcdp"):
        want = float(acct.under(name).epsilon(1e-5))
        assert data["results"][name]["epsilon"][0] == pytest.approx(want, rel=1e-12), name
    lo, hi = acct.epsilon_interval(1e-5)
    assert data["results"]["pld"]["interval"][0] == pytest.approx([float(lo), float(hi)])


def test_workload_defaults_and_overrides(capsys, tmp_path):
    path = tmp_path / "job.toml"
    path.write_text('delta = [1e-5, 1e-7]\nepsilon = 1.5\naccountant = "rdp"\n' + WORKLOAD)
    code, out, _ = run(capsys, "epsilon", "--workload", str(path), "--json")
    data = json.loads(out)
    assert code == 0 and data["delta"] == [1e-5, 1e-7] and list(data["results"]) == ["rdp"]
    code, out, _ = run(capsys, "delta", "--workload", str(path), "--epsilon", "1", "--json")
    data = json.loads(out)
    assert code == 0 and data["epsilon"] == [1.0]
    want = float(hand_built().under("rdp").delta(1.0))
    assert data["results"]["rdp"]["delta"][0] == pytest.approx(want, rel=1e-12)
    code, out, _ = run(capsys, "epsilon", "--workload", str(path), "--delta", "1e-6",
                       "--accountant", "pld")
    assert code == 0 and row_value(out, "pld") == pytest.approx(
        float(hand_built().epsilon(1e-6)), rel=1e-7)


def test_workload_module_api():
    wl = parse_workload(WORKLOAD, "inline")
    assert [u.count for u in wl.uses] == [5, 10] and wl.step == 1e-3
    assert wl.describe() == "gaussian(sigma=2) × 5 ⊗ laplace(b=2, sensitivity=1) × 10"
    assert float(wl.accountant().epsilon(1e-5, "rdp")) == pytest.approx(
        float(hand_built().epsilon(1e-5, "rdp")), rel=1e-12)
    registry = default_registry()
    job = _job_workload(registry.default_job(), registry)   # registered by a plugin
    (use,) = job.uses
    assert use.name == "subsampled_gaussian" and use.count == 14062
    assert use.mechanism.q == pytest.approx(256 / 60000) and use.mechanism.sigma == 1.1
    assert job.delta == (1e-5,)


@pytest.mark.parametrize("text, message", [
    ("[[mechanism]]\nname = 'gaussian'\nsigma = \n", "invalid TOML"),
    ("[[mechanism]]\nsigma = 1.0\n", "missing 'name'"),
    ("[[mechanism]]\nname = 'nope'\n", "unknown mechanism 'nope'"),
    ("[[mechanism]]\nname = 'gaussian'\nsigma = 'x'\n", "sigma must be a number"),
    ("[[mechanism]]\nname = 'gaussian'\nsigma = -1.0\n", "sigma must be in"),
    ("[[mechanism]]\nname = 'gaussian'\nsigma = 1.0\ncount = 1.5\n", "count must be a positive"),
    ("[[mechanism]]\nname = 'gaussian'\nsigma = 1.0\ncount = 0\n", "count must be a positive"),
    ("[[mechanism]]\nname = 'gaussian'\nsigma = 1.0\nb = 2\n", "unknown parameter 'b'"),
    ("[[mechanism]]\nname = 'gaussian'\n", "missing parameter sigma"),
    ("oops = 1\n[[mechanism]]\nname = 'gaussian'\nsigma = 1.0\n", "unknown top-level key"),
    ("delta = 2\n[[mechanism]]\nname = 'gaussian'\nsigma = 1.0\n", "delta must be in"),
    ("step = 0\n[[mechanism]]\nname = 'gaussian'\nsigma = 1.0\n", "step must be in"),
    ("accountant = 'x'\n[[mechanism]]\nname = 'gaussian'\nsigma = 1.0\n", "accountant must be"),
    ("mechanism = 3\n", "array of tables"),
    ("", "no [[mechanism]] entries"),
])
def test_workload_errors_name_file_and_problem(tmp_path, text, message):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(WorkloadError) as info:
        load_workload(path)
    msg = str(info.value)
    assert msg.startswith(str(path)) and message in msg and "\n" not in msg


def test_run_on_a_small_workload(capsys, tmp_path):
    """``run`` (alias ``demo``) reports every accountant, timings and the trade-off summary."""
    path = tmp_path / "job.toml"
    path.write_text(WORKLOAD)
    code, out, err = run(capsys, "demo", "--workload", str(path), "--delta", "1e-5")
    assert code == 0, err
    for name in ("pld", "rdp", "zcdp"):
        assert re.search(rf"^\s+{name}\s+1e-05\s+{FLOAT}.*\d s$", out, re.M), out
    assert "β(α=0.001)" in out and "β(α=0.1)" in out and "not a bound" in out
    code, out, _ = run(capsys, "run", "--workload", str(path), "--delta", "1e-5",
                       "--accountant", "rdp", "--json")
    data = json.loads(out)
    assert code == 0 and list(data["results"]) == ["rdp"]
    trade = data["tradeoff"]
    assert trade["alpha"] == [0.001, 0.01, 0.1]
    beta = hand_built().tradeoff().beta(np.array([0.001, 0.01, 0.1]))
    assert trade["beta"] == pytest.approx(list(beta), rel=1e-9)
    # μ solves G_μ(0.01) = β(0.01)
    from scipy.stats import norm
    assert norm.cdf(norm.ppf(0.99) - trade["gdp_mu"]) == pytest.approx(beta[1], rel=1e-9)


# --------------------------------------------------------------- bad input
BAD_WORKLOADS = {
    "malformed": "[[mechanism]\nname = 'gaussian'\n",
    "noname": "[[mechanism]]\nsigma = 1.0\n",
    "fraccount": "[[mechanism]]\nname = 'gaussian'\nsigma = 1.0\ncount = 1.5\n",
}

BAD_ARGV = {
    "sigma=-1": ["epsilon", "gaussian", "--sigma", "-1", "--delta", "1e-5"],
    "sigma=nan": ["epsilon", "gaussian", "--sigma", "nan", "--delta", "1e-5"],
    "delta=2": ["epsilon", "gaussian", "--sigma", "1", "--delta", "2"],
    "delta=0": ["epsilon", "gaussian", "--sigma", "1", "--delta", "0"],
    "delta=nan": ["epsilon", "gaussian", "--sigma", "1", "--delta", "nan"],
    "epsilon=nan": ["delta", "gaussian", "--sigma", "1", "--epsilon", "nan"],
    "unknown mechanism": ["epsilon", "gausian", "--sigma", "1", "--delta", "1e-5"],
    "unknown parameter": ["epsilon", "gaussian", "--sigma", "1", "--b", "2", "--delta", "1e-5"],
    "non-numeric parameter": ["epsilon", "gaussian", "--sigma", "abc", "--delta", "1e-5"],
    "missing parameter": ["epsilon", "gaussian", "--delta", "1e-5"],
    "no delta": ["epsilon", "gaussian", "--sigma", "1"],
    "no mechanism": ["epsilon", "--delta", "1e-5"],
    "compose=0": ["epsilon", "gaussian", "--sigma", "1", "--compose", "0", "--delta", "1e-5"],
    "compose=1.5": ["epsilon", "gaussian", "--sigma", "1", "--compose", "1.5", "--delta", "1e-5"],
    "step=-1": ["epsilon", "gaussian", "--sigma", "1", "--delta", "1e-5", "--step", "-1"],
    "bad accountant": ["epsilon", "gaussian", "--sigma", "1", "--delta", "1e-5",
                       "--accountant", "foo"],
    "bad neighbouring": ["epsilon", "gaussian", "--sigma", "1", "--delta", "1e-5",
                         "--neighbouring", "sideways"],
    "q>1": ["epsilon", "subsampled_gaussian", "--q", "1.5", "--sigma", "1", "--delta", "1e-5"],
    "unknown command": ["frobnicate"],
    "stray argument": ["mechanisms", "extra"],
    "missing workload": ["epsilon", "--workload", "/nonexistent/job.toml", "--delta", "1e-5"],
    "malformed TOML": ["epsilon", "--workload", "{malformed}", "--delta", "1e-5"],
    "workload without name": ["epsilon", "--workload", "{noname}", "--delta", "1e-5"],
    "workload count=1.5": ["epsilon", "--workload", "{fraccount}", "--delta", "1e-5"],
    "workload and mechanism": ["epsilon", "gaussian", "--workload", "{noname}"],
}


def _bad_argv(case, tmp_path):
    files = {}
    for key, text in BAD_WORKLOADS.items():
        files[key] = tmp_path / f"{key}.toml"
        files[key].write_text(text)
    return [a.format(**files) if a.startswith("{") else a for a in BAD_ARGV[case]]


@pytest.mark.parametrize("case", list(BAD_ARGV))
def test_bad_input_one_line_exit_2(capsys, tmp_path, case):
    code, out, err = run(capsys, *_bad_argv(case, tmp_path))
    assert code == 2
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("accounting: error: ") and "Traceback" not in err


def test_bad_workload_errors_name_the_file(capsys, tmp_path):
    for case in ("malformed TOML", "workload without name", "workload count=1.5"):
        argv = _bad_argv(case, tmp_path)
        _, _, err = run(capsys, *argv)
        assert argv[2] in err, err


# ---------------------------------------------------------------- subprocess
def _subprocess(*argv, timeout=120):
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    return subprocess.run([sys.executable, "-m", "accounting", *argv], capture_output=True,
                          text=True, timeout=timeout, env=env)


def test_subprocess_ok_and_error():
    ok = _subprocess("epsilon", "gaussian", "--sigma", "1.0", "--compose", "100", "--delta",
                     "1e-5", "--accountant", "rdp")
    assert ok.returncode == 0, ok.stderr
    acct = Accountant().compose(accounting.mechanism("gaussian", sigma=1.0), count=100)
    assert row_value(ok.stdout, "rdp") == pytest.approx(
        float(acct.under("rdp").epsilon(1e-5)), rel=1e-7)
    bad = _subprocess("epsilon", "gaussian", "--sigma", "-1", "--delta", "1e-5")
    assert bad.returncode == 2 and bad.stdout == ""
    assert bad.stderr.splitlines() == [bad.stderr.strip()]
    assert bad.stderr.startswith("accounting: error:") and "Traceback" not in bad.stderr


@pytest.mark.slow
def test_subprocess_main_job():
    """The default job end to end (about 10–40 s depending on the machine)."""
    res = _subprocess(timeout=300)
    assert res.returncode == 0, res.stderr
    for name in ("pld", "rdp", "zcdp"):
        assert re.search(rf"^\s+{name}\s+1e-05\s+{FLOAT}", res.stdout, re.M), res.stdout
    eps_pld = row_value(res.stdout, "pld")
    eps_rdp = row_value(res.stdout, "rdp")
    eps_zcdp = row_value(res.stdout, "zcdp")
    assert 2.0 < eps_pld < eps_rdp < 3.0 and eps_zcdp > 1000
    assert "β(α=0.01)" in res.stdout and "not a bound" in res.stdout


def test_pure_dp_query_on_the_command_line(capsys):
    """δ = 0: ten Laplace(b = 1) uses are exactly 10-DP (the largest composed loss);
    the RDP and zCDP accountants cannot answer it and say so beside the PLD's answer."""
    code, out, err = run(capsys, "epsilon", "laplace", "--b", "1", "--compose", "10",
                         "--delta", "0", "--accountant", "all", "--json")
    assert code == 0, err
    res = json.loads(out)["results"]
    assert res["pld"]["epsilon"] == [pytest.approx(10.0, rel=1e-12, abs=0)]
    assert res["pld"]["epsilon"][0] >= 10.0
    assert res["pld"]["interval"][0][0] == pytest.approx(10.0, rel=1e-12)
    assert "error" in res["rdp"] and "error" in res["zcdp"]

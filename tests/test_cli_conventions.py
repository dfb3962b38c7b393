"""Command-line conventions: "did you mean" for unknown names, the auditor chosen by
the registry, named jobs contributed by plugins (the default one included), defaults
shown in ``--help``, ``python -m accounting``, log messages and short reprs."""

from __future__ import annotations

import importlib
import json
import logging
import re
import subprocess
import sys

import numpy as np
import pytest

import accounting
from accounting import Accountant, hookimpl, make_registry
from accounting.cli import app as cli
from accounting.cli.app import main
from accounting.cli.base import Parser
from accounting.cli.run import _job_workload
from accounting.registry.registry import default_registry

JOB = """\
description = "five Gaussians"
delta = 1e-5
step = 1e-3

[[mechanism]]
name = "gaussian"
sigma = 2.0
count = 5
"""


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def job_plugin(name="tiny", workload=JOB, description="Tiny", **options):
    class Plugin:
        @hookimpl
        def accounting_register_jobs(self, register):
            register(name, workload, description, **options)
    return Plugin()


def gaussian_only_registry():
    """A registry with the Gaussian mechanism and no job, no auditor."""
    reg = make_registry(entry_points=False)
    reg.register_plugin(importlib.import_module("accounting_mechanisms.gaussian"), "gaussian")
    return reg


# ------------------------------------------------------------- did you mean
def test_unknown_mechanism_suggests_the_closest(capsys):
    code, out, err = run(capsys, "epsilon", "gausian", "--sigma", 1, "--delta", 1e-5)
    assert code == 2 and out == "" and len(err.splitlines()) == 1
    assert err.startswith("accounting: error: unknown mechanism 'gausian' (did you mean "
                          "'gaussian'")
    code, _, err = run(capsys, "gap", "laplase", "--b", 1)
    assert code == 2 and "did you mean 'laplace'" in err
    code, _, err = run(capsys, "epsilon", "zzzz", "--delta", 1e-5)
    assert code == 2 and "did you mean" not in err and "registered: " in err


def test_invalid_choices_suggest_too(capsys):
    code, _, err = run(capsys, "epsilom", "gaussian")
    assert code == 2 and "invalid choice: 'epsilom'" in err and "(did you mean 'epsilon'?)" in err
    code, _, err = run(capsys, "epsilon", "gaussian", "--sigma", 1, "--delta", 1e-5,
                       "--accountant", "pdl")
    assert code == 2 and "(did you mean 'pld'?)" in err and len(err.splitlines()) == 1


def test_library_lookup_suggests_too():
    with pytest.raises(ValueError, match=r"unknown mechanism 'laplce' \(did you mean "
                                         r"'laplace'.*\?\); registered: "):
        accounting.mechanism("laplce", b=1.0)
    with pytest.raises(ValueError) as info:
        default_registry().mechanism("qqqq")
    assert "did you mean" not in str(info.value)


def test_a_mistyped_command_option_is_not_blamed_on_the_mechanism(capsys):
    """--delat was "gaussian: unknown parameter '--delat'" with no suggestion: an
    option close to one of the command's own is reported as the command's, with the
    closest; only an option close to none of them is the mechanism's (with its own
    closest parameter, if any)."""
    cases = [
        (["epsilon", "gaussian", "--sigma", 1, "--delat", 1e-5],
         "unknown option '--delat' (did you mean '--delta'?) (see 'accounting epsilon --help')"),
        (["epsilon", "gaussian", "--sigma", 1, "--delat=1e-5"],
         "unknown option '--delat' (did you mean '--delta'?) (see 'accounting epsilon --help')"),
        (["delta", "laplace", "--b", 1, "--epsilno", 1],
         "unknown option '--epsilno' (did you mean '--epsilon'?) (see 'accounting delta --help')"),
        (["epsilon", "gaussian", "--sigma", 1, "--delta", 1e-5, "--compse", 3],
         "unknown option '--compse' (did you mean '--compose'?)"),
        (["calibrate", "gaussian", "--solve", "sigma", "--epsilon", 1, "--delta", 1e-5,
          "--compse", 3], "unknown option '--compse' (did you mean '--compose'?)"),
        (["risk", "gaussian", "--sigma", 1, "--compos", 3],
         "unknown option '--compos' (did you mean '--compose'?)"),
        # approx_dp's own ε and δ are --param-epsilon/--param-delta: --delat is still the
        # command's --delta
        (["epsilon", "approx_dp", "--param-epsilon", 1, "--param-delta", 0, "--delat", 1e-5],
         "unknown option '--delat' (did you mean '--delta'?)"),
        (["epsilon", "gaussian", "--sigm", 1, "--delta", 1e-5],
         "gaussian: unknown parameter '--sigm' (did you mean '--sigma'?) (its parameters: "
         "--sigma, --sensitivity, --neighbouring)"),
        (["epsilon", "gaussian", "--sigma", 1, "--delta", 1e-5, "--foo", 3],
         "gaussian: unknown parameter '--foo' (its parameters: --sigma, --sensitivity, "
         "--neighbouring)"),
        # gap has no --delta: --delat is close to none of its options
        (["gap", "gaussian", "--sigma", 1, "--delat", 3],
         "gaussian: unknown parameter '--delat' (its parameters:"),
    ]
    for argv, message in cases:
        code, out, err = run(capsys, *argv)
        assert code == 2 and out == "" and len(err.splitlines()) == 1, err
        assert err.startswith(f"accounting: error: {message}"), (argv, err)


def test_a_mechanisms_own_message_is_prefixed_once(capsys):
    """"discrete_laplace: discrete_laplace: missing the parameter scale" (the name
    added again around the mechanism's own message) is prefixed once."""
    code, out, err = run(capsys, "epsilon", "discrete_laplace", "--delta", 1e-5)
    assert code == 2 and out == ""
    assert err == ("accounting: error: discrete_laplace: missing the parameter scale (the "
                   "noise scale, 1/decay rate)\n")
    from accounting.ledger import build_mechanism
    with pytest.raises(TypeError) as info:
        build_mechanism(None, "discrete_laplace", {}, path="entries[0].mechanism")
    assert str(info.value) == ("entries[0].mechanism (discrete_laplace): missing the "
                               "parameter scale (the noise scale, 1/decay rate)")
    with pytest.raises(ValueError) as info:        # another message keeps its prefix
        build_mechanism(None, "gaussian", {"sigma": -1.0})
    assert str(info.value).startswith("gaussian: sigma must be in")
    assert str(info.value).count("gaussian:") == 1


# ------------------------------------------------------------------ auditors
@pytest.fixture
def npy(tmp_path):
    rng = np.random.default_rng(1)
    paths = {}
    for name in ("x", "y"):
        paths[name] = tmp_path / f"{name}.npy"
        np.save(paths[name], rng.normal(size=(40, 2)))
    return paths


class FakeAuditor:
    def audit_samples(self, x, y, *, epsilon, delta, seed=None, **settings):
        return {"n": len(x), "epsilon": epsilon}


def auditor_plugin(name):
    class Plugin:
        @hookimpl
        def accounting_register_auditors(self, register):
            register(name, FakeAuditor())
    return Plugin()


def test_the_only_auditor_is_the_default(capsys, npy, monkeypatch):
    reg = gaussian_only_registry()
    reg.register_plugin(auditor_plugin("solo"), "solo_plugin")
    monkeypatch.setattr(cli, "default_registry", lambda: reg)
    code, out, _ = run(capsys, "audit", "--x", npy["x"], "--y", npy["y"], "--epsilon", 1,
                       "--delta", 0.01)
    assert code == 0 and "'n': 40" in out


def test_several_auditors_need_a_name(capsys, npy, monkeypatch):
    reg = make_registry()
    reg.register_plugin(auditor_plugin("other"), "other_plugin")
    monkeypatch.setattr(cli, "default_registry", lambda: reg)
    args = ("--x", npy["x"], "--y", npy["y"], "--epsilon", 1, "--delta", 0.01)
    code, out, err = run(capsys, "audit", *args)
    assert code == 2 and out == ""
    assert err == ("accounting: error: several auditors are registered (other, rkrd): choose "
                   "one with --auditor NAME\n")
    code, out, _ = run(capsys, "audit", "--auditor", "other", *args)
    assert code == 0 and "'n': 40" in out
    code, _, err = run(capsys, "audit", "--auditor", "rkdr", *args)
    assert code == 2 and "unknown auditor 'rkdr' (did you mean 'rkrd'?)" in err


def test_no_auditor_registered(capsys, npy, monkeypatch):
    monkeypatch.setattr(cli, "default_registry", gaussian_only_registry)
    code, _, err = run(capsys, "audit", "--x", npy["x"], "--y", npy["y"], "--epsilon", 1,
                       "--delta", 0.01)
    assert code == 2 and err.startswith("accounting: error: no auditor is registered")


# ---------------------------------------------------------------------- jobs
def test_the_default_job_comes_from_a_plugin():
    reg = default_registry()
    job = reg.default_job()
    assert job is not None and job.name == "dpsgd" and job.plugin in reg.builtin_plugins
    assert job.solve == "sigma" and dict(job.notes).keys() == {"zcdp"}
    wl = _job_workload(job, reg)
    (use,) = wl.uses
    assert wl.source == "built-in DP-SGD workload" and use.count == 14062
    assert use.mechanism.q == pytest.approx(256 / 60000) and use.mechanism.sigma == 1.1


def test_a_plugin_job_runs_by_name_with_its_notes(capsys, monkeypatch):
    reg = make_registry()
    reg.register_plugin(job_plugin(notes={"rdp": "the RDP line is a bound"}), "tiny_plugin")
    monkeypatch.setattr(cli, "default_registry", lambda: reg)
    code, out, err = run(capsys, "run", "--job", "tiny", "--accountant", "rdp")
    assert code == 0 and err == ""
    assert "  workload: gaussian(sigma=2) × 5  (Tiny workload of plugin 'tiny_plugin')" in out
    assert "  note: the RDP line is a bound" in out
    want = float(Accountant().compose(accounting.mechanism("gaussian", sigma=2.0), 5)
                 .under("rdp").epsilon(1e-5))
    m = re.search(r"^  rdp\s+1e-05\s+(\S+)", out, re.M)
    assert m and float(m.group(1)) == pytest.approx(want, rel=1e-7)
    code, out, _ = run(capsys, "run", "--job", "tiny", "--accountant", "rdp", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["notes"] == ["the RDP line is a bound"]
    assert doc["workload"]["source"] == "Tiny workload of plugin 'tiny_plugin'"
    code, _, err = run(capsys, "run", "--job", "tinny")
    assert code == 2 and "unknown job 'tinny' (did you mean 'tiny'?)" in err
    code, _, err = run(capsys, "run", "--job", "tiny", "--workload", "x.toml")
    assert code == 2 and "either --job NAME or --workload FILE" in err
    code, out, _ = run(capsys, "mechanisms")
    assert "  tiny  Tiny  [plugin tiny_plugin]" in out and "  dpsgd  DP-SGD (default)" in out


def test_without_a_default_job_run_asks_for_one(capsys, monkeypatch):
    reg = gaussian_only_registry()
    reg.register_plugin(job_plugin(), "tiny_plugin")
    monkeypatch.setattr(cli, "default_registry", lambda: reg)
    code, out, err = run(capsys)
    assert code == 2 and out == ""
    assert err.startswith("accounting: error: no default job is registered")
    assert "registered jobs: tiny" in err
    code, _, err = run(capsys, "calibrate", "--dpsgd", "--q", 0.1, "--compose", 10,
                       "--epsilon", 1, "--delta", 1e-5)
    assert code == 2 and "--dpsgd calibrates the job 'dpsgd'" in err


def test_a_third_party_cannot_take_the_default():
    reg = make_registry()
    with pytest.warns(RuntimeWarning, match="cannot be the default job"):
        reg.register_plugin(job_plugin(default=True), "pushy", strict=False)
    assert reg.default_job().name == "dpsgd" and reg.jobs["tiny"].default is False


@pytest.mark.parametrize("args, options, message", [
    (("Bad-Name", JOB, "x"), {}, "job name must be a lower-case identifier"),
    (("bad", "x = [", "x"), {}, "is not valid TOML"),
    (("bad", {"description": "no mechanisms"}, "x"), {}, "with [[mechanism]] entries"),
    (("bad", JOB, ""), {}, "description must be a non-empty string"),
    (("bad", JOB, "x"), {"notes": {"rdp": 3}}, "notes must map accountant names"),
    (("bad", JOB, "x"), {"default": "yes"}, "default must be a bool"),
    (("bad", JOB), {}, "register(name, workload, description"),
])
def test_bad_job_registrations_are_refused(args, options, message):
    class Plugin:
        @hookimpl
        def accounting_register_jobs(self, register):
            register(*args, **options)
    reg = make_registry(entry_points=False)
    with pytest.warns(RuntimeWarning):
        reg.register_plugin(Plugin(), "bad_job_plugin", strict=False)
    assert "bad" not in reg.jobs and any(message in str(e) for e in reg.errors), reg.errors


# ------------------------------------------------------------------ --help
def test_help_shows_defaults(capsys):
    p = Parser(prog="t", add_help=False)
    p.add_argument("--x", type=float, default=3.5, help="the x")
    p.add_argument("--v", nargs="+", default=[1, 2], help="the v")
    p.add_argument("--y", default=None, help="the y")
    p.add_argument("--z", default="pld", help="the z (default pld)")
    p.add_argument("--flag", action="store_true", help="a flag")
    text = " ".join(p.format_help().split())
    assert "--x X the x (default 3.5)" in text and "the v (default 1 2)" in text
    assert "the y --z" in text and "(default pld) --flag" in text and text.count("default") == 3
    code, out, _ = run(capsys, "epsilon", "gaussian", "--help")
    assert code == 0 and re.search(r"--sensitivity FLOAT\s+default 1\.0", out)
    code, out, _ = run(capsys, "calibrate", "--help")
    assert code == 0 and "(default pld)" in out


# ------------------------------------------------- python -m, logging, reprs
@pytest.mark.parametrize("module", ["accounting", "accounting.cli"])
def test_python_m_accounting_version(module):
    proc = subprocess.run([sys.executable, "-m", module, "--version"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stderr == ""
    assert proc.stdout == f"accounting {accounting.__version__}\n"


def test_verbose_shows_log_messages_on_stderr(capsys, monkeypatch):
    def noisy(*args, **kwargs):
        logging.getLogger("accounting.cli.test").info("computing the answer")
        return real(*args, **kwargs)
    from accounting.cli import evaluate
    real = evaluate.evaluate_workload
    monkeypatch.setattr(evaluate, "evaluate_workload", noisy)
    argv = ("epsilon", "gaussian", "--sigma", 1, "--delta", 1e-5, "--accountant", "rdp")
    code, out, err = run(capsys, *argv)
    assert code == 0 and err == ""
    code, out2, err = run(capsys, *argv, "--verbose")
    same = [re.sub(r"\d+\.\d+ s$", "T s", o, flags=re.M) for o in (out, out2)]
    assert code == 0 and same[0] == same[1]
    assert err == "accounting: info: computing the answer\n"


def test_short_reprs():
    reg = default_registry()
    text = repr(reg)
    assert re.fullmatch(r"Registry\(\d+ mechanisms, \d+ converters, 2 auditors, 1 job, "
                        r"\d+ plugin errors?\)", text) and len(text) < 200
    m = accounting.mechanism("laplace", b=2.0, sensitivity=3.0)
    assert repr(m) == "Laplace(b=2.0, sensitivity=3.0)"
    nested = accounting.mechanism("poisson_subsampled", base=m, q=0.1)
    assert repr(nested) == "PoissonSubsampled(base=Laplace(b=2.0, sensitivity=3.0), q=0.1)"
    wide = accounting.mechanism("gaussian_mixture", weights=[0.125] * 8, means=list(range(8)),
                                scales=[1.0] * 8)
    assert "(0.125, 0.125, 0.125, …, 0.125; 8 values)" in repr(wide) and len(repr(wide)) <= 200
    acct = Accountant().compose(m, 3).compose(accounting.mechanism("gaussian", sigma=1.0), 2)
    assert repr(acct) == ("Accountant(step=0.0002, 5 uses: Laplace(b=2.0, sensitivity=3.0) × 3, "
                          "Gaussian(sigma=1.0) × 2)")
    for _ in range(40):
        acct.compose(accounting.mechanism("gaussian", sigma=1.0 + _))
    assert len(repr(acct)) == 200 and repr(acct).endswith("…)")

"""``accounting audit``: samples from .npy files or a callable MODULE:FUNCTION, the
auditor looked up in the registry, one-line errors with status 2."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from accounting import hookimpl, make_registry
from accounting.cli import app as cli
from accounting.cli.app import main
from accounting.registry.registry import default_registry


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def npy(tmp_path):
    rng = np.random.default_rng(0)
    shift = np.zeros(4)
    shift[0] = 4.0
    paths = {}
    for name, arr in (("x", rng.normal(size=(90, 4)) + shift), ("y", rng.normal(size=(90, 4))),
                      ("short", rng.normal(size=(1, 4))), ("wide", rng.normal(size=(90, 5))),
                      ("nan", np.full((90, 4), np.nan))):
        paths[name] = tmp_path / f"{name}.npy"
        np.save(paths[name], arr)
    return paths


def test_audit_npy_text_and_json_agree_with_the_api(capsys, npy):
    code, out, err = run(capsys, "audit", "--x", npy["x"], "--y", npy["y"], "--epsilon", 1,
                         "--delta", 0.005, "--seed", 7, "--alpha", 2, 6)
    assert code == 0 and err == ""
    assert "REJECT at level 0.05" in out and "seed 7" in out
    code, out, _ = run(capsys, "audit", "--x", npy["x"], "--y", npy["y"], "--epsilon", 1,
                       "--delta", 0.005, "--seed", 7, "--alpha", 2, 6, "--json")
    assert code == 0
    doc = json.loads(out)
    api = default_registry().auditors["rkrd"].audit_samples(
        np.load(npy["x"]), np.load(npy["y"]), epsilon=1.0, delta=0.005, seed=7, alphas=(2, 6))
    assert doc["decision"] == "reject" and doc["rejected"] is True
    assert doc["lower_bound"]["epsilon"] == pytest.approx(api.lower_bound.epsilon, rel=1e-12)
    assert api.statistics is None and "descriptive" not in doc   # D̂ only on request
    assert doc["rkrdp_test"]["threshold"] == ["inf", "inf"]
    assert doc["seed"] == 7 and doc["settings"]["alphas"] == [2.0, 6.0]


def test_audit_fail_on_reject_sets_the_exit_status(capsys, npy):
    args = ["audit", "--x", npy["x"], "--y", npy["y"], "--delta", 0.005, "--seed", 7,
            "--fail-on-reject"]
    code, out, _ = run(capsys, *args, "--epsilon", 1)          # a shift of 4σ: rejected
    assert code == cli.EXIT_REJECTED == 3 and "REJECT" in out
    code, out, _ = run(capsys, *args, "--epsilon", 20)         # a claim it cannot refute
    assert code == 0 and "NOT REJECTED" in out


def test_audit_callable_module_function(capsys, tmp_path, monkeypatch):
    monkeypatch.setattr("accounting.progress._tqdm", lambda: None)     # plain progress lines
    (tmp_path / "my_mech.py").write_text(textwrap.dedent("""
        import numpy as np
        D0 = np.array([1.0, 0.0, 0.0])
        D1 = np.array([0.0, 0.0, 0.0])

        def release(data, rng):
            return data * 3.0 + rng.normal(size=3)
    """))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    code, out, err = run(capsys, "audit", "--mechanism", "my_mech:release", "--d0", "my_mech:D0",
                         "--d1", "my_mech:D1", "--n", 60, "--epsilon", 12, "--delta", 0.01,
                         "--seed", 1, "--json", "--progress")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["settings"]["n_p"] == 60 and doc["settings"]["d"] == 3
    assert doc["decision"] == "not rejected"       # Δ/σ = 3 is (12, 0.01)-DP
    assert "rkrd: sampling: 120/120 done" in err


def test_audit_with_reference_bootstrap(capsys, npy):
    code, out, err = run(capsys, "audit", "--x", npy["x"], "--y", npy["y"], "--epsilon", 1,
                         "--delta", 0.005, "--seed", 2, "--reference", "gaussian",
                         "--reference-param", "sigma=3.0", "--shift", 4, 0, 0, 0,
                         "--n-boot", 9, "--json")
    assert code == 0, err
    boot = json.loads(out)["bootstrap"]
    assert boot["p_value"] == pytest.approx(0.1) and boot["n_boot"] == 9   # σ is really 1


def test_audit_unknown_auditor_and_a_runtime_one(capsys, npy, monkeypatch):
    code, _, err = run(capsys, "audit", "--auditor", "nope", "--x", npy["x"], "--y", npy["y"],
                       "--epsilon", 1, "--delta", 0.01)
    assert code == 2 and err.startswith("accounting: error: unknown auditor 'nope'")
    assert "rkrd" in err and len(err.splitlines()) == 1

    class Fake:
        def audit_samples(self, x, y, *, epsilon, delta, seed=None, **settings):
            return {"n": len(x), "epsilon": epsilon, **settings}

    class Plugin:
        @hookimpl
        def accounting_register_auditors(self, register):
            register("fake_cli_audit", Fake())

    reg = make_registry()
    reg.register_plugin(Plugin(), "fake_cli_audit_plugin")
    monkeypatch.setattr(cli, "default_registry", lambda: reg)
    code, out, _ = run(capsys, "audit", "--auditor", "fake_cli_audit", "--x", npy["x"],
                       "--y", npy["y"], "--epsilon", 1, "--delta", 0.01, "--level", 0.1)
    assert code == 0 and "'level': 0.1" in out and "'n': 90" in out


@pytest.mark.parametrize("args,message", [
    (["--x", "{wide}", "--y", "{y}"], "--x and --y must have the same dimension d"),
    (["--x", "{short}", "--y", "{y}"], r"holds n = 1 sample; at least 2 are needed"),
    (["--x", "{nan}", "--y", "{y}"], r"holds a non-finite value \(nan at index \(0, 0\)\)"),
    (["--x", "{x}", "--y", "{y}", "--alpha", "0.5"], r"alpha must be in \[1"),
    (["--x", "{x}", "--y", "{y}", "--bandwidth", "0"], r"bandwidth must be in \(0"),
    (["--x", "{x}", "--y", "{y}", "--level", "2"], r"level must be in \(0, 1\)"),
    (["--x", "{x}", "--y", "{missing}"], "--y: cannot read"),
    (["--x", "{x}"], "--x and --y go together"),
    ([], "give either --x FILE --y FILE or --mechanism"),
    (["--mechanism", "no_such_module_xyz:f", "--d0", "a:b", "--d1", "a:b", "--n", "10"],
     "--mechanism: cannot import module 'no_such_module_xyz'"),
    (["--mechanism", "math:sqrt", "--n", "10"], "--mechanism needs --d0"),
    (["--x", "{x}", "--y", "{y}", "--reference-param", "sigma=1"], "needs --reference"),
    (["--x", "{x}", "--y", "{y}", "--reference", "gaussian", "--reference-param",
      "sigma=-1", "--shift", "4", "0", "0", "0"], "sigma must be in"),
])
def test_audit_bad_input_is_one_line_and_status_2(capsys, npy, tmp_path, args, message):
    paths = {**{k: str(v) for k, v in npy.items()}, "missing": str(tmp_path / "missing.npy")}
    argv = ["audit", "--epsilon", "1", "--delta", "0.01", *[a.format(**paths) for a in args]]
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    assert len(err.splitlines()) == 1 and err.startswith("accounting: error: ")
    assert re.search(message, err), err


def test_audit_bad_delta_and_missing_epsilon(capsys, npy):
    code, _, err = run(capsys, "audit", "--x", npy["x"], "--y", npy["y"], "--epsilon", 1,
                       "--delta", 0)
    assert code == 2 and r"delta must be in (0, 1)" in err
    code, _, err = run(capsys, "audit", "--x", npy["x"], "--y", npy["y"], "--delta", 0.1)
    assert code == 2 and "--epsilon" in err and len(err.splitlines()) == 1


def test_audit_subprocess_exit_status(npy):
    proc = subprocess.run([sys.executable, "-m", "accounting", "audit", "--x",
                           str(npy["nan"]), "--y", str(npy["y"]), "--epsilon", "1",
                           "--delta", "0.01"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.strip() == (f"accounting: error: --x: {str(npy['nan'])!r} holds a "
                                   f"non-finite value (nan at index (0, 0)); samples must "
                                   f"be finite")


def test_audit_bandwidth_that_underflows_the_kernel_is_refused_with_its_range(capsys, npy):
    """--bandwidth 1e-300 was an internal ZeroDivisionError (h² underflows); 0.01 below
    the data's scale silently gave Gram matrices of 0. Both are refused naming
    --bandwidth and the range [d/√708, d·2^26], d the typical distance of x and y."""
    x, y = np.load(npy["x"]), np.load(npy["y"])
    cross = np.sqrt(((x[:, None, :] - y[None, :, :]) ** 2).sum(axis=2))
    pattern = re.compile(r"^accounting: error: bandwidth \(--bandwidth\) = (\S+) (underflows the "
                         r"RBF kernel|rounds the RBF kernel to 1).* at the typical distance d = "
                         r"(\S+) between x and y .*usable range \[(\S+), (\S+)\] \(d/√708 to "
                         r"d·2\^26\)")
    for h, what in (("1e-300", "underflows"), ("1e-160", "underflows"), ("0.01", "underflows"),
                    ("1e300", "rounds")):
        code, out, err = run(capsys, "audit", "--x", npy["x"], "--y", npy["y"], "--epsilon", 1,
                             "--delta", 0.005, "--seed", 7, "--bandwidth", h)
        assert code == 2 and out == "" and len(err.splitlines()) == 1, err
        found = pattern.search(err)
        assert found is not None and found.group(2).startswith(what), err
        d, lo, hi = (float(found.group(k)) for k in (3, 4, 5))
        assert cross.min() <= d <= cross.max()              # a distance of these samples
        assert lo == pytest.approx(d / np.sqrt(708.0), rel=2e-3)
        assert hi == pytest.approx(d * 2.0 ** 26, rel=2e-3)
    code, out, _ = run(capsys, "audit", "--x", npy["x"], "--y", npy["y"], "--epsilon", 1,
                       "--delta", 0.005, "--seed", 7, "--bandwidth", 1.0)
    assert code == 0 and "REJECT at level 0.05" in out


def test_audit_identical_samples_warn_that_the_bandwidth_collapsed(capsys, tmp_path):
    """All samples identical: still NOT REJECTED (nothing to detect), now with a
    warning line in the report and a Python warning on stderr."""
    same = tmp_path / "same.npy"
    np.save(same, np.ones((200, 2)))
    code, out, err = run(capsys, "audit", "--x", same, "--y", same, "--epsilon", 1,
                         "--delta", 1e-5, "--seed", 1)
    assert code == 0 and "NOT REJECTED at level 0.05" in out
    assert "  warning: every training sample of x coincides with every one of y" in out
    assert "the bandwidth collapses" in out
    assert err.startswith("accounting: warning: rkrd audit: every training sample")
    code, out, _ = run(capsys, "audit", "--x", same, "--y", same, "--epsilon", 1,
                       "--delta", 1e-5, "--seed", 1, "--json")
    [note] = json.loads(out)["warnings"]
    assert "(all distances 0)" in note

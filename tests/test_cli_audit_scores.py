"""``accounting audit --scores FILE --inclusion FILE``: the one-run canary audit from the
command line, the auditor chosen by what it offers, one-line errors with status 2."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from accounting.cli.app import main
from accounting.registry.registry import default_registry
from accounting_onerun import gaussian_canaries


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def files(tmp_path):
    s, b = gaussian_canaries(1000, 8.0, 1e-5, np.random.default_rng(2))
    paths = {"s": tmp_path / "s.npy", "b": tmp_path / "b.txt", "bnpy": tmp_path / "b.npy",
             "stxt": tmp_path / "s.txt", "nan": tmp_path / "nan.txt",
             "bad": tmp_path / "bad.txt", "short": tmp_path / "short.txt",
             "obj": tmp_path / "obj.npy", "words": tmp_path / "words.txt"}
    np.save(paths["s"], s)
    np.save(paths["bnpy"], b)
    np.savetxt(paths["b"], b, fmt="%d")
    np.savetxt(paths["stxt"], s)
    paths["nan"].write_text("1.0\nnan\n2.0\n")
    paths["bad"].write_text("0\n1\n2\n")
    paths["short"].write_text("0\n1\n")
    paths["words"].write_text("0 1 yes\n")
    np.save(paths["obj"], np.array([{"a": 1}, 2], dtype=object), allow_pickle=True)
    return paths, s, b


def test_scores_audit_matches_the_api(capsys, files):
    p, s, b = files
    code, out, err = run(capsys, "audit", "--scores", p["s"], "--inclusion", p["b"],
                         "--epsilon", 1, "--json")
    assert code == 0 and err == ""
    data = json.loads(out)
    api = default_registry().auditors["onerun"].audit_scores(s, b, epsilon=1.0)
    assert data["epsilon_lower_bound"] == api.epsilon_lower_bound > 1.0
    assert data["rejected"] is True and data["family"] == "gdp"
    # text and .npy inputs are the same numbers
    code, out2, _ = run(capsys, "audit", "--scores", p["stxt"], "--inclusion", p["bnpy"],
                        "--epsilon", 1, "--json")
    assert code == 0 and json.loads(out2)["epsilon_lower_bound"] == pytest.approx(
        api.epsilon_lower_bound, rel=1e-6)


def test_scores_audit_options_and_exit_status(capsys, files):
    p, s, b = files
    code, out, _ = run(capsys, "audit", "--scores", p["s"], "--inclusion", p["b"],
                       "--analysis", "eps-delta", "--abstain", 900, "--delta", 1e-6,
                       "--level", 0.1)
    assert code == 0 and "arXiv:2305.08846" in out and "fixed, 900 of 1000" in out
    api = default_registry().auditors["onerun"].audit_scores(
        s, b, analysis="eps-delta", abstain=900, delta=1e-6, level=0.1)
    assert f"ε ≥ {api.epsilon_lower_bound:.4f}" in out
    code, _, _ = run(capsys, "audit", "--scores", p["s"], "--inclusion", p["b"],
                     "--epsilon", 1, "--fail-on-reject")
    assert code == 3
    code, _, _ = run(capsys, "audit", "--scores", p["s"], "--inclusion", p["b"],
                     "--epsilon", 30, "--fail-on-reject")
    assert code == 0


@pytest.mark.parametrize("argv, message", [
    (["--scores", "{nan}", "--inclusion", "{bad}"], "scores must be finite"),
    (["--scores", "{stxt}", "--inclusion", "{bad}"], "same length"),
    (["--scores", "{bad}", "--inclusion", "{bad}"], "inclusion must hold only 0 and 1"),
    (["--scores", "{s}", "--inclusion", "{short}"], "same length"),
    (["--scores", "{s}", "--inclusion", "{words}"], "not a number"),
    (["--scores", "{obj}", "--inclusion", "{b}"], "nothing is unpickled"),
    (["--scores", "{s}"], "--scores and --inclusion go together"),
    (["--scores", "{s}", "--inclusion", "{b}", "--abstain", "1000"], "abstain"),
    (["--scores", "{s}", "--inclusion", "{b}", "--analysis", "magic"], "analysis must be"),
    (["--scores", "{s}", "--inclusion", "{b}", "--x", "{s}"], "cannot be combined with --x"),
    (["--scores", "{s}", "--inclusion", "{b}", "--auditor", "rkrd"], "offers no audit_scores"),
    (["--scores", "{s}", "--inclusion", "{b}", "--auditor", "onerum"], "did you mean 'onerun'"),
    (["--x", "{s}", "--y", "{s}", "--abstain", "3"], "--abstain belong to a one-run audit"),
    (["--x", "{s}", "--y", "{s}"], "--epsilon E and --delta D are required"),
])
def test_bad_input_is_one_line_with_status_2(capsys, files, argv, message):
    p, _, _ = files
    code, out, err = run(capsys, "audit", *[a.format(**p) for a in argv])
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and message in err, err


def test_the_sample_audit_still_finds_rkrd_by_capability(capsys, tmp_path):
    """Two auditors are registered, but only rkrd offers audit_samples: no --auditor needed."""
    rng = np.random.default_rng(0)
    np.save(tmp_path / "x.npy", rng.normal(size=(60, 2)) + 4.0)
    np.save(tmp_path / "y.npy", rng.normal(size=(60, 2)))
    code, out, _ = run(capsys, "audit", "--x", tmp_path / "x.npy", "--y", tmp_path / "y.npy",
                       "--epsilon", 1, "--delta", 0.01, "--seed", 1)
    assert code == 0 and out.startswith("RKRD audit")


def test_subprocess_entry_point(files):
    p, _, _ = files
    done = subprocess.run([sys.executable, "-m", "accounting", "audit", "--scores", str(p["s"]),
                           "--inclusion", str(p["b"])], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0 and "One-run canary audit" in done.stdout

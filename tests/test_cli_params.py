"""Vector and mechanism-valued parameters on the command line and in TOML workloads:
Gaussian-mixture weights, and the base of the subsampling wrappers."""

from __future__ import annotations

import json

import numpy as np
import pytest

import accounting
from accounting import Accountant
from accounting.cli.app import main
from accounting.workload import parse_workload
from accounting_mechanisms.subsampling import PoissonSubsampled, SampledWithoutReplacement


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_vector_parameters_on_the_command_line(capsys):
    code, out, err = run(capsys, "epsilon", "gaussian_mixture", "--weights", "0.25", "0.75",
                         "--means", "0", "0", "--scales", "2", "2", "--delta", "1e-5",
                         "--accountant", "rdp", "--json")
    assert code == 0, err
    payload = json.loads(out)
    assert payload["params"]["weights"] == [0.25, 0.75]
    # two equal components are the Gaussian N(0, 2²): its RDP answer, from the library
    expected = Accountant().compose(accounting.mechanism("gaussian", sigma=2.0)).under(
        "rdp").epsilon(1e-5)
    got = payload["results"]["rdp"]["epsilon"][0]
    assert got == pytest.approx(float(expected), rel=1e-9)


def test_mechanism_parameter_on_the_command_line(capsys):
    base = '{name = "discrete_gaussian", sigma = 2.0}'
    code, out, err = run(capsys, "epsilon", "poisson_subsampled", "--base", base, "--q", "0.05",
                         "--compose", "20", "--delta", "1e-6", "--accountant", "rdp", "--json")
    assert code == 0, err
    payload = json.loads(out)
    assert payload["params"]["base"] == {"name": "discrete_gaussian", "sigma": 2.0,
                                         "sensitivity": 1.0, "neighbouring": "add_remove"}
    mech = PoissonSubsampled(accounting.mechanism("discrete_gaussian", sigma=2.0), 0.05)
    expected = Accountant().compose(mech, 20).under("rdp").epsilon(1e-6)
    assert payload["results"]["rdp"]["epsilon"][0] == pytest.approx(float(expected), rel=1e-9)


@pytest.mark.parametrize("argv, message", [
    (["--weights", "0.5", "x", "--means", "0", "1", "--scales", "1", "1"], "--weights"),
    (["--weights", "0.5", "0.6", "--means", "0", "1", "--scales", "1", "1"], "sum to 1"),
    (["--weights", "0.5", "0.5", "--means", "0", "--scales", "1", "1"], "same length"),
])
def test_bad_vector_parameters_are_one_line_errors(capsys, argv, message):
    code, out, err = run(capsys, "epsilon", "gaussian_mixture", *argv, "--delta", "1e-5")
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and message in err


@pytest.mark.parametrize("base, message", [
    ("{name = 'gaussian', sigma = -1.0}", "sigma"),
    ("{sigma = 1.0}", "base must be a table"),
    ("gaussian", "inline table"),
    ("{name = 'nope'}", "nope"),
    ("{name = 'gaussian', sigma = 1.0, neighbouring = 'replace_one', sensitivity = 2.0}",
     "sampled_without_replacement"),
])
def test_bad_mechanism_parameters_are_one_line_errors(capsys, base, message):
    code, out, err = run(capsys, "epsilon", "poisson_subsampled", "--base", base, "--q", "0.1",
                         "--delta", "1e-5")
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and message in err


def test_workload_file_with_vectors_and_a_nested_base():
    text = """
    delta = 1e-6
    [[mechanism]]
    name = "gaussian_mixture"
    weights = [0.5, 0.5]
    means = [-0.5, 0.5]
    scales = [1.0, 1.0]
    count = 3

    [[mechanism]]
    name = "sampled_without_replacement"
    base = { name = "gaussian", sigma = 2.0, sensitivity = 2.0, neighbouring = "replace_one" }
    batch_size = 100
    dataset_size = 10000
    count = 50
    """
    work = parse_workload(text)
    mix, wor = (u.mechanism for u in work.uses)
    assert mix.weights == (0.5, 0.5) and mix.means == (-0.5, 0.5)
    assert isinstance(wor, SampledWithoutReplacement)
    assert wor.gamma == pytest.approx(0.01) and wor.base.sigma == 2.0
    assert work.uses[1].as_dict()["params"]["base"]["neighbouring"] == "replace_one"
    # and it accounts: the WOR part is the remove direction of a subsampled Gaussian
    eps = work.accountant().under("rdp").epsilon(1e-6)
    assert np.isfinite(eps) and eps > 0


def test_workload_rejects_a_scalar_for_a_vector():
    with pytest.raises((TypeError, ValueError), match="weights must be a non-empty list"):
        parse_workload('[[mechanism]]\nname = "gaussian_mixture"\nweights = 1.0\n'
                       'means = [0.0]\nscales = [1.0]\n')


def test_every_toml_workload_in_the_docs_parses():
    import re
    from pathlib import Path
    docs = Path(__file__).resolve().parent.parent / "docs"
    blocks = [b for page in sorted(docs.glob("*.md"))
              for b in re.findall(r"```toml\n(.*?)```", page.read_text(), re.S)
              if "[[mechanism]]" in b]
    assert blocks
    import tomllib

    from accounting.parallel.sweep import plan_sweep
    for block in blocks:
        if re.search(r"^query\s*=", block, re.M):      # a sweep file (docs/scaling.md)
            assert plan_sweep(tomllib.loads(block))
        else:
            assert parse_workload(block).uses

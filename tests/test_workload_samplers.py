"""Workload files and the command line name the batch sampler by the mechanism:
``subsampled_gaussian`` / ``poisson_subsampled`` (Poisson, add/remove) and
``sampled_without_replacement`` (a fixed-size batch) with its relation
``neighbouring = "add_remove" | "replace_one"``."""

from __future__ import annotations

import json

import pytest

import accounting
from accounting import Accountant
from accounting.cli.app import main
from accounting.workload import WorkloadError, parse_workload, workload_from_dict

DELTA = 1e-5
WORKLOAD = """
description = "DP-SGD, one epoch of 234 steps under each sampler"
delta = 1e-5

[[mechanism]]
name = "subsampled_gaussian"          # Poisson sampling at q = b/n
q = 0.004266666666666667
sigma = 1.1
count = 234

[[mechanism]]
name = "sampled_without_replacement"  # fixed-size batches, add/remove datasets
base = { name = "gaussian", sigma = 2.2, sensitivity = 2.0, neighbouring = "replace_one" }
batch_size = 256
dataset_size = 60000
neighbouring = "add_remove"
count = 234

[[mechanism]]
name = "sampled_without_replacement"  # fixed-size batches, replace-one datasets
base = { name = "gaussian", sigma = 2.2, sensitivity = 2.0, neighbouring = "replace_one" }
batch_size = 256
dataset_size = 60000
count = 234
"""


def test_a_workload_names_each_sampler_and_its_relation():
    work = parse_workload(WORKLOAD)
    poisson, ar, ro = (u.mechanism for u in work.uses)
    assert ar.neighbouring is accounting.Neighbouring.ADD_REMOVE
    assert ro.neighbouring is accounting.Neighbouring.REPLACE_ONE
    assert ar.base.neighbouring is accounting.Neighbouring.REPLACE_ONE
    # a fixed-size batch under add/remove with clipping norm 1 (replace-one Δ = 2) costs
    # what Poisson sampling costs at half the noise: σ = 2.2 here is σ = 1.1 there
    eps = [Accountant(step=1e-4).compose(m, count=234).epsilon(DELTA) for m in (poisson, ar)]
    assert eps[1] == pytest.approx(eps[0], rel=1e-9)
    # the as_dict form reads back to the same ledger, relations included
    again = workload_from_dict(work.as_dict())
    assert again.ledger == work.ledger
    assert work.as_dict()["mechanisms"][1]["params"]["neighbouring"] == "add_remove"


@pytest.mark.parametrize("entry, message", [
    ('batch_size = 60000\ndataset_size = 60000\nneighbouring = "add_remove"',
     "dataset_size − 1"),
    ('batch_size = 70000\ndataset_size = 60000', "batch_size must be at most dataset_size"),
    ('batch_size = 256\ndataset_size = 600.5', "dataset_size must be an integer"),
    ('batch_size = 256\ndataset_size = 60000\nneighbouring = "shuffled"', "neighbouring"),
])
def test_bad_sampler_entries_name_the_entry(entry, message):
    text = ('[[mechanism]]\nname = "sampled_without_replacement"\n'
            'base = { name = "gaussian", sigma = 1.0, neighbouring = "replace_one" }\n' + entry)
    with pytest.raises(WorkloadError, match=rf"mechanism #1: .*{message}"):
        parse_workload(text)


def test_an_add_remove_base_is_refused_in_a_workload():
    text = ('[[mechanism]]\nname = "sampled_without_replacement"\n'
            'base = { name = "gaussian", sigma = 1.0 }\nbatch_size = 10\ndataset_size = 100\n'
            'neighbouring = "add_remove"\n')
    with pytest.raises(WorkloadError, match="must be declared under replace_one"):
        parse_workload(text)


def test_the_command_line_names_the_sampler(capsys):
    base = '{name = "gaussian", sigma = 2.2, sensitivity = 2.0, neighbouring = "replace_one"}'
    code = main(["epsilon", "sampled_without_replacement", "--base", base, "--batch_size", "256",
                 "--dataset_size", "60000", "--neighbouring", "add_remove", "--compose", "234",
                 "--delta", "1e-5", "--accountant", "pld", "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    payload = json.loads(out)
    assert payload["params"]["neighbouring"] == "add_remove"
    mech = accounting.mechanism(
        "sampled_without_replacement", batch_size=256, dataset_size=60000,
        neighbouring="add_remove",
        base=accounting.mechanism("gaussian", sigma=2.2, sensitivity=2.0,
                                  neighbouring="replace_one"))
    lo, hi = Accountant(step=payload["step"]).compose(mech, count=234).epsilon_interval(DELTA)
    assert payload["results"]["pld"]["epsilon"] == [pytest.approx(hi, rel=1e-12)]
    assert payload["results"]["pld"]["interval"] == [[pytest.approx(lo, rel=1e-12),
                                                      pytest.approx(hi, rel=1e-12)]]
    # b = n under add/remove: one line on stderr, exit status 2
    code = main(["epsilon", "sampled_without_replacement", "--base", base, "--batch_size", "10",
                 "--dataset_size", "10", "--neighbouring", "add_remove", "--delta", "1e-5"])
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and err.count("\n") == 1 and "dataset_size − 1" in err

"""``accounting run`` (alias ``demo``; also ``accounting`` with no command): account
for a job or a workload under every accountant, with timings and a trade-off summary.

The core defines no job: plugins register named jobs
(``hookspecs.accounting_register_jobs``) and the one a built-in plugin marks as the
default runs when neither ``--job`` nor ``--workload`` is given.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np

from accounting import __version__
from accounting.analysis.risk import GDP_ALPHA, tradeoff_gdp_mu
from accounting.cli import evaluate as ev
from accounting.cli.base import PROG, CLIError, refusal_reason, unknown_name_error
from accounting.cli.output import (
    json_num,
    print_json,
    print_note,
    results_json,
    results_table,
    shorten,
    show_num,
    show_seconds,
)
from accounting.cli.query import query_options
from accounting.registry.registry import Job, Registry
from accounting.workload import Workload, load_workload, workload_from_dict

__all__: list[str] = []

#: α at which the job's trade-off function is reported
_ALPHAS = (0.001, 0.01, 0.1)


def add_parser(sub: Any) -> None:
    p = sub.add_parser("run", aliases=["demo"], help="the main job (default): the default "
                       "job a plugin registers, or --job NAME, or --workload FILE",
                       description="Account for a workload (by default the default job "
                                   "registered by a plugin; see 'accounting mechanisms') under "
                                   "every accountant, with timings and a trade-off summary.")
    p.add_argument("--workload", metavar="FILE", help="a TOML workload instead of the "
                   "default job")
    p.add_argument("--job", metavar="NAME", help="a job registered by a plugin (listed by "
                   "'accounting mechanisms') instead of the default one")
    query_options(p, "epsilon")
    p.set_defaults(handler=run, takes_extras=False)


def _job_workload(job: Job, registry: Registry) -> Workload:
    """The workload of a registered job; where it came from is its source."""
    source = (f"built-in {job.description} workload" if job.plugin in registry.builtin_plugins
              else f"{job.description} workload of plugin {job.plugin!r}")
    return workload_from_dict(job.table, source, registry)


def _workload(ns: argparse.Namespace, registry: Registry) -> tuple[Workload, dict[str, str]]:
    """The workload to run and the notes of its job (accountant name → note)."""
    if ns.workload is not None:
        if ns.job is not None:
            raise CLIError("give either --job NAME or --workload FILE, not both")
        return load_workload(ns.workload, registry), {}
    if ns.job is not None:
        if ns.job not in registry.jobs:
            raise unknown_name_error("job", ns.job, registry.jobs)
        job = registry.jobs[ns.job]
    else:
        job = registry.default_job()
        if job is None:
            raise CLIError(f"no default job is registered (the core defines none; a plugin "
                           f"does): give --workload FILE or --job NAME (registered jobs: "
                           f"{', '.join(sorted(registry.jobs)) or 'none'})")
    return _job_workload(job, registry), dict(job.notes)


def run(ns: argparse.Namespace, extras: list[str], registry: Registry) -> int:
    t_start = time.perf_counter()
    workload, job_notes = _workload(ns, registry)
    values = ev.query_values("epsilon", ns.delta, workload, default=(1e-5,))
    step = ev.workload_step(ns.step, workload)
    names = ev.accountant_names(ns.accountant, workload)
    acct, results = ev.evaluate_workload(workload, "epsilon", values, names, step)
    notes = ev.looseness_notes("epsilon", results)

    t0 = time.perf_counter()
    tradeoff = tradeoff_error = None
    try:
        tradeoff = acct.tradeoff()
        alphas = np.array(_ALPHAS)
        betas = np.atleast_1d(tradeoff.beta(alphas))
        mu = tradeoff_gdp_mu(tradeoff, GDP_ALPHA)
    except Exception as exc:  # the trade-off needs the PLD; report its refusal
        tradeoff_error = refusal_reason(exc)
        if tradeoff_error is None:
            raise
    t_tradeoff = time.perf_counter() - t0
    extra_notes = [note for name, note in job_notes.items() if name in results]
    total = time.perf_counter() - t_start

    if ns.json:
        payload = {
            "query": "epsilon",
            "workload": workload.as_dict(),
            "delta": [json_num(v) for v in values],
            "step": step,
            "bound": "upper bound, max over neighbouring directions",
            "results": results_json(results),
            "seconds": total,
        }
        if tradeoff is not None:
            payload["tradeoff"] = {
                "alpha": list(_ALPHAS), "beta": [json_num(b) for b in betas],
                "provenance": str(tradeoff.provenance),
                "gdp_mu": json_num(mu), "gdp_alpha": GDP_ALPHA,
                "gdp_note": "summary, not a bound: μ with G_μ(α) = β at one α",
                "seconds": t_tradeoff,
            }
        else:
            payload["tradeoff"] = {"error": tradeoff_error}
        notes = [*notes, *extra_notes]
        if notes:
            payload["notes"] = notes
        print_json("run", payload)
        return 0

    title = workload.description or workload.describe()
    print(shorten(f"{PROG} {__version__}: {title}"))
    print(shorten(f"  workload: {workload.describe()}  ({workload.source})"))
    print(f"  ε(δ): upper bounds, max over add/remove (PLD step {step:g}; the PLD interval is "
          f"its certified bracket)")
    print("\n".join(results_table("epsilon", values, results)))
    for note in [*notes, *extra_notes]:
        print_note(note)
    if tradeoff is None:
        print(f"  trade-off (f-DP) of the composed PLD: refused: {tradeoff_error}")
    else:
        print(f"  trade-off (f-DP) of the composed PLD, min over directions "
              f"({show_seconds(t_tradeoff)}):")
        print("    " + "   ".join(f"β(α={a:g}) = {show_num(b, 6)}" for a, b in zip(_ALPHAS, betas)))
        print(f"    summary, not a bound: ≈ μ-GDP with μ = {show_num(mu, 4)} (G_μ(α) = β at "
              f"α = {GDP_ALPHA:g})")
    print(f"  total {show_seconds(total)}")
    return 0

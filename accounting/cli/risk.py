"""``accounting risk``: what an attacker can achieve against a mechanism composed
``--compose`` times, each figure a sound bound with its direction stated.

::

    accounting risk MECHANISM --PARAM VALUE … [--compose K] [--fpr A …] [--prior P]
                    [--gdp-alpha A] [--step S] [--accountant pld|rdp|zcdp] [--json]
                    [--plot FILE]

From the certified (pessimistic) side of the composition's trade-off curve and
profile (``accounting.analysis.risk``), worst over both neighbouring directions —
or, with ``--accountant rdp|zcdp``, from the composed Rényi curve (the TPR by the
binary Rényi bound, advantage and Bayes risk by its improved-conversion profile;
upper sides only, no ``--plot``):

* TPR at each FPR — an upper bound on every attack's true-positive rate;
* advantage (TPR − FPR) — an upper bound;
* Bayes risk at the prior — a lower bound on every attack's error probability;
* the μ-GDP summary at one α — a summary of one point of the curve, not a bound;
* the CLT approximation μ and its TPRs (``accounting.analysis.clt``) — an
  approximation, not a bound, shown beside the bounds for comparison.

``--plot FILE`` draws the membership-inference ROC bound on log-log axes, the
queried FPRs marked (``plot_roc``; needs matplotlib).
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np

from accounting.accountant import ACCOUNTANTS
from accounting.analysis.clt import clt_mu, gdp_tpr
from accounting.analysis.risk import (
    GDP_ALPHA,
    advantage,
    bayes_risk,
    gdp_mu,
    tpr_at_fpr,
    tradeoff_gdp_mu,
)
from accounting.cli import evaluate as ev
from accounting.cli.base import PROG, CLIError, count_text, parse_float, refusal_reason
from accounting.cli.output import json_num, print_json, shorten, show_num
from accounting.cli.parser import mechanism_help, mechanism_names, mechanism_use
from accounting.cli.query import check_plot, write_plot
from accounting.curves.pld import DEFAULT_STEP, PLD
from accounting.curves.rdp import RDP
from accounting.curves.zcdp import ZCDP
from accounting.registry.registry import Registry
from accounting.validation import check_array
from accounting.workload import MAX_COUNT_TEXT, Workload

__all__: list[str] = []

#: false-positive rates reported when ``--fpr`` is not given
DEFAULT_FPRS = (0.001, 0.01, 0.1)

_DESCRIPTION = ("Operational risk of MECHANISM composed --compose times: TPR at FPR and "
                "advantage (upper bounds), Bayes risk (a lower bound on the attacker's "
                "error), the μ-GDP summary and the CLT approximation (neither a bound). "
                "Mechanism parameters are given as --NAME VALUE (see 'accounting mechanisms').")


def _options(p: argparse.ArgumentParser) -> None:
    p.add_argument("-h", "--help", action="store_true", help="show this help and exit")
    p.add_argument("mechanism", nargs="?", metavar="MECHANISM",
                   help="a registered mechanism (see 'accounting mechanisms')")
    p.add_argument("--compose", type=count_text, default=None, metavar="K",
                   help=f"number of independent uses of MECHANISM (default 1; at most "
                        f"{MAX_COUNT_TEXT})")
    p.add_argument("--fpr", type=parse_float, nargs="+", metavar="A", default=None,
                   help="false-positive rates in [0, 1] at which to bound the TPR "
                        f"(default {' '.join(map(str, DEFAULT_FPRS))})")
    p.add_argument("--prior", type=parse_float, default=0.5, metavar="P",
                   help="prior probability in (0, 1) that the target is in the data "
                        "(default 0.5)")
    p.add_argument("--gdp-alpha", type=parse_float, default=GDP_ALPHA, metavar="A",
                   help=f"α at which the μ-GDP summary reads the curve (default {GDP_ALPHA})")
    p.add_argument("--step", type=parse_float, default=None, metavar="S",
                   help=f"PLD grid step of the privacy loss (default {DEFAULT_STEP:g})")
    p.add_argument("--accountant", choices=tuple(ACCOUNTANTS), default="pld",
                   help="the composition the figures are read from: the PLD (default; "
                        "certified bracket) or the Rényi curve (rdp, zcdp; upper bounds)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--plot", metavar="FILE", default=None,
                   help="also draw the ROC bound (TPR against FPR, log-log, the queried "
                        "FPRs marked) to FILE (.png, .pdf, .svg; needs matplotlib)")


def add_parser(sub: Any) -> None:
    """The ``risk`` subcommand."""
    p = sub.add_parser("risk", add_help=False, help="attack risk bounds of a mechanism",
                       description=_DESCRIPTION)
    _options(p)
    p.set_defaults(handler=run, takes_extras=True)


def _clt(workload: Workload, fprs: np.ndarray, step: float) -> dict[str, Any]:
    """The CLT approximation's μ and TPRs, or the reason it has none."""
    try:
        mu = clt_mu([(u.mechanism, u.count) for u in workload.uses], step=step)
    except Exception as exc:
        reason = refusal_reason(exc)
        if reason is None:
            raise
        return {"error": reason}
    return {"mu": mu, "tpr": gdp_tpr(mu, fprs)}


def run(ns: argparse.Namespace, extras: list[str], registry: Registry) -> int:
    prog = f"{PROG} risk"
    if ns.help:
        return mechanism_help(prog, ns.mechanism, registry, _DESCRIPTION, _options)
    if ns.mechanism is None:
        raise CLIError(f"give a MECHANISM (one of {mechanism_names(registry)})")
    count = 1 if ns.compose is None else ns.compose
    use = mechanism_use(prog, ns.mechanism, extras, registry, count,
                         options=getattr(ns, "command_options", ()))
    workload = Workload((use,), source="command line")
    fprs = check_array("fpr", list(ns.fpr if ns.fpr is not None else DEFAULT_FPRS),
                       lo=0.0, hi=1.0)
    prior = float(check_array("prior", ns.prior, lo=0.0, hi=1.0, lo_open=True, hi_open=True))
    gdp_alpha = float(check_array("gdp-alpha", ns.gdp_alpha, lo=0.0, hi=1.0, lo_open=True,
                                  hi_open=True))
    step = ev.workload_step(ns.step, workload)
    check_plot(ns.plot)

    acct = workload.accountant(step)
    if ns.accountant != "pld":
        if ns.plot is not None:
            raise CLIError("--plot draws the PLD's trade-off curve; drop --accountant "
                           f"{ns.accountant} to plot")
        renyi = acct.curve(RDP) if ns.accountant == "rdp" else acct.curve(ZCDP)
        tpr, tpr_lo = tpr_at_fpr(renyi, fprs), None
        adv, adv_lo = advantage(renyi), None
        risk = bayes_risk(renyi, prior)
        mu = float(gdp_mu(gdp_alpha, 1.0 - float(tpr_at_fpr(renyi, gdp_alpha))))
        provenance = str(renyi.provenance)
    else:
        pld = acct.curve(PLD)
        tradeoff = acct.tradeoff()
        tpr = tpr_at_fpr(tradeoff, fprs)
        tpr_lo = tpr_at_fpr(tradeoff, fprs, bound="lower") if tradeoff.lower is not None else None
        adv = advantage(pld)
        adv_lo = advantage(pld, bound="lower") if pld.lower is not None else None
        risk = bayes_risk(pld, prior)
        mu = tradeoff_gdp_mu(tradeoff, gdp_alpha)
        provenance = str(tradeoff.provenance)
    clt = _clt(workload, fprs, step)
    header = use.describe()

    if ns.plot is not None:
        from accounting.plot import plot_roc

        def draw(ax: Any) -> None:
            plot_roc(tradeoff, ax, fprs=fprs, label=f"×{count}")
        write_plot(ns.plot, draw, header, figsize=(5.0, 5.0))

    if ns.json:
        payload: dict[str, Any] = {}
        only = use.as_dict()
        payload.update(mechanism=only["name"], params=only["params"], count=only["count"],
                       step=step, direction="max over both neighbouring directions")
        if ns.accountant != "pld":
            payload["accountant"] = ns.accountant
        payload["tpr_at_fpr"] = {
            "bound": "upper bound on every attack's TPR",
            "fpr": [json_num(a) for a in fprs], "tpr": [json_num(t) for t in tpr],
            **({"tpr_lower": [json_num(t) for t in tpr_lo]} if tpr_lo is not None else {})}
        payload["advantage"] = {"bound": "upper bound on every attack's TPR − FPR",
                                "value": json_num(adv),
                                **({"lower": json_num(adv_lo)} if adv_lo is not None else {})}
        payload["bayes_risk"] = {"bound": "lower bound on every attack's error probability",
                                 "prior": prior, "value": json_num(risk)}
        payload["gdp"] = {"mu": json_num(mu), "alpha": gdp_alpha,
                          "note": "summary, not a bound: μ with G_μ(α) = β at one α"}
        payload["clt"] = ({"error": clt["error"]} if "error" in clt else
                          {"mu": json_num(clt["mu"]),
                           "tpr": [json_num(t) for t in clt["tpr"]],
                           "note": "CLT approximation (arXiv:1905.02383, Thm 3.5), not a "
                                   "bound: it can under-report the risk"})
        payload["provenance"] = provenance
        print_json("risk", payload)
        return 0

    print(shorten(header))
    print("attack risk: worst over both neighbouring directions "
          + (f"(PLD step {step:g})" if ns.accountant == "pld" else f"(under {ns.accountant})"))
    print("  TPR at FPR — upper bound on every attack's TPR"
          + (" [optimistic side]" if tpr_lo is not None else ""))
    for i, a in enumerate(fprs):
        lo = f"  [{show_num(tpr_lo[i])}]" if tpr_lo is not None else ""
        print(f"    FPR {show_num(a)}: TPR ≤ {show_num(tpr[i])}{lo}")
    lo = f"  [{show_num(adv_lo)}]" if adv_lo is not None else ""
    print(f"  advantage (TPR − FPR) — upper bound: ≤ {show_num(adv)}{lo}")
    print(f"  Bayes risk at prior {show_num(prior)} — lower bound on every attack's error: "
          f"≥ {show_num(risk)}")
    print(f"  μ-GDP summary at α = {show_num(gdp_alpha)}: μ = {show_num(mu)} (summary of one point, "
          f"not a bound)")
    if "error" in clt:
        print(f"  CLT approximation: none ({clt['error']})")
    else:
        tprs = ", ".join(f"FPR {show_num(a)}: {show_num(t, 6)}" for a, t in zip(fprs, clt["tpr"]))
        print(f"  CLT approximation (not a bound; may under-report): μ = {show_num(clt['mu'])}; "
              f"TPR {tprs}")
    print(f"provenance: {shorten(provenance)}")
    return 0

"""``accounting mechanisms``: what the plugins registered — mechanisms with their
parameters, converters, auditors, jobs — and the errors of plugins that failed."""

from __future__ import annotations

import argparse
import textwrap
from typing import Any

import attrs

from accounting.cli.output import json_default, print_json
from accounting.cli.parser import option_spellings, parameters_in_order
from accounting.curves.graph import edges
from accounting.pairs.derive import builders
from accounting.registry.registry import Registry
from accounting.workload import parameter_kind

__all__: list[str] = []


def add_parser(sub: Any) -> None:
    p = sub.add_parser("mechanisms", help="list registered mechanisms, converters, "
                       "auditors, jobs and plugin errors")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(handler=run, takes_extras=False)


def run(ns: argparse.Namespace, extras: list[str], registry: Registry) -> int:
    mechs = []
    for name in sorted(registry.mechanisms):
        cls = registry.mechanisms[name]
        # the summary: the docstring's first paragraph whole, not its first line cut
        summary = " ".join((cls.__doc__ or "").strip().split("\n\n", 1)[0].split())
        params = []
        for attr in parameters_in_order(cls):
            required = attr.default is attrs.NOTHING
            params.append({"name": attr.name, "type": parameter_kind(attr), "required": required,
                           "default": None if required else json_default(attr.default)})
        mechs.append({"name": name, "plugin": registry.mechanism_sources.get(name, "?"),
                      "class": f"{cls.__module__}.{cls.__qualname__}",
                      "doc": summary, "parameters": params})
    convs = [{"name": c.name, "source": c.source.__name__, "target": c.target.__name__,
              "exactness": c.exactness.value, "plugin": c.plugin} for c in edges(registry)]
    auditors = [{"name": n, "plugin": p} for n, p in sorted(registry.auditor_sources.items())]
    jobs = [{"name": j.name, "plugin": j.plugin, "description": j.description,
             "default": j.default} for _, j in sorted(registry.jobs.items())]
    builders(registry)   # a plugin's claim on a core curve kind is refused there: an error
    errors = [str(e) for e in registry.errors]
    if ns.json:
        print_json("mechanisms", {"mechanisms": mechs, "converters": convs,
                                  "auditors": auditors, "jobs": jobs, "errors": errors})
        return 0
    print(f"mechanisms ({len(mechs)}):")
    for m in mechs:
        print(f"  {m['name']}  [plugin {m['plugin']}]")
        if m["doc"]:
            print(textwrap.fill(m["doc"], width=96, initial_indent=" " * 6,
                                subsequent_indent=" " * 6))
        ps = ", ".join(f"--{option_spellings(p['name'])[0]} {p['type'].upper()}"
                       + (" (required)" if p["required"] else f" = {p['default']}")
                       for p in m["parameters"])
        print(f"      parameters: {ps}")
    print(f"converters ({len(convs)}):")
    w = max((len(c["name"]) for c in convs), default=0)
    for c in convs:
        edge = f"{c['source']} → {c['target']}"
        print(f"  {c['name'].ljust(w)}  {edge.ljust(28)}  {c['exactness'].ljust(11)}  "
              f"[plugin {c['plugin']}]")
    print(f"auditors ({len(auditors)}):" + ("" if auditors else " none"))
    for a in auditors:
        print(f"  {a['name']}  [plugin {a['plugin']}]")
    print(f"jobs ({len(jobs)}):" + ("" if jobs else " none"))
    for j in jobs:
        print(f"  {j['name']}  {j['description']}{' (default)' if j['default'] else ''}  "
              f"[plugin {j['plugin']}]")
    print(f"plugin errors ({len(errors)}):" + ("" if errors else " none"))
    for e in errors:
        print(f"  {e}")
    return 0

"""How the command line writes numbers, tables, notes and JSON values.

Every command formats through these helpers, so a number reads the same wherever it
appears: ``show_num`` (8 significant digits, ``inf``), ``json_num`` (±∞ as strings: JSON
has no infinity), ``show_seconds``; the result table of ``epsilon``/``delta``/``run``
(``results_table``) and its JSON twin (``results_json``); long provenance shortened
(``shorten``); notes wrapped at 96 columns (``print_note``); every ``--json`` output in
one envelope whose first key names the command (``print_json``).
"""

from __future__ import annotations

import json
import math
import textwrap
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from accounting.vocabulary import Exactness

__all__: list[str] = []


def print_json(command: str, payload: Mapping[str, Any]) -> None:
    """Print the ``--json`` output of ``command``: one JSON object whose first key is
    ``"command"`` (the subcommand's name), the same envelope for every command."""
    body = {"command": command, **{k: v for k, v in payload.items() if k != "command"}}
    print(json.dumps(body, indent=2, ensure_ascii=False))


def show_num(x: float, digits: int = 8) -> str:
    """A number for text output: ``digits`` significant digits, ±∞ as ``inf``/``-inf``."""
    x = float(x)
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return f"{x:.{digits}g}"


def json_num(x: Any) -> Any:
    """A float for JSON; ±∞ as the strings "inf"/"-inf" (JSON has no infinity)."""
    x = float(x)
    if math.isfinite(x):
        return x
    return "inf" if x > 0 else ("-inf" if x < 0 else "nan")


def show_seconds(t: float) -> str:
    """A run time for text output: two decimals below 100 s, whole seconds above."""
    return f"{t:.2f} s" if t < 100 else f"{t:.0f} s"


def show_param(value: Any) -> str:
    """A mechanism parameter for text output (floats through ``show_num``, sequences in brackets)."""
    if isinstance(value, float):
        return show_num(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(show_param(v) for v in value) + "]"
    return str(value)


def json_default(value: Any) -> Any:
    """``json.dumps``' fallback: an enum as its value, plain scalars as they are, else ``repr``."""
    if hasattr(value, "value") and not isinstance(value, (int, float)):
        return value.value
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    return repr(value)


def is_certified(res: dict[str, Any]) -> bool:
    """Whether one accountant's result (a row of ``evaluate_workload``) is certified."""
    return Exactness(res["exactness"]).certified


def results_json(results: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The results of ``evaluate_workload`` for ``--json``: numbers through ``json_num``."""
    out = {}
    for name, res in results.items():
        if "error" in res:
            out[name] = {"error": res["error"], "seconds": res["seconds"]}
            continue
        item: dict[str, Any] = {}
        for key, val in res.items():
            if key in ("epsilon", "delta"):
                item[key] = [json_num(v) for v in val]
            elif key == "interval":
                item[key] = [[json_num(a), json_num(b)] for a, b in val]
            elif key == "rho":
                item[key] = json_num(val)
            else:
                item[key] = val
        out[name] = item
    return out


def aligned(rows: Sequence[Sequence[str]], align: str) -> list[str]:
    """``rows`` as text lines, each column padded to its widest cell: ``align`` has one
    letter per column, ``l`` (left) or ``r`` (right); two spaces indent the table and
    separate the columns, and trailing blanks are cut."""
    if any(len(r) != len(align) for r in rows) or set(align) - {"l", "r"}:
        raise ValueError(f"align must give l or r for each of the rows' columns, got "
                         f"{align!r}")
    widths = [max((len(r[k]) for r in rows), default=0) for k in range(len(align))]
    return ["  " + "  ".join(c.ljust(w) if a == "l" else c.rjust(w)
                             for c, w, a in zip(r, widths, align)).rstrip() for r in rows]


def results_table(query: str, values: np.ndarray, results: dict[str, dict[str, Any]]) -> list[str]:
    """The text table of ``evaluate_workload``'s results: one row per accountant and value,
    the refusals below it."""
    given, answer = ("δ", "ε") if query == "epsilon" else ("ε", "δ")
    rows = [("accountant", given, answer, "certified interval", "time")]
    for name, res in results.items():
        if "error" in res:
            rows.append((name, "", "refused (below)", "", show_seconds(res["seconds"])))
            continue
        for i, v in enumerate(values):
            a = res[query][i]
            interval = ""
            if "interval" in res:
                lo, hi = res["interval"][i]
                interval = f"[{show_num(lo)}, {show_num(hi)}]"
            extra = f"  (ρ = {show_num(res['rho'], 6)})" if "rho" in res and i == 0 else ""
            if not is_certified(res):
                extra += "  (numerical)"
            rows.append((name, show_num(v, 6), show_num(a) + extra, interval,
                         show_seconds(res["seconds"])))
    lines = aligned(rows, "lrllr")
    for name, res in results.items():
        if "error" in res:
            lines.append(textwrap.fill(f"{name} refused: {res['error']}", width=96,
                                       initial_indent="  ", subsequent_indent="    "))
    return lines


#: provenance longer than this is shortened in text output (a workload of thousands of
#: entries has a provenance line per entry); ``--json`` gives it in full
_PROVENANCE_CHARS = 400


def shorten(text: str, limit: int = _PROVENANCE_CHARS) -> str:
    """``text`` cut in the middle to about ``limit`` characters, saying how many were omitted."""
    if len(text) <= limit:
        return text
    head, tail = text[: limit // 2], text[-limit // 3:]
    omitted = len(text) - len(head) - len(tail)
    return f"{head} … [{omitted} characters omitted; --json has all] … {tail}"


def print_note(note: str) -> None:
    """Print ``note`` as an indented ``note:`` paragraph of at most 96 columns."""
    print(textwrap.fill(note, width=96, initial_indent="  note: ", subsequent_indent=" " * 8))


def provenance_lines(results: dict[str, dict[str, Any]]) -> list[str]:
    """One ``name: provenance`` line (shortened) per result that has a provenance."""
    return [f"  {name}: {shorten(res['provenance'])}" for name, res in results.items()
            if "provenance" in res]

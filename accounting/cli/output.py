"""How the command line writes numbers, tables, notes and JSON values.

Every command formats through these helpers, so a number reads the same wherever it
appears: ``_num`` (8 significant digits, ``inf``), ``_json_num`` (±∞ as strings: JSON
has no infinity), ``_seconds``; the result table of ``epsilon``/``delta``/``run``
(``_results_table``) and its JSON twin (``_results_json``); long provenance shortened
(``_short``); notes wrapped at 96 columns (``_print_note``).
"""

from __future__ import annotations

import math
import textwrap
from typing import Any

import numpy as np

from accounting.vocabulary import Exactness

__all__: list[str] = []


def _num(x: float, digits: int = 8) -> str:
    x = float(x)
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return f"{x:.{digits}g}"


def _json_num(x: Any) -> Any:
    """A float for JSON; ±∞ as the strings "inf"/"-inf" (JSON has no infinity)."""
    x = float(x)
    if math.isfinite(x):
        return x
    return "inf" if x > 0 else ("-inf" if x < 0 else "nan")


def _seconds(t: float) -> str:
    return f"{t:.2f} s" if t < 100 else f"{t:.0f} s"


def _show_param(value: Any) -> str:
    if isinstance(value, float):
        return _num(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_show_param(v) for v in value) + "]"
    return str(value)


def _json_default(value: Any) -> Any:
    if hasattr(value, "value") and not isinstance(value, (int, float)):
        return value.value
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    return repr(value)


def _certified(res: dict) -> bool:
    return Exactness(res["exactness"]).certified


def _results_json(results: dict[str, dict]) -> dict:
    out = {}
    for name, res in results.items():
        if "error" in res:
            out[name] = {"error": res["error"], "seconds": res["seconds"]}
            continue
        item: dict[str, Any] = {}
        for key, val in res.items():
            if key in ("epsilon", "delta"):
                item[key] = [_json_num(v) for v in val]
            elif key == "interval":
                item[key] = [[_json_num(a), _json_num(b)] for a, b in val]
            elif key == "rho":
                item[key] = _json_num(val)
            else:
                item[key] = val
        out[name] = item
    return out


def _results_table(query: str, values: np.ndarray, results: dict[str, dict]) -> list[str]:
    given, answer = ("δ", "ε") if query == "epsilon" else ("ε", "δ")
    rows = [("accountant", given, answer, "certified interval", "time")]
    for name, res in results.items():
        if "error" in res:
            rows.append((name, "", "refused (below)", "", _seconds(res["seconds"])))
            continue
        for i, v in enumerate(values):
            a = res[query][i]
            interval = ""
            if "interval" in res:
                lo, hi = res["interval"][i]
                interval = f"[{_num(lo)}, {_num(hi)}]"
            extra = f"  (ρ = {_num(res['rho'], 6)})" if "rho" in res and i == 0 else ""
            if not _certified(res):
                extra += "  (numerical)"
            rows.append((name, _num(v, 6), _num(a) + extra, interval, _seconds(res["seconds"])))
    widths = [max(len(r[k]) for r in rows) for k in range(5)]
    lines = []
    for r in rows:
        cells = [r[0].ljust(widths[0]), r[1].rjust(widths[1]), r[2].ljust(widths[2]),
                 r[3].ljust(widths[3]), r[4].rjust(widths[4])]
        lines.append("  " + "  ".join(cells).rstrip())
    for name, res in results.items():
        if "error" in res:
            lines.append(textwrap.fill(f"{name} refused: {res['error']}", width=96,
                                       initial_indent="  ", subsequent_indent="    "))
    return lines


#: provenance longer than this is shortened in text output (a workload of thousands of
#: entries has a provenance line per entry); ``--json`` gives it in full
_PROVENANCE_CHARS = 400


def _short(text: str, limit: int = _PROVENANCE_CHARS) -> str:
    if len(text) <= limit:
        return text
    head, tail = text[: limit // 2], text[-limit // 3:]
    omitted = len(text) - len(head) - len(tail)
    return f"{head} … [{omitted} characters omitted; --json has all] … {tail}"


def _print_note(note: str) -> None:
    print(textwrap.fill(note, width=96, initial_indent="  note: ", subsequent_indent=" " * 8))


def _provenance_lines(results: dict[str, dict]) -> list[str]:
    return [f"  {name}: {_short(res['provenance'])}" for name, res in results.items()
            if "provenance" in res]

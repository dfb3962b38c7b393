"""The documented command lines, run and compared byte for byte with stored snapshots.

Every ``accounting ...`` line inside a fenced code block of ``README.md`` and
``docs/*.md`` is a candidate. A line is run when it needs nothing but the command
line: no placeholder (``MECHANISM``, ``[--json]``, ``…``), no input file, no
network address. Each runs as ``python -m accounting ARGS`` in a fresh temporary
folder, and its stdout is kept with two kinds of text masked, since they change from
run to run: wall times (``0.56 s``, ``"seconds": 0.56``, and the padding before a
time in a table) and nothing else.

::

    python benchmarks/cli_snapshot.py --list               # the commands and their ids
    python benchmarks/cli_snapshot.py --write DIR          # store the snapshots
    python benchmarks/cli_snapshot.py --compare DIR        # compare with stored ones

``--write`` under another checkout (``PYTHONPATH=OTHER:OTHER/plugins``) stores that
checkout's output; ``tests/test_cli_snapshots.py`` compares this checkout's output
with ``tests/data/cli_snapshots/`` (made from the last commit before issue 23's
restructure). ``--compare`` prints one line per command (same / differs / missing)
and the count of each, and exits 1 when any differs.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import NamedTuple, Optional

ROOT = Path(__file__).resolve().parent.parent

#: text that marks a line as a template or as needing something beyond the command line
_SKIP = re.compile(r"[A-Z]{2,}|(?<![\w-])[A-Z](?!\w)|\[|…|\.npy|\.toml|\.csv|tcp://|:\w+ ")
#: wall times, the only text of an answer that changes between runs
_TIMES = (re.compile(r"\b\d+(\.\d+)? s\b"), re.compile(r'("seconds": )[0-9.eE+-]+'))


class Command(NamedTuple):
    """One documented command: where it is written and its arguments after ``accounting``."""

    source: str          # file:line
    args: tuple[str, ...]

    @property
    def ident(self) -> str:
        """A stable file name for its snapshot: the arguments' digest after a readable head."""
        head = re.sub(r"[^A-Za-z0-9]+", "-", " ".join(self.args))[:48].strip("-") or "default"
        digest = hashlib.sha256("\0".join(self.args).encode()).hexdigest()[:10]
        return f"{head}-{digest}"


def documented(root: Path = ROOT) -> list[Command]:
    """The runnable ``accounting`` lines of the README and the docs, in file order,
    each once (continuation lines joined, comments dropped)."""
    out: dict[tuple[str, ...], Command] = {}
    for path in [root / "README.md", *sorted((root / "docs").glob("*.md"))]:
        lines = path.read_text(encoding="utf-8").splitlines()
        inside = False
        i = 0
        while i < len(lines):
            line = lines[i].strip()
            i += 1
            if line.startswith("```"):
                inside = not inside
                continue
            if not inside:
                continue
            start = i
            line = line[2:] if line.startswith("$ ") else line
            while line.endswith("\\") and i < len(lines):
                line = line[:-1] + " " + lines[i].strip()
                i += 1
            if not (line == "accounting" or line.startswith("accounting ")):
                continue
            text = line.split(" #", 1)[0] if " #" in line else line
            if _SKIP.search(text):
                continue
            args = tuple(shlex.split(text)[1:])
            out.setdefault(args, Command(f"{path.relative_to(root)}:{start}", args))
    return list(out.values())


def masked(text: str) -> str:
    """``text`` with its wall times replaced by ``<t>``, and the spaces before one made a
    single space, and so before a ``time`` header (a table right-aligns its time column: a run of 10 s or more would
    shift it). Masking masked text changes nothing."""
    text = _TIMES[0].sub("<t> s", text)
    text = re.sub(r" +<t> s", " <t> s", text)
    # the header of a right-aligned time column moves with the widest time too
    text = re.sub(r" +time$", " time", text, flags=re.M)
    return _TIMES[1].sub(r"\g<1><t>", text)


def run(command: Command, env: Optional[dict[str, str]] = None, timeout: float = 600.0
        ) -> str:
    """The masked stdout of ``python -m accounting ARGS`` (with its exit code on the
    first line), run in a fresh temporary folder."""
    with tempfile.TemporaryDirectory() as cwd:
        done = subprocess.run([sys.executable, "-m", "accounting", *command.args], cwd=cwd,
                              env={**os.environ, **(env or {})}, capture_output=True,
                              text=True, timeout=timeout)
    return f"exit {done.returncode}\n" + masked(done.stdout)


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--list", action="store_true", help="list the commands")
    what.add_argument("--write", metavar="DIR", help="store the snapshots in DIR")
    what.add_argument("--compare", metavar="DIR", help="compare with the snapshots in DIR")
    ns = parser.parse_args(argv)
    commands = documented()
    if ns.list:
        for c in commands:
            print(f"{c.ident}  {c.source}  accounting {' '.join(c.args)}")
        return 0
    folder = Path(ns.write or ns.compare)
    counts = {"same": 0, "differs": 0, "missing": 0}
    for c in commands:
        got = run(c)
        path = folder / f"{c.ident}.txt"
        if ns.write:
            folder.mkdir(parents=True, exist_ok=True)
            path.write_text(f"# {c.source}: accounting {' '.join(c.args)}\n" + got,
                            encoding="utf-8")
            print(f"wrote {path.name}")
            continue
        if not path.exists():
            state = "missing"
        else:
            stored = masked(path.read_text(encoding="utf-8").split("\n", 1)[1])
            state = "same" if stored == got else "differs"
        counts[state] += 1
        print(f"{state:8} {c.source}: accounting {' '.join(c.args)}")
    if ns.compare:
        print(", ".join(f"{n} {k}" for k, n in counts.items()))
        return 1 if counts["differs"] else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())

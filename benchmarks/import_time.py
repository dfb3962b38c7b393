"""Time `import accounting` (and, beside it, `import numpy`) in fresh interpreters: the
median of several runs, in seconds. ``import accounting`` loads its public names on
first use, so the first use (an Accountant and one Gaussian ε) and the command line's
start (``accounting --help``) are timed beside it.

    python benchmarks/import_time.py [--runs N]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time


def _median_seconds(statement: str, runs: int) -> float:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", statement], check=True, stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    runs = parser.parse_args().runs
    empty = _median_seconds("pass", runs)
    numpy = _median_seconds("import numpy", runs) - empty
    ours = _median_seconds("import accounting", runs) - empty
    first = _median_seconds("import accounting as ac; ac.Accountant().compose("
                            "ac.mechanism('gaussian', sigma=1.0)).epsilon(1e-5)", runs) - empty
    cli = _median_seconds("import sys; from accounting.cli import main; sys.argv = "
                          "['accounting', '--help']; main()", runs) - empty
    print(f"interpreter start {empty:.3f} s; import numpy {numpy:.3f} s; "
          f"import accounting {ours:.3f} s ({ours / numpy:.2f}× numpy)")
    print(f"import + first ε of a Gaussian {first:.3f} s; accounting --help {cli:.3f} s")


if __name__ == "__main__":
    main()

"""Progress on stderr for computations that take more than a couple of seconds.

``progress(iterable, total=..., desc=...)`` wraps a loop (or, without an iterable, is
advanced with ``update(n)``) and shows a bar on stderr through tqdm where it is
installed (the ``progress`` extra: ``pip install "accounting-dp[progress]"``);
without tqdm, plain lines ``desc: 12/64 done, 8.3 s elapsed, about 35 s left`` (at
most one every ``interval`` seconds, and the final count) take the bar's place. The
estimate assumes the remaining steps take as long on average as the finished ones.
Whether it shows:

* ``enabled=None`` (the default): when stderr is a terminal, unless the environment
  variable ``ACCOUNTING_PROGRESS`` is ``0``; ``1`` forces it on (for logs and CI);
* ``enabled=True``: always;
* ``enabled=False``: never.

Nothing appears before ``delay`` seconds (default 2): short calls stay silent.
Progress never touches stdout, so ``--json`` output stays clean. Use it as:

    from accounting.progress import progress
    for x in progress(grid, desc="calibrating"):
        ...
    with progress(total=n, desc="sampling") as bar:
        bar.update(k)
"""

from __future__ import annotations

import math
import os
import sys
import time
from collections.abc import Iterable, Iterator
from typing import Any, TextIO

__all__ = ["progress", "Progress", "ENV_VAR", "format_duration"]

#: environment variable: "1" forces progress on, "0" turns it off
ENV_VAR = "ACCOUNTING_PROGRESS"
#: seconds before anything is shown
DEFAULT_DELAY = 2.0


def format_duration(seconds: float) -> str:
    """``seconds`` as ``8.3 s``, ``4 min 05 s`` or ``2 h 03 min``."""
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(int(round(seconds)), 60)
    if minutes < 60:
        return f"{minutes} min {secs:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


class Progress:
    """No progress shown: the iterable passes through, ``update`` does nothing."""

    def __init__(self, iterable: Iterable[Any] | None = None, total: float | None = None,
                 desc: str = "", delay: float = DEFAULT_DELAY, *,
                 stream: TextIO | None = None, interval: float = 1.0,
                 initial: float = 0) -> None:
        self.iterable = iterable
        self.total = total
        self.desc = desc
        self.delay = delay
        self.stream = stream
        self.interval = interval
        self.n = float(initial)
        self.initial = float(initial)

    def __iter__(self) -> Iterator[Any]:
        if self.iterable is None:
            raise TypeError("this progress has no iterable: call update(n) instead")
        try:
            for item in self.iterable:
                yield item
                self.update(1)
        finally:
            self.close()

    def update(self, n: float = 1) -> None:
        self.n += n

    def close(self) -> None:
        """Finish (nothing to do when nothing is shown)."""

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.desc!r}, {self.n:g}/{self.total})"


class _TextProgress(Progress):
    """Plain ``desc: n/total done, … elapsed, about … left`` lines on stderr, at most one
    every ``interval`` seconds (no tqdm)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._start = time.monotonic()
        self._written_at = -math.inf
        self._written_n: float | None = None

    def update(self, n: float = 1) -> None:
        super().update(n)
        now = time.monotonic()
        finished = self.total is not None and self.n >= self.total
        if now - self._start >= self.delay and (now - self._written_at >= self.interval
                                                or finished):
            self._write()
            self._written_at = now

    def line(self) -> str:
        """``desc: n/total done, elapsed, about … left`` (the estimate once a step ran)."""
        elapsed = time.monotonic() - self._start
        label = f"{self.desc}: " if self.desc else ""
        if self.total is None:
            return f"{label}{self.n:g} done, {format_duration(elapsed)} elapsed"
        ran = self.n - self.initial
        left = ""
        if 0 < ran and self.n < self.total:
            left = f", about {format_duration(elapsed / ran * (self.total - self.n))} left"
        return (f"{label}{self.n:g}/{self.total:g} done, {format_duration(elapsed)} "
                f"elapsed{left}")

    def _write(self) -> None:
        print(self.line(), file=self.stream or sys.stderr, flush=True)
        self._written_n = self.n

    def close(self) -> None:
        """The final count, if a line was shown and the count moved since."""
        if self._written_n is not None and self._written_n != self.n:
            self._write()


def _tqdm() -> Any:
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm


def _wanted(enabled: bool | None) -> bool:
    if enabled is not None:
        return bool(enabled)
    env = os.environ.get(ENV_VAR, "")
    if env in ("0", "1"):
        return env == "1"
    try:
        return bool(sys.stderr.isatty())
    except (AttributeError, ValueError):   # no stderr, or a closed one
        return False


def progress(iterable: Iterable[Any] | None = None, *, total: float | None = None,
             desc: str = "", enabled: bool | None = None,
             delay: float = DEFAULT_DELAY, stream: TextIO | None = None,
             interval: float = 1.0, initial: float = 0) -> Any:
    """A progress bar on ``stream`` (stderr) around ``iterable`` (or advanced by
    ``update(n)``); see the module docstring for when it shows. ``total`` defaults to
    ``len(iterable)`` where that exists; ``initial`` counts steps already done (a
    resumed run), which the time estimate leaves out."""
    if total is None and iterable is not None:
        try:
            total = len(iterable)  # type: ignore[arg-type]
        except TypeError:
            total = None
    options: dict[str, Any] = dict(stream=stream, interval=interval, initial=initial)
    if not _wanted(enabled):
        return Progress(iterable, total, desc, delay, **options)
    tqdm = _tqdm()
    if tqdm is None:
        return _TextProgress(iterable, total, desc, delay, **options)
    return tqdm(iterable, total=total, desc=desc or None, file=stream or sys.stderr,
                delay=delay, leave=False, dynamic_ncols=True, initial=initial)

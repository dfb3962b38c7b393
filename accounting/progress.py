"""Progress on stderr for computations that take more than a couple of seconds.

``progress(iterable, total=..., desc=...)`` wraps a loop (or, without an iterable, is
advanced with ``update(n)``) and shows a bar on stderr through tqdm, an optional
dependency (the ``progress`` extra: ``pip install "accounting-dp[progress]"``).
Whether it shows:

* ``enabled=None`` (the default): when tqdm is installed and stderr is a terminal,
  unless the environment variable ``ACCOUNTING_PROGRESS`` is ``0``; ``1`` forces it
  on (for logs and CI);
* ``enabled=True``: always; without tqdm, plain lines ``desc: n/total`` (at most one
  a second) take the bar's place;
* ``enabled=False``: never.

Nothing appears before ``delay`` seconds (default 2): short calls stay silent.
Progress never touches stdout, so ``--json`` output stays clean. Use it as::

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
from typing import Any, Iterable, Iterator, Optional

__all__ = ["progress", "Progress", "ENV_VAR"]

#: environment variable: "1" forces progress on, "0" turns it off
ENV_VAR = "ACCOUNTING_PROGRESS"
#: seconds before anything is shown
DEFAULT_DELAY = 2.0


class Progress:
    """No progress shown: the iterable passes through, ``update`` does nothing."""

    def __init__(self, iterable: Optional[Iterable] = None, total: Optional[float] = None,
                 desc: str = "", delay: float = DEFAULT_DELAY) -> None:
        self.iterable = iterable
        self.total = total
        self.desc = desc
        self.delay = delay
        self.n = 0.0

    def __iter__(self) -> Iterator:
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

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.desc!r}, {self.n:g}/{self.total})"


class _TextProgress(Progress):
    """Plain ``desc: n/total`` lines on stderr, at most one a second (no tqdm)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._start = time.monotonic()
        self._written_at = -math.inf
        self._written_n: Optional[float] = None

    def update(self, n: float = 1) -> None:
        super().update(n)
        now = time.monotonic()
        if now - self._start >= self.delay and now - self._written_at >= 1.0:
            self._write()
            self._written_at = now

    def _write(self) -> None:
        of = f"/{self.total:g}" if self.total is not None else ""
        label = f"{self.desc}: " if self.desc else ""
        print(f"{label}{self.n:g}{of}", file=sys.stderr, flush=True)
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


def _wanted(enabled: Optional[bool]) -> bool:
    if enabled is not None:
        return bool(enabled)
    env = os.environ.get(ENV_VAR, "")
    if env in ("0", "1"):
        return env == "1"
    try:
        return bool(sys.stderr.isatty()) and _tqdm() is not None
    except (AttributeError, ValueError):   # no stderr, or a closed one
        return False


def progress(iterable: Optional[Iterable] = None, *, total: Optional[float] = None,
             desc: str = "", enabled: Optional[bool] = None,
             delay: float = DEFAULT_DELAY) -> Any:
    """A progress bar on stderr around ``iterable`` (or advanced by ``update(n)``);
    see the module docstring for when it shows. ``total`` defaults to
    ``len(iterable)`` where that exists."""
    if total is None and iterable is not None:
        try:
            total = len(iterable)  # type: ignore[arg-type]
        except TypeError:
            total = None
    if not _wanted(enabled):
        return Progress(iterable, total, desc, delay)
    tqdm = _tqdm()
    if tqdm is None:
        return _TextProgress(iterable, total, desc, delay)
    return tqdm(iterable, total=total, desc=desc or None, file=sys.stderr, delay=delay,
                leave=False, dynamic_ncols=True)

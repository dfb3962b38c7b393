"""Progress of a long run on stderr: tasks finished out of the total, and the time left.

``tqdm`` draws the bar when it is installed (the ``progress`` extra); otherwise a
line ``LABEL: 12/64 done, 8.3 s elapsed, about 35 s left`` is printed at most every
``interval`` seconds and once at the end. The estimate assumes the remaining tasks
take as long on average as the finished ones.
"""

from __future__ import annotations

import sys
import time
from typing import Any, Optional, TextIO

__all__ = ["Progress", "format_duration"]


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
    """Counts finished tasks (``update``) and reports them; ``close`` at the end.

    ``enabled`` False makes every call a no-op; ``use_tqdm`` None uses tqdm when it
    can be imported.
    """

    def __init__(self, total: int, label: str = "tasks", *, enabled: bool = True,
                 stream: Optional[TextIO] = None, interval: float = 1.0,
                 use_tqdm: Optional[bool] = None, done: int = 0) -> None:
        self.total, self.label, self.enabled = int(total), label, bool(enabled)
        self.stream = stream if stream is not None else sys.stderr
        self.interval = float(interval)
        self.done = self.start_done = int(done)
        self.t0 = self._last = time.perf_counter()
        self._bar: Any = None
        if self.enabled and use_tqdm is not False:
            try:
                from tqdm import tqdm
            except ImportError:
                if use_tqdm:
                    raise
            else:
                self._bar = tqdm(total=self.total, initial=self.done, desc=label,
                                 file=self.stream, unit="task", dynamic_ncols=True)

    def eta(self) -> Optional[float]:
        """Seconds left at the average rate so far (None before the first task)."""
        ran = self.done - self.start_done
        if ran <= 0:
            return None
        return (time.perf_counter() - self.t0) / ran * (self.total - self.done)

    def line(self) -> str:
        elapsed = time.perf_counter() - self.t0
        eta = self.eta()
        left = "" if eta is None or self.done >= self.total else \
            f", about {format_duration(eta)} left"
        return (f"{self.label}: {self.done}/{self.total} done, "
                f"{format_duration(elapsed)} elapsed{left}")

    def update(self, n: int = 1) -> None:
        self.done += n
        if not self.enabled:
            return
        if self._bar is not None:
            self._bar.update(n)
            return
        now = time.perf_counter()
        if now - self._last >= self.interval or self.done >= self.total:
            self._last = now
            print(self.line(), file=self.stream, flush=True)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

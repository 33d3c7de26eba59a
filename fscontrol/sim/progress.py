"""A small progress bar on stderr for long simulations (no dependency, off when not a tty)."""

from __future__ import annotations

import sys
import time
from typing import TextIO


class TextProgress:
    """``progress(done, total)`` callable drawing ``[#####.....]  45%  110,000/243,306 jobs  3.1 s``.

    Draws at most every ``min_interval`` seconds, to ``stream`` (stderr), only when ``enabled``
    (default: the stream is a terminal). ``close()`` ends the line.
    """

    def __init__(
        self,
        label: str = "simulating",
        *,
        stream: TextIO | None = None,
        enabled: bool | None = None,
        width: int = 30,
        min_interval: float = 0.2,
    ):
        self.stream = stream if stream is not None else sys.stderr
        if enabled is None:
            isatty = getattr(self.stream, "isatty", None)
            enabled = bool(isatty and isatty())
        self.enabled = enabled
        self.label = label
        self.width = width
        self.min_interval = min_interval
        self.t0 = time.perf_counter()
        self._last = -1e9
        self._drawn = False

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled:
            return
        now = time.perf_counter()
        if now - self._last < self.min_interval and done < total:
            return
        self._last = now
        frac = done / total if total else 1.0
        fill = int(frac * self.width)
        bar = "#" * fill + "." * (self.width - fill)
        self.stream.write(
            f"\r{self.label} [{bar}] {frac * 100:5.1f}%  {done:,}/{total:,} jobs  {now - self.t0:6.1f} s"
        )
        self.stream.flush()
        self._drawn = True

    def close(self) -> None:
        if self.enabled and self._drawn:
            self.stream.write("\n")
            self.stream.flush()
            self._drawn = False

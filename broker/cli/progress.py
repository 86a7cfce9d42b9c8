"""A progress bar for long command-line operations, drawn on stderr only when it is a terminal.

Resets over thousands of partitions and dumps of large logs take long enough that an
operator wants to see them move; scripts and pipes must see nothing of it.  No dependency:
one line rewritten with a carriage return, redrawn only when the shown percentage changes,
so a million small steps cost a million integer divisions and about a hundred writes.
"""

from __future__ import annotations

import sys
from types import TracebackType
from typing import TextIO

BAR_WIDTH = 30


class Progress:
    """``with Progress(total, "resetting") as bar: bar.advance(n)``; silent unless a TTY."""

    def __init__(self, total: int, label: str, stream: TextIO | None = None) -> None:
        self.stream = sys.stderr if stream is None else stream
        self.enabled = total > 0 and self.stream.isatty()
        self.total = total
        self.label = label
        self.done = 0
        self._shown = -1

    def advance(self, steps: int = 1) -> None:
        self.done = min(self.total, self.done + steps)
        if not self.enabled:
            return
        percent = self.done * 100 // self.total
        if percent != self._shown:
            self._shown = percent
            filled = BAR_WIDTH * percent // 100
            bar = "#" * filled + "." * (BAR_WIDTH - filled)
            self.stream.write(f"\r{self.label} [{bar}] {percent:3d}% {self.done}/{self.total}")
            self.stream.flush()

    def __enter__(self) -> Progress:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, _exc: BaseException | None, _tb: TracebackType | None
    ) -> None:
        if self._shown >= 0:
            self.stream.write("\n")
            self.stream.flush()

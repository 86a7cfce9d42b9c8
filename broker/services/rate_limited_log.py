"""Logging a condition that recurs at a rate a client controls (failed handshakes, refused
frames, evictions) without letting the log grow at that rate."""

from __future__ import annotations

import logging
import time

LOG_EVERY_S = 10.0
"""How often one rate-limited line may be written."""


class RateLimitedLog:
    """Log a recurring condition at most once per LOG_EVERY_S, counting what was suppressed."""

    def __init__(self, level: int, logger: logging.Logger) -> None:
        self._level = level
        self._log = logger
        self._last = -LOG_EVERY_S
        self._suppressed = 0

    def __call__(self, message: str, *args: object) -> None:
        now = time.monotonic()
        if now - self._last < LOG_EVERY_S:
            self._suppressed += 1
            return
        suffix = f" ({self._suppressed} similar messages suppressed)" if self._suppressed else ""
        self._log.log(self._level, message + suffix, *args)
        self._last, self._suppressed = now, 0

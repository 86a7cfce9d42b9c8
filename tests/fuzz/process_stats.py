"""The broker process's resident memory and open descriptors, read from ``/proc``.

Both settle some time after load stops (connections close asynchronously, group members
expire, the allocator returns memory lazily), so comparisons with a baseline poll until the
values are back within bounds or a deadline passes, and report the last values either way.
"""

from __future__ import annotations

import os
import re
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Resources:
    """One reading: resident bytes and open descriptors by kind (sockets, pipes, files by name
    with digits masked, so that a leak says what leaked)."""

    rss: int
    descriptors: Counter[str]

    @property
    def fds(self) -> int:
        return self.descriptors.total()

    @property
    def sockets(self) -> int:
        return sum(n for kind, n in self.descriptors.items() if kind.startswith("socket:"))

    def descriptor_change(self, before: Resources) -> dict[str, int]:
        change = Counter(self.descriptors)
        change.subtract(before.descriptors)
        return {kind: n for kind, n in change.items() if n}


def read_resources(pid: int) -> Resources:
    return Resources(_rss_bytes(pid), _descriptor_kinds(pid))


def _rss_bytes(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


def _descriptor_kinds(pid: int) -> Counter[str]:
    kinds: Counter[str] = Counter()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:  # closed since the listing
            continue
        kinds[re.sub(r"\d+", "N", target)] += 1
    return kinds


def settle(read: Callable[[], Resources], within: Callable[[Resources], bool], timeout: float) -> Resources:
    """Poll ``read()`` until ``within`` accepts a reading or ``timeout`` seconds pass; the last
    reading."""
    deadline = time.monotonic() + timeout
    reading = read()
    while not within(reading) and time.monotonic() < deadline:
        time.sleep(0.25)
        reading = read()
    return reading

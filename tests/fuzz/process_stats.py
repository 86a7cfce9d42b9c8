"""The broker process's resident memory and open descriptors, read from ``/proc``.

Both settle some time after load stops (connections close asynchronously, the allocator
returns memory lazily), so comparisons with a baseline poll until the value is back within
bounds or a deadline passes, and report the last value either way.
"""

from __future__ import annotations

import os
import re
import time
from collections import Counter
from collections.abc import Callable


def rss_bytes(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


def open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def fd_kinds(pid: int) -> Counter[str]:
    """What the open descriptors are (sockets, pipes, files by name with digits masked), to say
    what leaked when the count does not return to baseline."""
    kinds: Counter[str] = Counter()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:  # closed since the listing
            continue
        kinds[re.sub(r"\d+", "N", target)] += 1
    return kinds


def settle(read: Callable[[], int], limit: int, timeout: float) -> int:
    """Poll ``read()`` until it is at most ``limit`` or ``timeout`` seconds pass; the last value."""
    deadline = time.monotonic() + timeout
    value = read()
    while value > limit and time.monotonic() < deadline:
        time.sleep(0.25)
        value = read()
    return value

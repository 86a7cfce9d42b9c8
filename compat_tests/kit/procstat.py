"""Resource readings of a broker process from /proc (the benchmarks' and the test suites' own:
``bench/`` measures brokers with it, :mod:`compat_tests.kit.cpu_report` each test).

Why /proc instead of psutil: it is all we need (two files), it costs nothing to install, and
VmHWM is the kernel's own high-water mark of the resident set, so the true peak is known
without racing a sampling thread against short allocation spikes.
"""

import os
from collections.abc import Iterable
from dataclasses import dataclass

_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class ProcSnapshot:
    """Memory and CPU of one process at one instant (CPU is cumulative since it started)."""

    rss_bytes: int
    peak_rss_bytes: int
    cpu_seconds: float


def snapshot(pid: int) -> ProcSnapshot:
    """Read VmRSS, VmHWM and user+system CPU time of ``pid``.

    CPU time is read so a benchmark can tell "the broker was busy" (about 1.0 core: it is the
    bottleneck) from "the broker was waiting" (the client or the network is).
    """
    fields: dict[str, int] = {}
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            key, _, rest = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                fields[key] = int(rest.split()[0]) * 1024
    utime, stime, _, _ = _cpu_ticks(pid)
    return ProcSnapshot(
        rss_bytes=fields.get("VmRSS", 0),
        peak_rss_bytes=fields.get("VmHWM", 0),
        cpu_seconds=(utime + stime) / _CLOCK_TICKS,
    )


def _cpu_ticks(pid: int) -> tuple[int, int, int, int]:
    """utime, stime, cutime and cstime of ``pid`` (the last two: the children it reaped)."""
    with open(f"/proc/{pid}/stat") as stat:
        # The command name (field 2) may contain spaces; fields after its closing ")" are fixed.
        after_name = stat.read().rsplit(")", 1)[1].split()
    utime, stime, cutime, cstime = (int(value) for value in after_name[11:15])
    return utime, stime, cutime, cstime


def tree_cpu_seconds(pid: int) -> float:
    """CPU time of ``pid``, its live descendants and every child any of them reaped: what a
    process tree has cost so far, a broker started and stopped meanwhile included (unlike
    :func:`cpu_seconds`, which counts only the processes alive now)."""
    total = 0
    for member in with_descendants(pid):
        try:
            total += sum(_cpu_ticks(member))
        except FileNotFoundError:  # exited since it was listed
            continue
    return total / _CLOCK_TICKS


def cpu_seconds(pids: Iterable[int]) -> float:
    """The summed user+system CPU time of ``pids`` and their live descendants: one broker's, or
    a cluster's brokers' (an Odradek broker's sync process, ``broker.services.storage.sync_worker``, is its
    child and its work the broker's)."""
    return sum(_cpu_seconds_if_alive(pid) for top in pids for pid in with_descendants(top))


def _cpu_seconds_if_alive(pid: int) -> float:
    try:
        return snapshot(pid).cpu_seconds
    except FileNotFoundError:  # a descendant that exited since it was listed
        return 0.0


def with_descendants(pid: int) -> list[int]:
    """``pid`` and every live process below it (``/proc/PID/task/TID/children``)."""
    found, pending = [], [pid]
    while pending:
        current = pending.pop()
        found.append(current)
        try:
            for task in os.listdir(f"/proc/{current}/task"):
                with open(f"/proc/{current}/task/{task}/children") as children:
                    pending += [int(child) for child in children.read().split()]
        except FileNotFoundError:  # exited meanwhile
            continue
    return found


def machine_busy_seconds() -> float:
    """CPU seconds all cores spent on anything but idling since boot, from /proc/stat.

    Why: on a shared machine the benchmark competes with other work; busy time minus the
    broker's and the client's is what the neighbours took, which says how far to trust a run.
    """
    with open("/proc/stat") as stat:
        fields = [int(v) for v in stat.readline().split()[1:]]
    # user nice system idle iowait irq softirq steal [guest guest_nice, already in user/nice]
    user, nice, system, _idle, _iowait, irq, softirq, steal = fields[:8]
    return (user + nice + system + irq + softirq + steal) / _CLOCK_TICKS


def open_descriptors(pid: int) -> int:
    """How many file descriptors ``pid`` holds (files, sockets, pipes): what ``ulimit -n`` caps."""
    return len(os.listdir(f"/proc/{pid}/fd"))

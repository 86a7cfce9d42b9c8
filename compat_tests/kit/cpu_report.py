"""The CPU seconds each test cost, and the ten most CPU-hungry tests at the end of every run,
beside pytest's ten slowest (``--durations=10``).

CI is CPU-bound on its 2-core machine (docs/NOTES.md, "CI time"): a test's wall time says little
about what it costs the run. A test waiting for a JVM is slow and cheap; a fuzzer beside it is
fast and dear, and it is the dear ones that slow every other test down. So each test's cost is
measured where the CPU goes: the test's process (an xdist worker, or pytest itself) and every
process below it (brokers, JVMs, etcd, client subprocesses), from the start of its setup to the
end of its teardown. A process's own user and system time plus that of the children it reaped
(``/proc/<pid>/stat``: utime, stime, cutime, cstime), summed over the worker and its live
descendants, counts a broker started and stopped within the test as well as one still running.
What escapes: a daemon that double-forks away from the tree (no test here starts one), and a
module's broker, whose start and stop count in its first and last tests.

Linux only (``/proc``); elsewhere nothing is measured or printed. Under xdist the figure travels
to the controller in the teardown report's ``user_properties`` (and so into ``--junitxml``).
"""

from __future__ import annotations

import os
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

CPU_PROPERTY = "cpu_s"
HUNGRIEST = 10
_PROC = Path("/proc")
_TICKS_PER_S = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100

_started: dict[str, float] = {}
_costs: list[tuple[float, str]] = []


def tree_cpu_seconds(root: int) -> float | None:
    """CPU seconds used so far by process ``root``, its live descendants and every child any of
    them reaped; None where there is no ``/proc``."""
    if not _PROC.is_dir():
        return None
    children: dict[int, list[int]] = {}
    ticks: dict[int, int] = {}
    for entry in _PROC.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue  # gone since the listing
        # The command name may hold spaces and parentheses: the fields follow its last ')'.
        fields = stat[stat.rindex(")") + 2 :].split()
        pid = int(entry.name)
        children.setdefault(int(fields[1]), []).append(pid)
        ticks[pid] = sum(int(value) for value in fields[11:15])  # utime stime cutime cstime
    total, pending = 0, [root]
    while pending:
        pid = pending.pop()
        total += ticks.get(pid, 0)
        pending.extend(children.get(pid, ()))
    return total / _TICKS_PER_S


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    started = tree_cpu_seconds(os.getpid())
    if started is not None:
        _started[item.nodeid] = started


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, None]:
    outcome = yield
    if call.when != "teardown" or (started := _started.pop(item.nodeid, None)) is None:
        return
    ended = tree_cpu_seconds(os.getpid())
    if ended is not None:
        outcome.get_result().user_properties.append((CPU_PROPERTY, round(ended - started, 2)))


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Collect every test's figure (on the controller under xdist, which prints them)."""
    if report.when == "teardown":
        _costs.extend(
            (float(str(value)), report.nodeid)
            for name, value in report.user_properties
            if name == CPU_PROPERTY
        )


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not _costs or hasattr(terminalreporter.config, "workerinput"):
        return
    terminalreporter.write_sep(
        "=", f"{HUNGRIEST} most CPU-hungry tests (their process trees, setup to teardown)"
    )
    for seconds, nodeid in sorted(_costs, reverse=True)[:HUNGRIEST]:
        terminalreporter.write_line(f"{seconds:8.1f} CPU-s  {nodeid}")
    terminalreporter.write_line(f"all {len(_costs)} tests: {sum(s for s, _ in _costs):.0f} CPU-s")

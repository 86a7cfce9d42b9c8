"""The CPU seconds each test cost, and the ten most CPU-hungry tests at the end of every run,
beside pytest's ten slowest (``--durations=10``).

CI is CPU-bound on its 2-core machine (docs/NOTES.md, "CI time"): a test's wall time says little
about what it costs the run. A test waiting for a JVM is slow and cheap; a fuzzer beside it is
fast and dear, and it is the dear ones that slow every other test down. So each test's cost is
measured where the CPU goes: the test's process (an xdist worker, or pytest itself) and every
process below it (brokers, JVMs, etcd, client subprocesses), from the start of its setup to the
end of its teardown, by :func:`compat_tests.kit.procstat.tree_cpu_seconds` (each live process's
own time plus that of the children it reaped), which counts a broker started and stopped within
the test as well as one still running.
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

from compat_tests.kit.procstat import tree_cpu_seconds

CPU_PROPERTY = "cpu_s"
HUNGRIEST = 10
_MEASURED = Path("/proc").is_dir()

_started: dict[str, float] = {}
_costs: list[tuple[float, str]] = []


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    if _MEASURED:
        _started[item.nodeid] = tree_cpu_seconds(os.getpid())


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, None]:
    outcome = yield
    if call.when != "teardown" or (started := _started.pop(item.nodeid, None)) is None:
        return
    spent = round(tree_cpu_seconds(os.getpid()) - started, 2)
    outcome.get_result().user_properties.append((CPU_PROPERTY, spent))


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

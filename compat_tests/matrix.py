"""The compatibility matrix: one row per scenario, one column per client, pass/fail/skip cells.

Test ids look like ``test_roundtrip[gzip-kcat]``; the client is the ``client`` parameter and the
scenario is the test name with the remaining parameters, so every client of one scenario lands in
the same row whatever the parameter order.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

RANK = {"passed": 0, "skipped": 1, "failed": 2}
SYMBOL = {"passed": "pass", "failed": "FAIL", "skipped": "skip"}


def cell_key(item: pytest.Item) -> tuple[str, str] | None:
    """(scenario, client) of a test item, or None for tests not parametrized by client."""
    callspec = getattr(item, "callspec", None)
    if callspec is None or "client" not in callspec.params:
        return None
    others = [str(v) for k, v in callspec.params.items() if k != "client"]
    name = item.originalname if isinstance(item, pytest.Function) else item.name
    scenario = f"{name.removeprefix('test_')}[{'-'.join(others)}]" if others else name.removeprefix("test_")
    return scenario, str(callspec.params["client"])


CELL_PROPERTY = "compat_matrix_cell"
"""The user property that carries a test's (scenario, client) cell to its reports."""


@dataclass(eq=False)  # registered as a pytest plugin, which must be hashable by identity
class Matrix:
    """A pytest plugin collecting outcomes while the session runs; a test's worst phase wins."""

    clients: list[str]
    title: str
    out_path: str | None = None
    cells: dict[tuple[str, str], str] = field(default_factory=dict)
    reasons: dict[tuple[str, str], str] = field(default_factory=dict)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Fold one phase report (setup/call/teardown) into its cell (named by the test's
        :data:`CELL_PROPERTY`, which pytest-xdist's workers send with their reports)."""
        key = next((tuple(value) for name, value in report.user_properties if name == CELL_PROPERTY), None)
        if key is None or (report.when != "call" and report.passed):
            return
        outcome = report.outcome
        if RANK[outcome] >= RANK.get(self.cells.get(key, "passed"), 0):
            self.cells[key] = outcome
            if outcome == "skipped" and isinstance(report.longrepr, tuple):
                self.reasons[key] = report.longrepr[2].removeprefix("Skipped: ")

    def rows(self) -> list[str]:
        return sorted({scenario for scenario, _ in self.cells})

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        """Print the matrix at the end of the run and write it as Markdown if asked to."""
        if not self.cells:
            return
        terminalreporter.section(self.title)
        for line in self.text():
            terminalreporter.write_line(line)
        if self.out_path:
            Path(self.out_path).write_text(self.markdown())
            terminalreporter.write_line(f"matrix written to {self.out_path}")

    def markdown(self) -> str:
        """A Markdown table plus the skip reasons, for --matrix-out."""
        lines = [f"# {self.title}", "", "| scenario | " + " | ".join(self.clients) + " |"]
        lines.append("|---" * (len(self.clients) + 1) + "|")
        for scenario in self.rows():
            cells = [SYMBOL.get(self.cells.get((scenario, c), ""), "") for c in self.clients]
            lines.append(f"| {scenario} | " + " | ".join(cells) + " |")
        reasons = sorted({reason for reason in self.reasons.values()})
        if reasons:
            lines += ["", "Skip reasons:", ""] + [f"- {reason}" for reason in reasons]
        return "\n".join(lines) + "\n"

    def text(self) -> list[str]:
        """Fixed-width lines for the terminal summary."""
        width = max([len("scenario"), *(len(r) for r in self.rows())])
        widths = [max(len(c), 4) for c in self.clients]
        header = (
            "scenario".ljust(width)
            + "  "
            + "  ".join(c.ljust(w) for c, w in zip(self.clients, widths, strict=True))
        )
        lines = [header, "-" * len(header)]
        for scenario in self.rows():
            cells = [
                SYMBOL.get(self.cells.get((scenario, c), ""), "-").ljust(w)
                for c, w in zip(self.clients, widths, strict=True)
            ]
            lines.append(scenario.ljust(width) + "  " + "  ".join(cells))
        return lines

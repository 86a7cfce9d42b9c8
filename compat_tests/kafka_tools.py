"""Running Apache Kafka's own command-line tools from their main classes, as ``bin/kafka-*.sh`` do.

Shared by the tool tests (``test_kafka_tools.py``) and the secured-broker tests, which run
``kafka-configs`` against the secured broker's plaintext listener; the classpath is the
``tool_classpath`` fixture of ``conftest.py``.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass

CONFIGS = "kafka.admin.ConfigCommand"
TOOL_TIMEOUT_S = 90
JVM = ["-Xmx256m", "-XX:TieredStopAtLevel=1", "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn"]


@dataclass(frozen=True)
class ToolRun:
    """A finished tool: exit code and what it printed (stdout, then stderr)."""

    code: int
    out: str
    err: str


def run_tool(
    tool_classpath: str,
    bootstrap: str,
    main_class: str,
    *args: str,
    bootstrap_last: bool = False,
    stdin: str | None = None,
) -> ToolRun:
    """The tool against ``bootstrap`` (``--bootstrap-server`` goes first unless
    ``bootstrap_last``, for tools with subcommands; ``stdin`` is fed to it)."""
    server = ["--bootstrap-server", bootstrap]
    argv = [*args, *server] if bootstrap_last else [*server, *args]
    done = subprocess.run(
        ["java", *JVM, "-cp", tool_classpath, main_class, *argv],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=TOOL_TIMEOUT_S,
    )
    return ToolRun(done.returncode, done.stdout, done.stderr)


def ok(result: ToolRun) -> str:
    assert result.code == 0, f"exit {result.code}:\n{result.out}\n{result.err}"
    return result.out

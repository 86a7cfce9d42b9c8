"""Running Apache Kafka's own command-line tools from their main classes, as ``bin/kafka-*.sh`` do.

Shared by the tool tests (``test_kafka_tools.py``), the secured-broker tests, which run
``kafka-configs`` against the secured broker's plaintext listener, ``kafka-acls``
(``test_acls.py``) and ``kafka-client-metrics`` (``test_client_metrics.py``); the classpath is
the ``tool_classpath`` fixture of ``conftest.py`` (``classpath(kafka_tools_jars())``).

A JVM start costs seconds on a loaded two-core machine, and each suite runs about a hundred
tools, so the tools run one after another in one JVM per test process
(``compat_tests/java/ToolRunner.java``: each tool's ``main`` with its output captured and Kafka's
``Exit`` turned into a status). A tool fed on standard input (the console producer) and the
tools that report from a JVM shutdown hook (:data:`OWN_JVM`) still get a JVM of their own; a
shared JVM that dies or times out is replaced for the next tool.
"""

from __future__ import annotations

import atexit
import base64
import os
import select
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from compat_tests.kit.brokers import KAFKA_VERSION, kafka_tools_jars
from compat_tests.maven import compiled_classes

CONFIGS = "kafka.admin.ConfigCommand"
TOOL_TIMEOUT_S = 90
JVM = ["-Xmx256m", "-XX:TieredStopAtLevel=1", "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn"]
TOOL_RUNNER = Path(__file__).resolve().parent / "java" / "ToolRunner.java"
OWN_JVM = frozenset(
    {"org.apache.kafka.tools.VerifiableProducer", "org.apache.kafka.tools.VerifiableConsumer"}
)
"""Tools that print their summary from a JVM shutdown hook, which only a JVM of their own runs."""


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
    if stdin is None and main_class not in OWN_JVM:
        return _runner(tool_classpath).run(main_class, argv)
    done = subprocess.run(
        ["java", *JVM, "-cp", tool_classpath, main_class, *argv],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=TOOL_TIMEOUT_S,
    )
    return ToolRun(done.returncode, done.stdout, done.stderr)


class ToolRunner:
    """The JVM of ``ToolRunner.java``: one tool at a time, each answered on one line."""

    def __init__(self, tool_classpath: str) -> None:
        classes = compiled_classes(TOOL_RUNNER, kafka_tools_jars(), f"kafka-tools-{KAFKA_VERSION}")
        answers, self._answers_written = os.pipe()
        self._answers = os.fdopen(answers, "rb", buffering=0)
        command = ["java", "-Xmx512m", "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn"]
        command += [
            "-cp",
            f"{tool_classpath}{os.pathsep}{classes}",
            "ToolRunner",
            f"/dev/fd/{self._answers_written}",
        ]
        self._process = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            pass_fds=(self._answers_written,),
        )
        os.close(self._answers_written)
        self._lock = threading.Lock()

    def alive(self) -> bool:
        return self._process.poll() is None

    def run(self, main_class: str, argv: list[str]) -> ToolRun:
        """Run one tool; a runner that dies or exceeds :data:`TOOL_TIMEOUT_S` is stopped and
        the tool reported as failed (the next tool gets a new runner)."""
        fields = [base64.b64encode(text.encode()).decode() for text in (main_class, *argv)]
        assert self._process.stdin is not None
        with self._lock:
            try:
                self._process.stdin.write((" ".join(fields) + "\n").encode())
                self._process.stdin.flush()
                answer = self._answer(time.monotonic() + TOOL_TIMEOUT_S)
            except OSError as exc:
                answer = None
                failure = f"the tool runner failed: {exc}"
            else:
                failure = f"no answer from the tool runner within {TOOL_TIMEOUT_S} s"
        if answer is None:
            self.stop()
            return ToolRun(-1, "", failure)
        status, out, err = answer.split(b" ")
        return ToolRun(int(status), base64.b64decode(out).decode(), base64.b64decode(err).decode())

    def _answer(self, deadline: float) -> bytes | None:
        """One answer line, or None if the runner ends or ``deadline`` passes first."""
        descriptor, line = self._answers.fileno(), bytearray()
        while not line.endswith(b"\n"):
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([descriptor], [], [], remaining)[0]:
                return None
            chunk = os.read(descriptor, 1 << 16)
            if not chunk:
                return None
            line += chunk
        return bytes(line).rstrip(b"\n")

    def stop(self) -> None:
        if self.alive():
            self._process.kill()
        self._process.wait()
        self._answers.close()


_RUNNERS: dict[str, ToolRunner] = {}


def _runner(tool_classpath: str) -> ToolRunner:
    """This process's tool runner for ``tool_classpath``, started on first use (again after one
    died); stopped when the process exits."""
    runner = _RUNNERS.get(tool_classpath)
    if runner is None or not runner.alive():
        runner = _RUNNERS[tool_classpath] = ToolRunner(tool_classpath)
        atexit.register(runner.stop)
    return runner


def ok(result: ToolRun) -> str:
    assert result.code == 0, f"exit {result.code}:\n{result.out}\n{result.err}"
    return result.out

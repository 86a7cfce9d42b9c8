"""Kafka Streams (KIP-1071's streams groups and the classic protocol): ``java/StreamsApp.java``.

A word count built on kafka-streams (and the kafka-clients it depends on), one application
instance per JVM so that a scenario can SIGKILL one: the JVM serves CompatClient's JSON-lines
command loop (:class:`JavaProcess`), so it is started, watched (its state changes and uncaught
exceptions) and stopped by commands, and closing its stdin closes the application.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from compat_tests.kit.drivers.java import SOURCE as COMPAT_CLIENT
from compat_tests.kit.drivers.java import JavaProcess
from compat_tests.maven import SLF4J_BINDING, classpath, compiled_classes, resolve_jars

STREAMS_VERSION = "4.3.1"
"""kafka-streams 4.3.1, which depends on kafka-clients 4.3.1 (the jar set Maven resolves)."""
SOURCE = COMPAT_CLIENT.with_name("StreamsApp.java")
FINAL_STATES = frozenset({"ERROR", "NOT_RUNNING"})
"""KafkaStreams states an instance never leaves (until it is closed and started again)."""


def streams_jars(version: str = STREAMS_VERSION) -> Path:
    """kafka-streams ``version`` and its runtime dependencies (kafka-clients of the same version,
    RocksDB) with the slf4j binding."""
    return resolve_jars(
        f"kafka-streams-{version}", [f"org.apache.kafka:kafka-streams:{version}", SLF4J_BINDING]
    )


def build_streams_app(version: str = STREAMS_VERSION) -> str:
    """The classpath of StreamsApp, compiled with CompatClient (its command loop) against
    kafka-streams ``version``."""
    libs = streams_jars(version)
    cache = f"kafka-streams-{version}"
    compat = compiled_classes(COMPAT_CLIENT, libs, cache)
    app = compiled_classes(SOURCE, libs, cache, compat)
    return classpath(app, compat, libs)


@dataclass(frozen=True)
class AppSettings:
    """One application instance's settings (StreamsConfig keys in the comments)."""

    application_id: str
    """``application.id``: the group, and the prefix of the internal topics."""
    source: str
    output: str
    group_protocol: str = "streams"
    """``group.protocol``: streams (KIP-1071) or classic."""
    guarantee: str = "exactly_once_v2"
    """``processing.guarantee``."""
    standby_replicas: int = 0
    """``num.standby.replicas`` (the streams protocol takes the group's setting instead)."""
    commit_interval_ms: int = 200
    """``commit.interval.ms``: how often a transaction commits, so results show up quickly."""
    stop_word: str | None = None
    """A later version of the application: a word it no longer counts."""
    output2: str | None = None
    """A later version of the application: every counted word is also written to this topic."""
    lengths_output: str | None = None
    """A later version of the application: the counted words are also counted by their length
    (a new subtopology, with internal topics of its own) into this topic."""
    client_id: str = "streams-compat"
    application_server: str | None = None
    """``application.server``: the host:port interactive queries reach this instance at (nothing
    needs to listen there for the group to pass it around)."""
    classic_session_timeout_ms: int | None = None
    """The classic protocol's ``session.timeout.ms`` of the app's consumers; None: Streams'."""
    debug_loggers: tuple[str, ...] = ()
    """Loggers (class names) that log at DEBUG to the JVM's log; the others log warnings."""


class StreamsInstance:
    """One application instance in a JVM of its own (started on :meth:`start`)."""

    def __init__(self, log_path: Path, bootstrap: str, state_dir: Path) -> None:
        self.log_path = log_path
        self.bootstrap = bootstrap
        self.state_dir = state_dir
        self.jvm = JavaProcess(STREAMS_VERSION, log_path, "StreamsApp", build_streams_app)

    def start(self, settings: AppSettings) -> None:
        self.jvm.call(
            "start",
            bootstrap=self.bootstrap,
            state_dir=str(self.state_dir),
            **{**settings.__dict__, "debug_loggers": list(settings.debug_loggers)},
        )

    def events(self) -> list[dict[str, Any]]:
        """Every state change (``{"state": new, "from": old}``) and uncaught exception
        (``{"error": "Class: message", "thread": name}``) so far, in order, each with ``at_ms``."""
        return self.jvm.call("events")

    def states(self) -> list[str]:
        return [event["state"] for event in self.events() if "state" in event]

    def state(self) -> str:
        """The current state (CREATED before any change)."""
        states = self.states()
        return states[-1] if states else "CREATED"

    def wait_for_state(self, state: str, timeout_s: float) -> None:
        """Until the instance is in ``state``; fails with its events at the deadline, or at once
        if it ended in another state (ERROR, NOT_RUNNING), from which it never comes back."""
        deadline = time.monotonic() + timeout_s
        while (now := self.state()) != state:
            assert now not in FINAL_STATES, f"{now} instead of {state}: {self.events()}"
            assert time.monotonic() < deadline, f"not {state} within {timeout_s}s: {self.events()}"
            time.sleep(0.2)

    def tasks(self) -> tuple[set[str], set[str]]:
        """The instance's active and standby tasks ("subtopology_partition")."""
        found = self.jvm.call("tasks")
        return set(found["active"]), set(found["standby"])

    def metadata(self) -> dict[str, tuple[set[str], set[str]]]:
        """``KafkaStreams#metadataForAllStreamsClients``: each instance's "host:port" with the
        topic partitions ("topic-partition") of its active and standby tasks."""
        return {
            f"{m['host']}:{m['port']}": (set(m["active"]), set(m["standby"]))
            for m in self.jvm.call("metadata")
        }

    def describe_group(self, group: str) -> dict[str, Any]:
        """``Admin#describeStreamsGroups`` of ``group`` through this JVM's admin client."""
        return self.jvm.call("describe_group", bootstrap=self.bootstrap, group=group)

    def stop(self, leave: bool | None = None) -> bool:
        """``KafkaStreams#close`` (leaving the group if ``leave``, staying if False, Kafka's
        default if None); whether it closed in time. The JVM stays for more commands."""
        return self.jvm.call("stop", leave=leave)

    def kill(self) -> None:
        """SIGKILL the JVM: the instance vanishes mid-stream, its transaction left open."""
        self.jvm.kill()

    def close(self) -> None:
        """Close the JVM's stdin: the application (if running) closes and the JVM exits."""
        self.jvm.stop()

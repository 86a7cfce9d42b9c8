"""Java kafka-clients driver: talks JSON lines to ``java/CompatClient.java`` in a long-lived JVM.

The Java client is the reference client (Spark, Kafka Connect and Kafka's own tools use it), and
it is tested in two versions: the 3.9.x line that Spark's Kafka connector ships with and the
newest 4.x. Each version gets its own compiled classes (cached, keyed by the source's hash) and
one JVM for the whole session, because a JVM per call would cost a second each time.
"""

from __future__ import annotations

import base64
import itertools
import json
import queue
import subprocess
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from compat_tests.kit.drivers import base
from compat_tests.kit.drivers.base import ClientError, Message, TopicPartition
from compat_tests.maven import SLF4J_BINDING, classpath, compiled_classes, resolve_jars

SOURCE = Path(__file__).resolve().parents[2] / "java" / "CompatClient.java"
SHARE_SOURCE = SOURCE.with_name("ShareClient.java")
JAVA_CLIENT_VERSIONS = ("3.9.2", "4.4.0")
"""3.9.2 is the kafka-clients of Spark 4.2's Kafka connector; 4.4.0 is the newest release."""
JACKSON = "com.fasterxml.jackson.core:jackson-databind:2.21.2"
"""An optional dependency of kafka-clients that SASL/OAUTHBEARER needs (its token parsing)."""
CALL_TIMEOUT_S = base.OP_TIMEOUT_S * 3
"""The JVM bounds each call itself (20 s client timeouts); this only catches a wedged JVM."""


def _b64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode()


def _unb64(text: str | None) -> bytes | None:
    return None if text is None else base64.b64decode(text)


def _client_jars(version: str) -> Path:
    return resolve_jars(
        f"kafka-clients-{version}-with-jackson",
        [f"org.apache.kafka:kafka-clients:{version}", SLF4J_BINDING, JACKSON],
    )


def build_java_client(version: str) -> str:
    """Resolve kafka-clients ``version``, compile CompatClient against it, return the classpath."""
    libs = _client_jars(version)
    return classpath(compiled_classes(SOURCE, libs, f"kafka-clients-{version}"), libs)


def build_share_client(version: str) -> str:
    """The classpath of ``java/ShareClient.java`` (KIP-932's share consumer, kafka-clients 4.x
    only), which serves its commands through CompatClient's command loop."""
    libs = _client_jars(version)
    compat = compiled_classes(SOURCE, libs, f"kafka-clients-{version}")
    share = compiled_classes(SHARE_SOURCE, libs, f"kafka-clients-{version}", compat)
    return classpath(share, compat, libs)


class JavaProcess:
    """One JVM of a command-loop program (CompatClient unless told otherwise); restarted on the
    next call if a call wedged it."""

    def __init__(
        self,
        version: str,
        log_path: Path,
        program: str = "CompatClient",
        build: Callable[[str], str] = build_java_client,
    ) -> None:
        self.version = version
        self.log_path = log_path
        self.program = program
        self._build = build
        self._classpath: str | None = None
        self._process: subprocess.Popen[str] | None = None
        self._answers: queue.Queue[str | None] = queue.Queue()
        self._lock = threading.Lock()

    def _start(self) -> subprocess.Popen[str]:
        if self._classpath is None:
            self._classpath = self._build(self.version)
        command = [
            "java",
            "-Xmx256m",
            "-XX:+UseSerialGC",
            "-XX:TieredStopAtLevel=1",
            "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
            "-cp",
            self._classpath,
            self.program,
        ]
        with self.log_path.open("a") as log:
            process = subprocess.Popen(
                command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, text=True, bufsize=1
            )
        self._answers = queue.Queue()
        threading.Thread(target=self._read, args=(process, self._answers), daemon=True).start()
        self._process = process
        self._receive()  # the "ready" line
        return process

    @staticmethod
    def _read(process: subprocess.Popen[str], answers: queue.Queue[str | None]) -> None:
        assert process.stdout is not None
        for line in process.stdout:
            answers.put(line)
        answers.put(None)

    def _receive(self) -> dict[str, Any]:
        try:
            line = self._answers.get(timeout=CALL_TIMEOUT_S)
        except queue.Empty:
            self.stop()
            raise ClientError(
                base.ErrorKind.TIMEOUT, f"java {self.version} gave no answer in {CALL_TIMEOUT_S}s"
            ) from None
        if line is None:
            self._process = None
            raise ClientError(base.ErrorKind.OTHER, f"java {self.version} exited (see {self.log_path})")
        return json.loads(line)

    def call(self, op: str, **args: Any) -> Any:
        """Send one command and return its result, or raise its error as a ClientError."""
        with self._lock:
            process = self._process if self._process and self._process.poll() is None else self._start()
            assert process.stdin is not None
            process.stdin.write(json.dumps({"op": op, **args}) + "\n")
            process.stdin.flush()
            answer = self._receive()
        if not answer["ok"]:
            raise ClientError(base.classify(answer["error"]), answer["error"])
        return answer["result"]

    def kill(self) -> None:
        """SIGKILL the JVM: its clients vanish without a word to the broker (a crashed client)."""
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.kill()
            process.wait()

    def stop(self) -> None:
        """Close stdin (the JVM closes its clients and exits), kill it if it lingers."""
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        assert process.stdin is not None
        process.stdin.close()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


_HANDLES = itertools.count(1)
"""Numbers for the names under which the JVM keeps consumers and producers between commands."""


def _wire_messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """Messages as CompatClient reads them: bytes as base64, unset partition/timestamp as null."""
    return [
        {
            "key": _b64(m.key),
            "value": _b64(m.value),
            "headers": [[k, _b64(v)] for k, v in m.headers],
            "partition": m.partition,
            "timestamp": m.timestamp_ms,
        }
        for m in messages
    ]


def _wire_offsets(offsets: Mapping[TopicPartition, int]) -> list[list[Any]]:
    """Offsets to commit as CompatClient reads them: ``[[topic, partition, offset], ...]``."""
    return [[t, p, o] for (t, p), o in offsets.items()]


class JvmObject:
    """A client object held by name inside the JVM; every command names it."""

    def __init__(self, jvm: JavaProcess, kind: str) -> None:
        self._jvm = jvm
        self._handle = f"{kind}-{next(_HANDLES)}"

    def _call(self, op: str, **args: Any) -> Any:
        return self._jvm.call(op, handle=self._handle, **args)


class JavaConsumer(JvmObject, base.Consumer):
    """A KafkaConsumer held by name inside the JVM."""

    def __init__(self, driver: JavaDriver, settings: base.ConsumerSettings) -> None:
        JvmObject.__init__(self, driver.jvm, "consumer")
        base.Consumer.__init__(self, driver)
        self._call(
            "consumer_open",
            bootstrap=driver.bootstrap,
            client_config=driver.client_config,
            group=settings.group,
            reset=settings.reset,
            group_protocol=settings.group_protocol,
            isolation=settings.isolation,
        )

    def assign(self, positions: Mapping[TopicPartition, int | None]) -> None:
        self._call("consumer_assign", positions=[[t, p, o] for (t, p), o in positions.items()])

    def subscribe(self, topics: Sequence[str]) -> None:
        self._call("consumer_subscribe", topics=list(topics))

    def poll(self, max_records: int, timeout_s: float) -> list[base.Received]:
        records = self._call("consumer_poll", max=max_records, timeout_ms=int(timeout_s * 1000))
        return [
            base.Received(
                topic=r["topic"],
                partition=r["partition"],
                offset=r["offset"],
                key=_unb64(r["key"]),
                value=_unb64(r["value"]),
                headers=tuple((k, _unb64(v) or b"") for k, v in r["headers"]),
                timestamp_ms=r["timestamp"],
            )
            for r in records
        ]

    def assignment(self) -> set[TopicPartition]:
        return {(t, p) for t, p in self._call("consumer_assignment")}

    def commit(self, offsets: Mapping[TopicPartition, int]) -> None:
        self._call("consumer_commit", offsets=_wire_offsets(offsets))

    def close(self) -> None:
        self._call("consumer_close")


class JavaTransactionalProducer(JvmObject, base.TransactionalProducer):
    """A KafkaProducer with ``transactional.id`` held by name inside the JVM."""

    def __init__(self, driver: JavaDriver, transactional_id: str, timeout_ms: int) -> None:
        JvmObject.__init__(self, driver.jvm, "producer")
        base.TransactionalProducer.__init__(self, driver)
        self._call(
            "txn_open", bootstrap=driver.bootstrap, transactional_id=transactional_id, timeout_ms=timeout_ms
        )

    def begin(self) -> None:
        self._call("txn_begin")

    def send(self, topic: str, messages: Sequence[Message]) -> list[int]:
        return self._call("txn_send", topic=topic, messages=_wire_messages(messages))

    def send_offsets(self, offsets: Mapping[TopicPartition, int], group: str) -> None:
        """Sent with ``new ConsumerGroupMetadata(group)``: the group id, no generation or member."""
        self._call("txn_send_offsets", offsets=_wire_offsets(offsets), group=group)

    def commit(self) -> None:
        self._call("txn_commit")

    def abort(self) -> None:
        self._call("txn_abort")

    def close(self) -> None:
        self._call("txn_close")


class JavaTelemetryProducer(JvmObject):
    """A KafkaProducer held by name inside the JVM that pushes its metrics (KIP-714)."""

    def __init__(self, driver: JavaDriver, client_id: str, topic: str) -> None:
        super().__init__(driver.jvm, "producer")
        self.instance_id: str = self._call(
            "telemetry_open", bootstrap=driver.bootstrap, client_id=client_id, topic=topic
        )
        """The client instance id the broker assigned, as Kafka prints a Uuid."""

    def close(self) -> None:
        self._call("producer_close")


class JavaDriver(base.Driver):
    """Drives kafka-clients of one version through its session-wide JVM."""

    consumer_class = JavaConsumer
    transactional_producer_class = JavaTransactionalProducer

    def __init__(
        self, bootstrap: str, jvm: JavaProcess, client_config: Mapping[str, str] | None = None
    ) -> None:
        super().__init__(bootstrap)
        self.jvm = jvm
        self.client_config = dict(client_config) if client_config else None
        """Extra client properties (``security.protocol``, ``sasl.*``, ``ssl.*``) of every client."""
        self.name = f"java-{jvm.version}"
        if int(jvm.version.split(".")[0]) >= 4:
            self.group_protocols = frozenset(base.GROUP_PROTOCOLS)
        else:
            self.group_protocol_gap = (
                "KIP-848 is only early access in kafka-clients 3.x (generally available from 4.0)"
            )

    def _call(self, op: str, **args: Any) -> Any:
        return self.jvm.call(op, bootstrap=self.bootstrap, client_config=self.client_config, **args)

    def produce(self, topic: str, messages: Sequence[Message], settings: base.ProducerSettings) -> list[int]:
        settings_json = {
            "compression": settings.compression,
            "acks": settings.acks,
            "idempotence": settings.idempotence,
            "max_request_size": settings.max_request_size,
            "retries": settings.retries,
            "timeout_ms": int(settings.timeout_s * 1000),
        }
        return self._call("produce", topic=topic, messages=_wire_messages(messages), settings=settings_json)

    def telemetry_producer(self, client_id: str, topic: str) -> JavaTelemetryProducer:
        """A producer that sent one record to ``topic`` and keeps pushing its metrics until closed."""
        return JavaTelemetryProducer(self, client_id, topic)

    def list_offsets(self, topic: str, partitions: Sequence[int], spec: str | int) -> dict[int, int]:
        return dict(self._call("list_offsets", topic=topic, partitions=list(partitions), spec=spec))

    def list_topics(self) -> set[str]:
        return set(self._call("list_topics"))

    def partition_count(self, topic: str) -> int:
        return self._call("partition_count", topic=topic)

    def create_topic(self, topic: str, partitions: int, configs: Mapping[str, str] | None = None) -> None:
        self._call("create_topic", topic=topic, partitions=partitions, configs=dict(configs or {}))

    def delete_topic(self, topic: str) -> None:
        self._call("delete_topic", topic=topic)

    def create_partitions(self, topic: str, total: int) -> None:
        self._call("create_partitions", topic=topic, total=total)

    def delete_records(self, topic: str, partition: int, before_offset: int) -> None:
        self._call("delete_records", topic=topic, partition=partition, offset=before_offset)

    def describe_configs(self, topic: str) -> dict[str, str]:
        return self._call("describe_configs", topic=topic)

    def alter_configs(self, topic: str, configs: Mapping[str, str]) -> None:
        self._call("alter_configs", topic=topic, configs=dict(configs))

    def describe_group(self, group: str) -> base.GroupDescription:
        found = self._call("describe_group", group=group)
        members = [frozenset((t, p) for t, p in m) for m in found["members"]]
        return base.GroupDescription(base.kafka_state_name(found["state"]), members)

    def group_offsets(self, group: str) -> dict[TopicPartition, int]:
        return {(t, p): o for t, p, o in self._call("group_offsets", group=group)}

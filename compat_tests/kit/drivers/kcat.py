"""kcat driver: the command-line client most people reach for first.

Debian's kcat embeds an older librdkafka (2.0.x), which only enables features on exact protocol
version matches; that makes it a sensitive probe of the ApiVersions ranges a broker advertises.
kcat can produce, consume from given offsets, query offsets and list metadata. It has no admin
API, no explicit commit, no per-message timestamps, and its ``-H`` headers apply to every
message of one run, so messages are produced in runs of equal partition and headers.
"""

from __future__ import annotations

import itertools
import json
import queue
import shutil
import subprocess
import threading
from collections.abc import Mapping, Sequence
from typing import IO

from compat_tests.kit.drivers import base
from compat_tests.kit.drivers.base import ClientError, Received

MESSAGE_DELIMITER = b"\x1e"
KEY_DELIMITER = b"\x1f"
RESET = {"earliest": "earliest", "latest": "latest", "none": "error"}
START = {"earliest": "beginning", "latest": "end"}


def _text(data: bytes | None) -> str:
    return "" if data is None else data.decode()


class KcatConsumer(base.Consumer):
    """A long-running ``kcat -C -J`` whose output lines are collected by a reader thread."""

    def __init__(self, driver: KcatDriver, settings: base.ConsumerSettings) -> None:
        super().__init__(driver)
        self._driver = driver
        self._settings = settings
        self._process: subprocess.Popen[bytes] | None = None
        self._lines: queue.Queue[bytes] = queue.Queue()
        self._errors: list[str] = []

    def assign(self, positions: Mapping[base.TopicPartition, int | None]) -> None:
        """kcat takes one topic and one start offset, for one partition or all of them."""
        topics = {t for t, _ in positions}
        starts = set(positions.values())
        if len(topics) != 1 or len(starts) != 1:
            self._driver.unsupported("assigning several topics or start offsets in one consumer")
        (topic,), (start,) = topics, starts
        args = ["-C", "-E", "-t", topic, "-J", "-u", "-X", f"auto.offset.reset={RESET[self._settings.reset]}"]
        args += ["-X", f"isolation.level={self._settings.isolation}"]
        args += ["-o", START.get(self._settings.reset, "stored") if start is None else str(start)]
        if self._settings.group is not None:
            args += ["-X", f"group.id={self._settings.group}"]
        if len(positions) == 1:
            args += ["-p", str(next(iter(positions))[1])]
        self._process = subprocess.Popen(
            self._driver.command(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        assert self._process.stdout is not None and self._process.stderr is not None
        threading.Thread(target=self._pump, args=(self._process.stdout, None), daemon=True).start()
        threading.Thread(target=self._pump, args=(self._process.stderr, self._errors), daemon=True).start()

    def _pump(self, stream: IO[bytes], errors: list[str] | None) -> None:
        for line in stream:
            if errors is None:
                self._lines.put(line)
            elif b"ERROR" in line:
                errors.append(line.decode(errors="replace").strip())

    def poll(self, max_records: int, timeout_s: float) -> list[Received]:
        if self._process is None:
            raise ClientError(base.ErrorKind.OTHER, "poll before assign")
        records: list[Received] = []
        try:
            line = self._lines.get(timeout=timeout_s)
            while True:
                records.append(self._parse(line))
                if len(records) >= max_records:
                    break
                line = self._lines.get_nowait()
        except queue.Empty:
            pass
        if not records and self._errors:
            text = "; ".join(self._errors)
            raise ClientError(base.classify(text), text)
        return records

    @staticmethod
    def _parse(line: bytes) -> Received:
        doc = json.loads(line)
        flat = doc.get("headers") or []
        headers = tuple((flat[i], (flat[i + 1] or "").encode()) for i in range(0, len(flat), 2))
        key, value = doc.get("key"), doc.get("payload")
        return Received(
            topic=doc["topic"],
            partition=doc["partition"],
            offset=doc["offset"],
            key=None if key is None else key.encode(),
            value=None if value is None else value.encode(),
            headers=headers,
            timestamp_ms=doc["ts"],
        )

    def close(self) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(5)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()


class KcatDriver(base.Driver):
    """Runs the ``kcat`` binary; skipped with a reason where it is not installed."""

    name = "kcat"
    consumer_class = KcatConsumer
    sets_timestamps = False
    group_protocol_gap = "its librdkafka 2.0 predates KIP-848 (generally available from librdkafka 2.12)"

    def __init__(self, bootstrap: str) -> None:
        super().__init__(bootstrap)
        binary = shutil.which("kcat") or shutil.which("kafkacat")
        if binary is None:
            self.unsupported("anything: the kcat binary is not installed (apt-get install kcat)")
        self.binary = binary

    def command(self, args: Sequence[str]) -> list[str]:
        """A kcat command line for this broker with bounded metadata and socket waits."""
        timeout = str(int(base.OP_TIMEOUT_S))
        return [self.binary, "-b", self.bootstrap, "-m", timeout, "-X", "socket.timeout.ms=10000", *args]

    def _run(self, args: Sequence[str], stdin: bytes = b"") -> str:
        try:
            result = subprocess.run(
                self.command(args), input=stdin, capture_output=True, timeout=base.OP_TIMEOUT_S * 2
            )
        except subprocess.TimeoutExpired as exc:
            raise ClientError(base.ErrorKind.TIMEOUT, f"kcat {' '.join(args)} timed out") from exc
        stderr = result.stderr.decode(errors="replace")
        if result.returncode != 0 or "ERROR" in stderr:
            raise ClientError(
                base.classify(stderr), stderr.strip() or f"kcat exited with {result.returncode}"
            )
        return result.stdout.decode()

    def produce(
        self, topic: str, messages: Sequence[base.Message], settings: base.ProducerSettings
    ) -> list[int]:
        if any(m.timestamp_ms is not None for m in messages):
            self.unsupported("setting record timestamps")
        if len(messages) > 1 and any(m.partition is None for m in messages):
            self.unsupported("keeping the order of messages whose partition the client picks")
        config = [f"compression.codec={settings.compression}", f"acks={settings.acks}"]
        config.append(f"message.timeout.ms={int(settings.timeout_s * 1000)}")
        if settings.idempotence is not None:
            config.append(f"enable.idempotence={str(settings.idempotence).lower()}")
        if settings.max_request_size is not None:
            config.append(f"message.max.bytes={settings.max_request_size}")
        if settings.retries is not None:
            config.append(f"retries={settings.retries}")
        for run in (list(g) for _, g in itertools.groupby(messages, key=lambda m: (m.partition, m.headers))):
            first = run[0]
            args = ["-P", "-t", topic, "-K", "\\x1f", "-D", "\\x1e", "-Z"]
            args += ["-p", str(-1 if first.partition is None else first.partition)]
            for name, value in first.headers:
                args += ["-H", f"{name}={_text(value)}"]
            for item in config:
                args += ["-X", item]
            payload = MESSAGE_DELIMITER.join((m.key or b"") + KEY_DELIMITER + (m.value or b"") for m in run)
            self._run(args, payload)
        return [base.NO_OFFSET] * len(messages)

    def list_offsets(self, topic: str, partitions: Sequence[int], spec: str | int) -> dict[int, int]:
        """``kcat -Q`` asks ListOffsets per partition; -2/-1 are Kafka's earliest/latest markers."""
        wire = {"earliest": -2, "latest": -1}.get(str(spec), spec)
        found: dict[int, int] = {}
        for p in partitions:
            answer = json.loads(self._run(["-Q", "-J", "-t", f"{topic}:{p}:{wire}"]))
            found[p] = answer[topic][str(p)]["offset"]
        return found

    def list_topics(self) -> set[str]:
        """``kcat -L`` without ``-t``: with a topic, librdkafka 2.0 would auto-create it."""
        return {t["topic"] for t in json.loads(self._run(["-L", "-J"]))["topics"]}

"""Exactly-once across crashes: a consume-transform-produce service (``compat_tests.eos_loop``,
confluent-kafka with ``send_offsets_to_transaction``) is killed with SIGKILL mid-stream, twice,
and started again each time.  Its output, read_committed, must hold every input record exactly
once: what a killed instance wrote in its open transaction is aborted when the next instance
initialises (fencing it), and the offsets committed with each transaction say where to resume.
"""

from __future__ import annotations

import select
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from compat_tests.brokers import RunningBroker
from compat_tests.drivers.base import ConsumerSettings, Driver, Message, ProducerSettings
from compat_tests.helpers import poll_until

INPUTS = 150
KILLS = 2
COPIED_BEFORE_KILL = 30  # by each killed instance, counted from its start
RUN_TIMEOUT_S = 120.0
REPO_ROOT = Path(__file__).resolve().parent.parent


class Service:
    """One instance of the loop as a child process, its progress read from its stdout."""

    def __init__(self, broker: RunningBroker, source: str, sink: str, group: str, txn_id: str) -> None:
        command = [sys.executable, "-m", "compat_tests.eos_loop", "--bootstrap", broker.bootstrap]
        command += ["--input", source, "--output", sink, "--group", group, "--id", txn_id]
        self.process = subprocess.Popen(command, cwd=REPO_ROOT, stdout=subprocess.PIPE, text=True)
        self.copied = 0

    def wait_until_copied(self, count: int) -> None:
        assert self.process.stdout is not None
        # poll(), not select(): the test process may hold descriptors numbered past FD_SETSIZE.
        readable = select.poll()
        readable.register(self.process.stdout, select.POLLIN)
        deadline = time.monotonic() + RUN_TIMEOUT_S
        while self.copied < count:
            assert time.monotonic() < deadline, f"the service copied only {self.copied} records"
            assert self.process.poll() is None, f"the service exited with {self.process.returncode}"
            if readable.poll(1000):
                line = self.process.stdout.readline()
                if line.strip():
                    self.copied = int(line)

    def kill(self) -> None:
        self.process.kill()
        self.process.wait()

    def finish(self) -> int:
        """Let it run until its input is idle; its exit code."""
        try:
            self.process.communicate(timeout=RUN_TIMEOUT_S)
        finally:
            self.process.kill()
        return self.process.returncode


@pytest.mark.usefixtures("group_coordinator")
def test_killed_pipeline_copies_every_record_exactly_once(
    broker: RunningBroker, admin: Driver, topic: str
) -> None:
    source, sink = topic, f"{topic}-out"
    group, txn_id = f"compat-eos-{uuid.uuid4().hex[:8]}", f"compat-eos-{uuid.uuid4().hex[:8]}"
    admin.create_topic(source, 1)
    admin.create_topic(sink, 1)
    inputs = [Message(f"v{i}".encode(), key=f"k{i}".encode(), partition=0) for i in range(INPUTS)]
    admin.produce(source, inputs, ProducerSettings())

    for _ in range(KILLS):
        service = Service(broker, source, sink, group, txn_id)
        service.wait_until_copied(COPIED_BEFORE_KILL)
        service.kill()
    assert Service(broker, source, sink, group, txn_id).finish() == 0

    with admin.consumer(ConsumerSettings(isolation="read_committed")) as consumer:
        consumer.assign({(sink, 0): 0})
        copied = poll_until(consumer, INPUTS)
        assert consumer.poll(10, 2.0) == []  # and nothing more
    assert sorted((r.key, r.value) for r in copied) == sorted((m.key, m.value + b"!") for m in inputs)

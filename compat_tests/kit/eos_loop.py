"""A consume-transform-produce service with exactly-once semantics, as a process to kill.

``python -m compat_tests.kit.eos_loop --bootstrap B --input IN --output OUT --group G --id T``
reads IN (read_committed, in group G), writes each value with ``!`` appended to OUT under the
same key, and commits the consumed offsets inside the same transaction
(``send_offsets_to_transaction``), a few records per transaction, pausing inside each
transaction so a kill lands mid-transaction often.  It exits once, with partitions assigned,
IN has had nothing new for ``--idle-s`` seconds.  Killed and started again with the same transactional id, the new
instance fences the old one and aborts its open transaction, so OUT holds every input
record exactly once for a read_committed reader.  confluent-kafka (librdkafka) is the client.
:class:`Service` is the tests' handle on one such process.
"""

from __future__ import annotations

import argparse
import select
import subprocess
import sys
import time
from pathlib import Path

from confluent_kafka import Consumer, KafkaException, Producer

TIMEOUT_S = 30.0
RECORDS_PER_TRANSACTION = 5
PAUSE_IN_TRANSACTION_S = 0.05
RUN_TIMEOUT_S = 120.0  # for a test driving the service as a child process
REPO_ROOT = Path(__file__).resolve().parents[2]


def run(args: argparse.Namespace) -> int:
    consumer = Consumer(
        {
            "bootstrap.servers": args.bootstrap,
            "group.id": args.group,
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            # A killed instance stays a member until its session times out, and the next
            # instance's join waits for that: the broker's smallest timeout keeps the wait short.
            "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 1000,
        }
    )
    producer = Producer({"bootstrap.servers": args.bootstrap, "transactional.id": args.id})
    producer.init_transactions(TIMEOUT_S)
    consumer.subscribe([args.input])
    idle_since = time.monotonic()
    copied = 0
    while time.monotonic() - idle_since < args.idle_s:
        messages = [m for m in consumer.consume(RECORDS_PER_TRANSACTION, 0.5) if m.error() is None]
        if not consumer.assignment():
            idle_since = time.monotonic()  # still joining the group: not idle yet
        if not messages:
            continue
        idle_since = time.monotonic()
        producer.begin_transaction()
        for message in messages:
            producer.produce(args.output, message.value() + b"!", message.key())
        time.sleep(PAUSE_IN_TRANSACTION_S)
        producer.send_offsets_to_transaction(
            consumer.position(consumer.assignment()), consumer.consumer_group_metadata(), TIMEOUT_S
        )
        producer.commit_transaction(TIMEOUT_S)
        copied += len(messages)
        print(copied, flush=True)
    consumer.close()
    return 0


class Service:
    """One instance of the loop as a child process, its progress read from its stdout."""

    def __init__(self, bootstrap: str, source: str, sink: str, group: str, txn_id: str) -> None:
        command = [sys.executable, "-m", "compat_tests.kit.eos_loop", "--bootstrap", bootstrap]
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for flag in ("--bootstrap", "--input", "--output", "--group", "--id"):
        parser.add_argument(flag, required=True)
    parser.add_argument("--idle-s", type=float, default=5.0)
    try:
        return run(parser.parse_args())
    except KafkaException as error:
        print(f"eos_loop failed: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())

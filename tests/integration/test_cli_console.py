"""``odradek console-produce`` and ``console-consume`` against a real broker, through real sockets.

Every format round-trips: what the producer reads, the consumer writes back line for line
(keys, headers, timestamps); keyed records land where the Java client's partitioner puts them;
records from a stock client come out whole; a group's consumer resumes where it stopped.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess

import pytest
from kafka.partitioner.default import murmur2 as kafka_python_murmur2

from compat_tests.kit.broker_process import OdradekProcess
from compat_tests.kit.brokers import odradek_cli as odradek
from compat_tests.kit.brokers import odradek_command
from compat_tests.kit.drivers.base import Message, ProducerSettings
from compat_tests.kit.drivers.confluent import ConfluentDriver

pytestmark = pytest.mark.timeout(120)

KEYS = [f"user-{i}" for i in range(12)]
BASE_TIME = 1_700_000_000_000


def text_lines(hex_form: bool) -> list[str]:
    """Lines with timestamp, headers, key and value; ``hex_form`` encodes the byte fields."""

    def enc(text: str) -> str:
        return text.encode().hex() if hex_form else text

    return [
        f"{BASE_TIME + i}\tsource:{enc('web')},trace:{enc(str(i))}\t{enc(key)}\t{enc(f'value {i} ü')}"
        for i, key in enumerate(KEYS)
    ]


def create(broker: OdradekProcess, topic: str, partitions: int) -> None:
    created = odradek(
        "topics", "create", topic, "--partitions", str(partitions), "--bootstrap", broker.bootstrap
    )
    assert created.returncode == 0, created.stderr


def consume(broker: OdradekProcess, topic: str, *flags: str) -> list[str]:
    result = odradek("console-consume", topic, "--bootstrap", broker.bootstrap, *flags)
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


@pytest.mark.parametrize("form", ["text", "hex"])
def test_text_and_hex_round_trip(shared_broker: OdradekProcess, form: str) -> None:
    topic = f"round-trip-{form}"
    create(shared_broker, topic, 4)
    lines = text_lines(form == "hex")
    fields = ["--format", form, "--timestamp", "--headers", "--key"]
    produced = odradek(
        "console-produce",
        topic,
        "--bootstrap",
        shared_broker.bootstrap,
        *fields,
        stdin="\n".join(lines) + "\n",
    )
    assert produced.returncode == 0, produced.stderr
    assert f"produced {len(KEYS)} record(s)" in produced.stderr
    consumed = consume(shared_broker, topic, *fields, "--from-beginning", "--max-messages", str(len(KEYS)))
    assert sorted(consumed) == sorted(lines)


def test_json_round_trip_and_partitioning(shared_broker: OdradekProcess) -> None:
    topic = "round-trip-json"
    create(shared_broker, topic, 5)
    records = [
        {
            "key": key,
            "value": f"v{i}",
            "headers": [["h", f"{i}"], ["empty", None]],
            "timestamp": BASE_TIME + i,
        }
        for i, key in enumerate(KEYS)
    ]
    records.append({"key": None, "value": None, "headers": [], "timestamp": BASE_TIME, "partition": 3})
    stdin = "\n".join(json.dumps(r) for r in records) + "\n"
    produced = odradek(
        "console-produce", topic, "--format", "json", "--bootstrap", shared_broker.bootstrap, stdin=stdin
    )
    assert produced.returncode == 0, produced.stderr
    consumed = [
        json.loads(line)
        for line in consume(
            shared_broker, topic, "--format", "json", "--from-beginning", "--max-messages", str(len(records))
        )
    ]
    assert {c["timestampType"] for c in consumed} == {"CreateTime"}
    by_key = {c["key"]: c for c in consumed}
    for i, key in enumerate(KEYS):
        got = by_key[key]
        assert (got["value"], got["headers"], got["timestamp"]) == (
            f"v{i}",
            [["h", str(i)], ["empty", None]],
            BASE_TIME + i,
        )
        # The Java client's (and kafka-python's) default partitioner: positive murmur2 mod count.
        assert got["partition"] == (kafka_python_murmur2(key.encode()) & 0x7FFFFFFF) % 5
    tombstone = by_key[None]
    assert (tombstone["value"], tombstone["partition"]) == (None, 3)
    assert sorted(c["offset"] for c in consumed if c["partition"] == 3)[0] == 0


def test_reads_what_a_stock_client_wrote(shared_broker: OdradekProcess) -> None:
    topic = "from-librdkafka"
    create(shared_broker, topic, 1)
    records = [
        Message(b"v%d" % i, None if i % 2 else b"k%d" % i, (("n", b"%d" % i),), timestamp_ms=BASE_TIME + i)
        for i in range(50)
    ]
    ConfluentDriver(shared_broker.bootstrap).produce(topic, records, ProducerSettings(compression="zstd"))
    consumed = [
        json.loads(line)
        for line in consume(
            shared_broker, topic, "--format", "json", "--from-beginning", "--max-messages", "50"
        )
    ]
    assert [c["offset"] for c in consumed] == list(range(50))
    assert consumed[1] == {
        "topic": topic,
        "partition": 0,
        "offset": 1,
        "timestamp": BASE_TIME + 1,
        "timestampType": "CreateTime",
        "key": None,
        "value": "v1",
        "headers": [["n", "1"]],
    }
    assert consumed[2]["key"] == "k2"


def test_group_resumes_where_it_committed(shared_broker: OdradekProcess) -> None:
    topic, group = "resumed", "console-group"
    create(shared_broker, topic, 1)
    lines = [f"line {i}" for i in range(10)]
    produced = odradek(
        "console-produce", topic, "--bootstrap", shared_broker.bootstrap, stdin="\n".join(lines)
    )
    assert produced.returncode == 0, produced.stderr
    first = consume(shared_broker, topic, "--group", group, "--from-beginning", "--max-messages", "4")
    second = consume(shared_broker, topic, "--group", group, "--max-messages", "4")
    assert (first, second) == (lines[:4], lines[4:8])
    described = json.loads(
        odradek(
            "groups", "describe", group, "--output", "json", "--bootstrap", shared_broker.bootstrap
        ).stdout
    )
    assert described["offsets"] == [{"topic": topic, "partition": 0, "committed": 8, "latest": 10, "lag": 2}]


def test_idle_timeout_and_latest_start(shared_broker: OdradekProcess) -> None:
    topic = "idle"
    create(shared_broker, topic, 2)
    assert (
        odradek("console-produce", topic, "--bootstrap", shared_broker.bootstrap, stdin="old\n").returncode
        == 0
    )
    result = odradek("console-consume", topic, "--timeout-ms", "300", "--bootstrap", shared_broker.bootstrap)
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""  # without --from-beginning it starts at the end, as Kafka's does
    assert "Processed a total of 0 messages" in result.stderr


def test_bad_input_names_its_line_and_sends_nothing(shared_broker: OdradekProcess) -> None:
    topic = "bad-input"
    create(shared_broker, topic, 1)
    result = odradek(
        "console-produce", topic, "--key", "--bootstrap", shared_broker.bootstrap, stdin="k\tv\nno-key-here\n"
    )
    assert result.returncode == 1
    assert "line 2: expected 2 tab-separated fields, got 1" in result.stderr
    bad_json = odradek(
        "console-produce",
        topic,
        "--format",
        "json",
        "--bootstrap",
        shared_broker.bootstrap,
        stdin='{"value": 5}\n',
    )
    assert bad_json.returncode == 1
    assert "line 1: value must be a string or null" in bad_json.stderr
    assert consume(shared_broker, topic, "--from-beginning", "--timeout-ms", "200") == []
    missing = odradek("console-consume", "no-such-topic", "--bootstrap", shared_broker.bootstrap)
    assert missing.returncode == 1
    assert "does not exist" in missing.stderr


def test_ctrl_c_commits_and_reports(shared_broker: OdradekProcess) -> None:
    """A consumer without limits runs until Ctrl-C, then commits its positions and exits cleanly."""
    topic, group = "interrupted", "interrupted-group"
    create(shared_broker, topic, 1)
    command = [odradek_command(), "console-consume", topic, "--group", group, "--from-beginning"]
    consumer = subprocess.Popen(
        [*command, "--bootstrap", shared_broker.bootstrap],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONFAULTHANDLER": "1"},  # SIGABRT dumps where it is stuck
        # As a terminal's Ctrl-C finds it: a test run started in the background (``cmd &`` in a
        # script) ignores SIGINT, and a child inherits that, so the consumer would never stop.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        assert (
            odradek(
                "console-produce", topic, "--bootstrap", shared_broker.bootstrap, stdin="a\nb\nc\n"
            ).returncode
            == 0
        )
        assert consumer.stdout is not None
        assert [consumer.stdout.readline() for _ in range(3)] == [b"a\n", b"b\n", b"c\n"]
        consumer.send_signal(signal.SIGINT)
        try:
            _, stderr = consumer.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            # Should it hang anyway: show where.
            consumer.send_signal(signal.SIGABRT)
            _, stderr = consumer.communicate(timeout=10)
            raise AssertionError(
                f"no exit 60 s after Ctrl-C; its threads:\n{stderr.decode()[-4000:]}"
            ) from None
    finally:
        consumer.kill()
    assert consumer.returncode == 0, stderr
    assert b"Processed a total of 3 messages" in stderr
    described = json.loads(
        odradek(
            "groups", "describe", group, "--output", "json", "--bootstrap", shared_broker.bootstrap
        ).stdout
    )
    assert [o["committed"] for o in described["offsets"]] == [3]


def test_an_empty_line_is_an_empty_value(shared_broker: OdradekProcess) -> None:
    """What the consumer prints for an empty value, the producer reads back as one."""
    topic = "empty-values"
    create(shared_broker, topic, 1)
    produced = odradek("console-produce", topic, "--bootstrap", shared_broker.bootstrap, stdin="a\n\nb\r\n")
    assert produced.returncode == 0, produced.stderr
    assert consume(shared_broker, topic, "--from-beginning", "--max-messages", "3") == ["a", "", "b"]

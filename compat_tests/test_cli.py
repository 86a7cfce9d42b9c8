"""The ``odradek`` operator commands are Kafka clients: the same scenarios pass against Apache Kafka.

What the CLI produces, stock clients read (keys, headers, timestamps, and keyed records on the
partitions the Java client's partitioner picks, which kafka-python shares); what stock clients
produce, the CLI prints; its offset resets, group deletions and config changes are what stock
clients then see; and a group with a live member is refused with kafka-consumer-groups.sh's
message.
"""

from __future__ import annotations

import json
import uuid

from compat_tests.helpers import eventually, poll_until
from compat_tests.kit.brokers import RunningBroker, odradek_cli
from compat_tests.kit.drivers.base import ConsumerSettings, Driver, Message, ProducerSettings
from compat_tests.pools import BrokerPool, DriverPool

BASE_TIME = 1_700_000_000_000
KEEP = {"retention.ms": "-1"}
"""The records' timestamps are years old: without it a broker's retention check (Kafka's runs
every five minutes) may delete them in the middle of a scenario."""
KEYS = [f"key-{i}" for i in range(9)]


def cli(broker: RunningBroker, *args: str, stdin: str | None = None) -> str:
    result = odradek_cli(*args, "--bootstrap", broker.bootstrap, stdin=stdin)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_cli_records_reach_stock_clients_and_back(
    broker: RunningBroker, admin: Driver, drivers: DriverPool, topic: str
) -> None:
    admin.create_topic(topic, 3, KEEP)
    lines = [
        json.dumps({"key": key, "value": f"v{i}", "headers": [["n", str(i)]], "timestamp": BASE_TIME + i})
        for i, key in enumerate(KEYS)
    ]
    cli(broker, "console-produce", topic, "--format", "json", stdin="\n".join(lines))
    with admin.consumer(ConsumerSettings()) as consumer:
        consumer.assign({(topic, p): 0 for p in range(3)})
        received = {r.key: r for r in poll_until(consumer, len(KEYS))}
    for i, key in enumerate(KEYS):
        got = received[key.encode()]
        assert (got.value, got.headers, got.timestamp_ms) == (
            f"v{i}".encode(),
            (("n", str(i).encode()),),
            BASE_TIME + i,
        )
    # kafka-python's default partitioner is the Java client's murmur2: same key, same partition.
    drivers.get("kafka-python", broker.bootstrap).produce(
        topic, [Message(b"again", key=key.encode()) for key in KEYS], ProducerSettings()
    )
    with admin.consumer(ConsumerSettings()) as consumer:
        consumer.assign({(topic, p): 0 for p in range(3)})
        placed = {(r.key, r.value): r.partition for r in poll_until(consumer, 2 * len(KEYS))}
    assert [placed[(k.encode(), b"again")] for k in KEYS] == [received[k.encode()].partition for k in KEYS]
    assert len(set(placed.values())) > 1

    admin.produce(
        topic,
        [Message(b"stock", key=b"s", headers=(("h", b"x"),), partition=1, timestamp_ms=BASE_TIME)],
        ProducerSettings(),
    )
    out = cli(
        broker,
        "console-consume",
        topic,
        "--partition",
        "1",
        "--format",
        "json",
        "--from-beginning",
        "--max-messages",
        "20",
        "--timeout-ms",
        "3000",
    )
    printed = [json.loads(line) for line in out.splitlines()]
    stock = [p for p in printed if p["value"] == "stock"]
    assert stock == [
        {
            "topic": topic,
            "partition": 1,
            "offset": printed.index(stock[0]),
            "timestamp": BASE_TIME,
            "timestampType": "CreateTime",
            "key": "s",
            "value": "stock",
            "headers": [["h", "x"]],
        }
    ]


def test_cli_group_offsets(broker: RunningBroker, admin: Driver, topic: str, group_coordinator: None) -> None:
    admin.create_topic(topic, 1)
    admin.produce(topic, [Message(b"%d" % i, partition=0) for i in range(10)], ProducerSettings())
    group = f"compat-cli-{uuid.uuid4().hex[:8]}"
    planned = cli(broker, "groups", "reset-offsets", group, "--topic", topic, "--to-offset", "4", "--dry-run")
    assert planned.splitlines()[2].split() == [group, topic, "0", "4"]
    assert admin.group_offsets(group) == {}
    cli(broker, "groups", "reset-offsets", group, "--topic", topic, "--to-offset", "4", "--execute")
    assert admin.group_offsets(group) == {(topic, 0): 4}

    with admin.consumer(ConsumerSettings(group=group)) as member:
        member.subscribe([topic])
        assert [r.offset for r in poll_until(member, 1)] == [4]  # it resumes from the reset
        eventually(lambda: _assert_state(admin, group, "Stable"))
        refused = odradek_cli(
            "groups",
            "reset-offsets",
            group,
            "--topic",
            topic,
            "--to-earliest",
            "--execute",
            "--bootstrap",
            broker.bootstrap,
        )
        assert refused.returncode == 1
        assert (
            f"Assignments can only be reset if the group '{group}' is inactive, but the current state is Stable."
            in refused.stderr
        )
        subscribed = odradek_cli(
            "groups", "delete-offsets", group, "--topic", topic, "--bootstrap", broker.bootstrap
        )
        assert subscribed.returncode == 1
        assert "Encountered some partition-level error" in subscribed.stderr
        assert [topic, "0", "Error:", "GROUP_SUBSCRIBED_TO_TOPIC"] in [
            line.split() for line in subscribed.stderr.splitlines()
        ]
        not_empty = odradek_cli("groups", "delete", group, "--bootstrap", broker.bootstrap)
        assert not_empty.returncode == 1 and "NON_EMPTY_GROUP" in not_empty.stderr
    eventually(lambda: _assert_state(admin, group, "Empty"))
    cli(broker, "groups", "delete-offsets", group, "--all-topics")
    assert admin.group_offsets(group) == {}
    cli(broker, "groups", "delete", group)
    assert admin.group_offsets(group) == {}


def _assert_state(admin: Driver, group: str, state: str) -> None:
    assert admin.describe_group(group).state == state


def test_cli_configs(broker: RunningBroker, admin: Driver, topic: str) -> None:
    admin.create_topic(topic, 1)
    cli(broker, "configs", "set", "--topic", topic, "retention.ms=7200000", "segment.ms=3600000")
    eventually(lambda: _assert_config(admin, topic, "retention.ms", "7200000"))
    shown = json.loads(cli(broker, "configs", "get", "--topic", topic, "--output", "json"))
    assert {"name": "segment.ms", "value": "3600000", "source": "DYNAMIC_TOPIC_CONFIG"} in shown
    cli(broker, "configs", "delete", "--topic", topic, "retention.ms")
    eventually(lambda: _assert_config(admin, topic, "retention.ms", "604800000"))
    assert admin.describe_configs(topic)["segment.ms"] == "3600000"


def _assert_config(admin: Driver, topic: str, key: str, value: str) -> None:
    assert admin.describe_configs(topic)[key] == value


def test_cli_reads_committed_or_everything(broker: RunningBroker, admin: Driver, topic: str) -> None:
    """console-consume's --isolation-level as Kafka's consumers: read_committed skips the aborted
    transaction and every marker, read_uncommitted shows the aborted records too."""
    admin.create_topic(topic, 1)
    with admin.transactional_producer(f"compat-cli-{uuid.uuid4().hex[:8]}") as producer:
        for values, commit in (([b"c0", b"c1"], True), ([b"a0"], False), ([b"c2"], True)):
            producer.begin()
            producer.send(topic, [Message(v, partition=0) for v in values])
            (producer.commit if commit else producer.abort)()
    consume = ["console-consume", topic, "--from-beginning", "--timeout-ms", "2000", "--format", "json"]
    committed = [
        json.loads(line) for line in cli(broker, *consume, "--isolation-level", "read_committed").splitlines()
    ]
    assert [(r["offset"], r["value"]) for r in committed] == [(0, "c0"), (1, "c1"), (5, "c2")]
    everything = [json.loads(line) for line in cli(broker, *consume).splitlines()]
    assert [(r["offset"], r["value"]) for r in everything] == [(0, "c0"), (1, "c1"), (3, "a0"), (5, "c2")]


def test_console_produce_to_a_missing_topic_the_broker_creates(
    broker: RunningBroker, admin: Driver, topic: str
) -> None:
    """As Kafka's console producer: the topic is asked for with auto-creation allowed, so a
    broker with auto.create.topics.enable (Kafka's default) creates it with its defaults."""
    result = odradek_cli("console-produce", topic, "--key", "--bootstrap", broker.bootstrap, stdin="a\tb\n")
    assert (result.returncode, result.stderr.strip()) == (0, f"produced 1 record(s) to {topic}")
    assert admin.partition_count(topic) == 1  # num.partitions, the broker's default
    with admin.consumer(ConsumerSettings()) as consumer:
        consumer.assign({(topic, 0): 0})
        assert [(r.key, r.value) for r in poll_until(consumer, 1)] == [(b"a", b"b")]


def test_console_produce_to_a_missing_topic_the_broker_does_not_create(
    brokers: BrokerPool, admin: Driver, drivers: DriverPool, topic: str
) -> None:
    """With auto.create.topics.enable=false the topic is reported missing once --max-block-ms
    (the producer's max.block.ms) has passed, saying how to create it; nothing is created."""
    broker = brokers.get({"auto.create.topics.enable": "false"})
    result = odradek_cli(
        "console-produce",
        topic,
        "--key",
        "--max-block-ms",
        "1000",
        "--bootstrap",
        broker.bootstrap,
        stdin="a\tb\n",
    )
    assert result.returncode == 1
    assert f"topic '{topic}' not present in metadata after 1000 ms" in result.stderr
    assert f"Create it with `odradek topics create {topic}`" in result.stderr
    assert topic not in drivers.get("confluent-kafka", broker.bootstrap).list_topics()

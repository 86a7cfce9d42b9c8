"""Apache Kafka's own command-line tools against the broker, run from their main classes.

Each test runs the tools as ``bin/kafka-*.sh`` would (``java -cp <jars> <MainClass>
--bootstrap-server ...``, jars from Maven Central), asserts on their output and exit code, and
checks the broker's state afterwards through the setup client. A JVM starts in about a second,
so each test batches the actions of one tool.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from compat_tests.helpers import eventually
from compat_tests.kafka_tools import CONFIGS, ToolRun, ok, run_tool
from compat_tests.kit.brokers import RunningBroker
from compat_tests.kit.drivers.base import (
    ClientError,
    Driver,
    ErrorKind,
    Message,
    ProducerSettings,
)
from compat_tests.kit.raw_protocol import addresses_by_id

TOOLS = "org.apache.kafka.tools."
GROUPS = TOOLS + "consumer.group.ConsumerGroupCommand"


@pytest.fixture
def run(tool_classpath: str, broker: RunningBroker) -> Iterator[object]:
    """``run(main_class, *args)``: the tool against the session broker (see ``run_tool``)."""

    def tool(main_class: str, *args: str, bootstrap_last: bool = False, stdin: str | None = None) -> ToolRun:
        return run_tool(tool_classpath, broker.bootstrap, main_class, *args, bootstrap_last=bootstrap_last,
                        stdin=stdin)  # fmt: skip

    yield tool


def produce(admin: Driver, topic: str, count: int, partitions: int) -> None:
    messages = [Message(f"v{i}".encode(), partition=i % partitions, timestamp_ms=None) for i in range(count)]
    admin.produce(topic, messages, ProducerSettings())


def test_topics(run, admin: Driver, topic: str) -> None:
    """kafka-topics: create, describe (DescribeTopicPartitions), alter partitions, list, delete."""
    ok(
        run(
            TOOLS + "TopicCommand",
            "--create",
            "--topic",
            topic,
            "--partitions",
            "2",
            "--config",
            "retention.ms=7200000",
        )
    )
    described = ok(run(TOOLS + "TopicCommand", "--describe", "--topic", topic))
    assert f"Topic: {topic}\tTopicId: " in described
    assert "PartitionCount: 2\tReplicationFactor: 1" in described
    assert "retention.ms=7200000" in described
    # Its one replica leads and is the ISR (whichever broker behind the bootstrap address holds it).
    assert re.search(
        rf"Topic: {re.escape(topic)}\tPartition: 1\tLeader: (\d+)\tReplicas: \1\tIsr: \1\t", described
    )
    ok(run(TOOLS + "TopicCommand", "--alter", "--topic", topic, "--partitions", "3"))

    def grown() -> None:
        assert admin.partition_count(topic) == 3

    eventually(grown)
    assert topic in ok(run(TOOLS + "TopicCommand", "--list")).split()
    ok(run(TOOLS + "TopicCommand", "--delete", "--topic", topic))

    def gone() -> None:
        assert topic not in admin.list_topics()

    eventually(gone)


def test_configs_topic(run, admin: Driver, topic: str) -> None:
    """kafka-configs on a topic: add, describe, delete an override."""
    admin.create_topic(topic, 1)
    entity = ["--entity-type", "topics", "--entity-name", topic]
    ok(run(CONFIGS, "--alter", *entity, "--add-config", "retention.ms=3600000,cleanup.policy=compact"))
    described = ok(run(CONFIGS, "--describe", *entity))
    assert (
        "retention.ms=3600000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=3600000"
        in described
    )
    assert admin.describe_configs(topic)["cleanup.policy"] == "compact"
    ok(run(CONFIGS, "--alter", *entity, "--delete-config", "retention.ms"))
    assert "retention.ms" not in ok(run(CONFIGS, "--describe", *entity))


@pytest.mark.slow
def test_configs_broker_dynamic(run, admin: Driver, topic: str) -> None:
    """Dynamic broker configs: the cluster default and this node's value apply at once, are
    described with their sources, and keys Kafka keeps static are refused in Kafka's words."""
    admin.create_topic(topic, 1)
    default = ["--entity-type", "brokers", "--entity-default"]
    node = ["--entity-type", "brokers", "--entity-name", "1"]
    try:
        ok(
            run(
                CONFIGS,
                "--alter",
                *default,
                "--add-config",
                "message.max.bytes=2000,log.retention.ms=5400000",
            )
        )
        ok(run(CONFIGS, "--alter", *node, "--add-config", "log.cleaner.backoff.ms=20000"))
        described = ok(run(CONFIGS, "--describe", *default))
        assert (
            "message.max.bytes=2000 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:message.max.bytes=2000}"
            in described
        )
        assert (
            "log.cleaner.backoff.ms=20000 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:log.cleaner.backoff.ms=20000"
            in (ok(run(CONFIGS, "--describe", *node)))
        )

        def applied() -> None:
            assert admin.describe_configs(topic)["retention.ms"] == "5400000"
            with pytest.raises(ClientError) as refused:
                admin.produce(topic, [Message(b"x" * 5000, partition=0)], ProducerSettings(retries=0))
            assert refused.value.kind == ErrorKind.MESSAGE_TOO_LARGE

        eventually(applied)
        static = run(CONFIGS, "--alter", *node, "--add-config", "log.dirs=/elsewhere")
        assert static.code != 0
        assert (
            "InvalidRequestException: Cannot update these configs dynamically: [log.dirs]"
            in static.out + static.err
        )
        small = run(CONFIGS, "--alter", *default, "--add-config", "log.segment.bytes=100")
        assert (
            "Invalid value 100 for configuration log.segment.bytes: Value must be at least 1048576"
            in small.out + small.err
        )
        wrong = run(CONFIGS, "--alter", *default, "--add-config", "log.retention.ms=soon")
        assert (
            "Invalid value soon for configuration log.retention.ms: Not a number of type LONG"
            in wrong.out + wrong.err
        )
    finally:
        run(CONFIGS, "--alter", *default, "--delete-config", "message.max.bytes,log.retention.ms")
        run(CONFIGS, "--alter", *node, "--delete-config", "log.cleaner.backoff.ms")
    eventually(lambda: admin.produce(topic, [Message(b"x" * 5000, partition=0)], ProducerSettings()))
    assert "message.max.bytes" not in ok(run(CONFIGS, "--describe", *default))


def test_configs_broker_replication_defaults(run) -> None:
    """The replication settings (how followers fetch, when they leave the ISR) are described
    with Kafka's names and defaults."""
    described = ok(run(CONFIGS, "--describe", "--entity-type", "brokers", "--entity-name", "1", "--all"))
    for key, value in (
        ("replica.lag.time.max.ms", "30000"),
        ("replica.fetch.wait.max.ms", "500"),
        ("replica.fetch.min.bytes", "1"),
        ("replica.fetch.max.bytes", "1048576"),
        ("replica.fetch.response.max.bytes", "10485760"),
        ("replica.fetch.backoff.ms", "1000"),
        ("replica.socket.timeout.ms", "30000"),
    ):
        assert f"{key}={value} sensitive=false synonyms={{DEFAULT_CONFIG:{key}={value}}}" in described


@pytest.mark.slow
def test_configs_group(run) -> None:
    """GROUP config resources (KIP-848): set, describe, range-checked, deleted."""
    group = ["--entity-type", "groups", "--entity-name", f"tools-{uuid.uuid4().hex[:8]}"]
    ok(
        run(
            CONFIGS,
            "--alter",
            *group,
            "--add-config",
            "consumer.session.timeout.ms=50000,consumer.heartbeat.interval.ms=6000",
        )
    )
    described = ok(run(CONFIGS, "--describe", *group))
    assert (
        "consumer.session.timeout.ms=50000 sensitive=false synonyms={DYNAMIC_GROUP_CONFIG:consumer.session.timeout.ms=50000, "
        "DEFAULT_CONFIG:group.consumer.session.timeout.ms=45000}" in described
    )
    low = run(CONFIGS, "--alter", *group, "--add-config", "consumer.session.timeout.ms=1000")
    assert (
        "InvalidConfigurationException: consumer.session.timeout.ms must be greater than or equal to "
        "group.consumer.min.session.timeout.ms" in low.out + low.err
    )
    unknown = run(CONFIGS, "--alter", *group, "--add-config", "no.such.key=1")
    assert "Unknown group config name: no.such.key" in unknown.out + unknown.err
    ok(run(CONFIGS, "--alter", *group, "--delete-config", "consumer.heartbeat.interval.ms"))
    described = ok(run(CONFIGS, "--describe", *group))
    assert "consumer.heartbeat.interval.ms" not in described
    assert "consumer.session.timeout.ms=50000" in described


@pytest.mark.slow
def test_consumer_groups(run, admin: Driver, topic: str) -> None:
    """kafka-consumer-groups: list, describe, reset (datetime, shift), delete offsets, delete."""
    admin.create_topic(topic, 2)
    produce(admin, topic, 40, 2)
    group = f"tools-group-{uuid.uuid4().hex[:8]}"
    # ConsumerPerformance gives up after --timeout ms without a record (10 s by default): a slow
    # first rebalance on a loaded machine would end it with 0 records consumed.
    consumed = ok(
        run(
            TOOLS + "ConsumerPerformance",
            *("--topic", topic, "--messages", "40", "--group", group, "--timeout", "120000"),
        )
    )
    assert consumed.strip().splitlines()[-1].split(", ")[4] == "40"

    def committed() -> None:
        assert admin.group_offsets(group) == {(topic, 0): 20, (topic, 1): 20}

    eventually(committed)
    assert re.search(rf"^{re.escape(group)}\s+Empty\s*$", ok(run(GROUPS, "--list", "--state")), re.M)
    described = ok(run(GROUPS, "--describe", "--group", group))
    assert re.search(rf"{re.escape(group)}\s+{re.escape(topic)}\s+0\s+20\s+20\s+0\s", described)
    to = ["--group", group, "--topic", topic, "--execute"]
    ok(run(GROUPS, "--reset-offsets", "--to-datetime", "2000-01-01T00:00:00.000", *to))
    assert admin.group_offsets(group) == {(topic, 0): 0, (topic, 1): 0}
    ok(run(GROUPS, "--reset-offsets", "--shift-by", "5", *to))
    assert admin.group_offsets(group) == {(topic, 0): 5, (topic, 1): 5}
    deleted = ok(run(GROUPS, "--delete-offsets", "--group", group, "--topic", f"{topic}:1"))
    assert re.search(rf"{re.escape(topic)}\s+1\s+Successful", deleted)
    assert admin.group_offsets(group) == {(topic, 0): 5}
    assert "was successful" in ok(run(GROUPS, "--delete", "--group", group))
    assert group not in ok(run(GROUPS, "--list")).split()


def test_offsets_delete_records_log_dirs(
    run, admin: Driver, broker: RunningBroker, topic: str, tmp_path
) -> None:
    """kafka-get-offsets, kafka-delete-records and kafka-log-dirs on one topic."""
    admin.create_topic(topic, 2)
    produce(admin, topic, 20, 2)
    assert sorted(ok(run(TOOLS + "GetOffsetShell", "--topic", topic)).split()) == [
        f"{topic}:0:10",
        f"{topic}:1:10",
    ]
    spec = tmp_path / "delete.json"
    spec.write_text(json.dumps({"version": 1, "partitions": [{"topic": topic, "partition": 0, "offset": 4}]}))
    assert f"partition: {topic}-0\tlow_watermark: 4" in ok(
        run(TOOLS + "DeleteRecordsCommand", "--offset-json-file", str(spec))
    )
    earliest = ok(run(TOOLS + "GetOffsetShell", "--topic", topic, "--time", "-2"))
    assert sorted(earliest.split()) == [f"{topic}:0:4", f"{topic}:1:0"]
    report = ok(run(TOOLS + "LogDirsCommand", "--describe", "--topic-list", topic))
    answer = json.loads(report.strip().splitlines()[-1])
    assert {node["broker"] for node in answer["brokers"]} == set(addresses_by_id(broker.bootstrap))
    held = [
        (p["partition"], p) for node in answer["brokers"] for d in node["logDirs"] for p in d["partitions"]
    ]
    partitions = dict(held)
    assert len(held) == 2 and set(partitions) == {f"{topic}-0", f"{topic}-1"}  # one replica each
    assert all(p["size"] > 0 and p["offsetLag"] == 0 and not p["isFuture"] for p in partitions.values())


def test_features_quorum_cluster(run, admin: Driver, broker: RunningBroker) -> None:
    """kafka-features describe, kafka-metadata-quorum (one voter leads; every other broker behind
    the bootstrap address observes), kafka-cluster."""
    features = ok(run(TOOLS + "FeatureCommand", "describe"))
    assert re.search(
        r"Feature: group.version\s+SupportedMinVersion: 0\s+SupportedMaxVersion: 1\s+FinalizedVersionLevel: 1",
        features,
    )
    assert "group.version was upgraded to 1." in ok(
        run(TOOLS + "FeatureCommand", "upgrade", "--feature", "group.version=1")
    )
    brokers = set(addresses_by_id(broker.bootstrap))
    status = ok(run(TOOLS + "MetadataQuorumCommand", "describe", "--status"))
    leader = re.search(r"^LeaderId:\s+(\d+)$", status, re.M)
    assert leader and int(leader[1]) in brokers, status
    assert re.search(rf'^CurrentVoters:\s+\[\{{"id": {leader[1]}, ', status, re.M)
    observers = re.search(r"^CurrentObservers:\s+(.*)$", status, re.M)
    assert observers and {int(i) for i in re.findall(r'"id": (\d+)', observers[1])} == brokers - {
        int(leader[1])
    }
    replication = ok(run(TOOLS + "MetadataQuorumCommand", "describe", "--replication")).splitlines()
    assert replication[0].split() == [
        "NodeId",
        "DirectoryId",
        "LogEndOffset",
        "Lag",
        "LastFetchTimestamp",
        "LastCaughtUpTimestamp",
        "Status",
    ]
    rows = {row.split()[0]: row.split() for row in replication[1:]}
    assert rows[leader[1]][3] == "0" and rows[leader[1]][-1] == "Leader"
    assert {node for node, row in rows.items() if row[-1] == "Observer"} == {str(b) for b in brokers} - {
        leader[1]
    }
    printed = ok(run(TOOLS + "ClusterTool", "cluster-id", bootstrap_last=True))
    assert re.fullmatch(r"Cluster ID: [A-Za-z0-9_-]{22}\n", printed), printed
    endpoints = ok(run(TOOLS + "ClusterTool", "list-endpoints", bootstrap_last=True))
    assert {int(line.split()[0]) for line in endpoints.splitlines()[1:]} == brokers, endpoints


def test_perf_and_verifiable_clients(run, admin: Driver, topic: str) -> None:
    """kafka-producer-perf-test, kafka-consumer-perf-test, kafka-verifiable-producer/-consumer,
    kafka-e2e-latency."""
    admin.create_topic(topic, 2)
    sent = ok(
        run(
            TOOLS + "ProducerPerformance",
            "--topic",
            topic,
            "--num-records",
            "500",
            "--record-size",
            "100",
            "--throughput",
            "-1",
        )
    )
    assert re.search(r"^500 records sent, ", sent, re.M)
    consumed = ok(
        run(TOOLS + "ConsumerPerformance", "--topic", topic, "--messages", "500", "--timeout", "120000")
    )
    assert consumed.strip().splitlines()[-1].split(", ")[4] == "500"
    produced = ok(run(TOOLS + "VerifiableProducer", "--topic", topic, "--max-messages", "20"))
    events = [json.loads(line) for line in produced.splitlines() if line.startswith("{")]
    assert [e for e in events if e["name"] == "tool_data"][-1]["acked"] == 20
    assert sum(admin.list_offsets(topic, [0, 1], "latest").values()) == 520
    verified = ok(
        run(
            TOOLS + "VerifiableConsumer",
            "--topic",
            topic,
            "--group-id",
            f"tools-{uuid.uuid4().hex[:8]}",
            "--max-messages",
            "520",
            "--reset-policy",
            "earliest",
        )
    )
    events = [json.loads(line) for line in verified.splitlines() if line.startswith("{")]
    assert sum(e["count"] for e in events if e["name"] == "records_consumed") == 520
    # Created here, not by the tool: EndToEndLatency creates a missing topic and at once assigns
    # its consumer the partitions the consumer's metadata lists, which a fresh Kafka topic may
    # not have yet (IllegalStateException: "not subscribed to any topics or assigned any
    # partitions", seen in CI). The kit waits until every broker lists it.
    admin.create_topic(f"{topic}-e2e", 1)
    e2e = [f"{topic}-e2e", "--num-records", "20", "--producer-acks", "all", "--record-size", "100"]
    latency = ok(run(TOOLS + "EndToEndLatency", "--topic", *e2e))
    assert re.search(r"^Avg latency: [\d.]+ ms$", latency, re.M), latency
    assert admin.list_offsets(f"{topic}-e2e", [0], "latest") == {0: 20}


def test_reassignments_and_leader_election(run, admin: Driver, topic: str, tmp_path) -> None:
    """kafka-reassign-partitions (with a throttle, verify, cancel, list) and kafka-leader-election
    on one node: everything is already where it belongs."""
    admin.create_topic(topic, 2)
    elected = ok(
        run(
            TOOLS + "LeaderElectionCommand",
            "--election-type",
            "preferred",
            "--topic",
            topic,
            "--partition",
            "0",
        )
    )
    assert f"Valid replica already elected for partitions {topic}-0" in elected
    ok(run(TOOLS + "LeaderElectionCommand", "--election-type", "unclean", "--all-topic-partitions"))
    missing = run(
        TOOLS + "LeaderElectionCommand", "--election-type", "preferred", "--topic", topic, "--partition", "7"
    )
    assert missing.code == 1
    assert f"UnknownTopicOrPartitionException: No such partition as {topic}-7" in missing.out + missing.err
    plan = tmp_path / "plan.json"
    plan.write_text(
        json.dumps(
            {
                "version": 1,
                "partitions": [{"topic": topic, "partition": 0, "replicas": [1], "log_dirs": ["any"]}],
            }
        )
    )
    reassign = [TOOLS + "reassign.ReassignPartitionsCommand"]
    started = ok(run(*reassign, "--execute", "--reassignment-json-file", str(plan), "--throttle", "10000"))
    assert f"Successfully started partition reassignment for {topic}-0" in started
    node = ["--entity-type", "brokers", "--entity-name", "1"]
    assert "leader.replication.throttled.rate=10000 sensitive=false" in ok(run(CONFIGS, "--describe", *node))
    verified = ok(run(*reassign, "--verify", "--reassignment-json-file", str(plan)))
    assert f"Reassignment of partition {topic}-0 is completed." in verified
    # The tool clears the throttles of every broker (one, or those behind the bootstrap address).
    assert re.search(r"Clearing broker-level throttles on brokers? 1\b", verified), verified
    assert "throttled" not in ok(run(CONFIGS, "--describe", *node))
    assert "throttled" not in ok(
        run(CONFIGS, "--describe", "--entity-type", "topics", "--entity-name", topic)
    )
    assert "No partition reassignments found." in ok(run(*reassign, "--list"))
    cancelled = ok(run(*reassign, "--cancel", "--reassignment-json-file", str(plan)))
    assert "None of the specified partition reassignments are active." in cancelled


def test_console_clients_groups_and_transactions(run, admin: Driver, topic: str) -> None:
    """kafka-console-producer/-consumer, kafka-groups and kafka-transactions."""
    admin.create_topic(topic, 1)
    lines = "k1\tone\nk2\ttwo\n"
    ok(run(TOOLS + "ConsoleProducer", "--topic", topic, "--reader-property", "parse.key=true", stdin=lines))
    group = f"tools-console-{uuid.uuid4().hex[:8]}"
    consumer = ["--topic", topic, "--group", group, "--from-beginning", "--max-messages", "2"]
    consumed = ok(
        run(TOOLS + "consumer.ConsoleConsumer", *consumer, "--formatter-property", "print.key=true")
    )
    assert consumed.splitlines()[:2] == ["k1\tone", "k2\ttwo"]
    groups = ok(run(TOOLS + "GroupsCommand", "--list"))
    assert re.search(rf"^{re.escape(group)}\s+Classic\s+consumer\s*$", groups, re.M)
    described = ok(
        run(TOOLS + "TransactionsCommand", "describe-producers", "--topic", topic, "--partition", "0")
    )
    assert [column.strip() for column in described.splitlines()[0].split("\t")[:2]] == [
        "ProducerId",
        "ProducerEpoch",
    ]
    listed = ok(run(TOOLS + "TransactionsCommand", "list")).splitlines()
    # Columns are padded to the longest value (other scenarios' transactional ids on a shared broker).
    header = [column.strip() for column in listed[0].split("\t")[:4]]
    assert header == ["TransactionalId", "Coordinator", "ProducerId", "TransactionState"]


def test_configs_broker_loggers(run) -> None:
    """kafka-configs on broker-loggers: levels described, changed live, bad ones refused."""
    node = ["--entity-type", "broker-loggers", "--entity-name", "1"]
    before = re.search(r"^  root=(\w+) ", ok(run(CONFIGS, "--describe", *node)), re.M)
    assert before is not None
    changed = "WARN" if before.group(1) != "WARN" else "INFO"
    try:
        ok(run(CONFIGS, "--alter", *node, "--add-config", f"root={changed}"))
        assert f"  root={changed} sensitive=false synonyms={{}}" in ok(run(CONFIGS, "--describe", *node))
        loud = run(CONFIGS, "--alter", *node, "--add-config", "root=LOUD")
        assert (
            "InvalidConfigurationException: Cannot set the log level of root to LOUD as it is not a supported log "
            "level. Valid log levels are DEBUG, ERROR, FATAL, INFO, TRACE, WARN" in loud.out + loud.err
        )
        removed = run(CONFIGS, "--alter", *node, "--delete-config", "root")
        assert (
            "InvalidRequestException: Removing the log level of the root logger is not allowed"
            in removed.out + removed.err
        )
    finally:
        ok(run(CONFIGS, "--alter", *node, "--add-config", f"root={before.group(1)}"))


@pytest.mark.slow
def test_configs_client_quotas(run) -> None:
    """kafka-configs on users and clients (DescribeClientQuotas, AlterClientQuotas): quotas
    set, described per entity, refused in Kafka's words, removed."""
    user, client = f"tools-user-{uuid.uuid4().hex[:8]}", f"tools-client-{uuid.uuid4().hex[:8]}"
    users = ["--entity-type", "users", "--entity-name", user]
    clients = ["--entity-type", "clients", "--entity-name", client]
    set_rates = "producer_byte_rate=1024,consumer_byte_rate=2048"
    assert ok(run(CONFIGS, "--alter", *users, "--add-config", set_rates)).strip() == (
        f"Completed updating config for user {user}."
    )
    ok(run(CONFIGS, "--alter", *clients, "--add-config", "request_percentage=50.5"))
    ok(run(CONFIGS, "--alter", *users, *clients, "--add-config", "producer_byte_rate=4096"))
    assert ok(run(CONFIGS, "--describe", *users)).strip() == (
        f"Quota configs for user-principal '{user}' are consumer_byte_rate=2048.0, producer_byte_rate=1024.0"
    )
    assert ok(run(CONFIGS, "--describe", *clients)).strip() == (
        f"Quota configs for client-id '{client}' are request_percentage=50.5"
    )
    assert ok(run(CONFIGS, "--describe", *users, *clients)).strip() == (
        f"Quota configs for user-principal '{user}', client-id '{client}' are producer_byte_rate=4096.0"
    )
    every_user = ok(run(CONFIGS, "--describe", "--entity-type", "users"))
    assert f"Quota configs for user-principal '{user}' are consumer_byte_rate=2048.0" in every_user
    fractional = run(CONFIGS, "--alter", *users, "--add-config", "producer_byte_rate=1.5")
    assert fractional.code != 0
    assert "InvalidRequestException: producer_byte_rate cannot be a fractional value." in fractional.err
    ok(run(CONFIGS, "--alter", *users, "--delete-config", "consumer_byte_rate"))
    assert ok(run(CONFIGS, "--describe", *users)).strip() == (
        f"Quota configs for user-principal '{user}' are producer_byte_rate=1024.0"
    )
    for entity, key in (
        (users, "producer_byte_rate"),
        (clients, "request_percentage"),
        ([*users, *clients], "producer_byte_rate"),
    ):
        ok(run(CONFIGS, "--alter", *entity, "--delete-config", key))
    assert user not in ok(run(CONFIGS, "--describe", "--entity-type", "users"))


class ThrottleStats:
    """librdkafka's statistics callback, keeping the largest broker throttle time it reports."""

    def __init__(self) -> None:
        self.largest_ms = 0

    def __call__(self, stats: str) -> None:
        for broker_stats in json.loads(stats)["brokers"].values():
            self.largest_ms = max(self.largest_ms, broker_stats["throttle"]["max"])

    def settings(self, broker: RunningBroker, client: str) -> dict[str, object]:
        return {
            "bootstrap.servers": broker.bootstrap,
            "client.id": client,
            "statistics.interval.ms": 100,
            "stats_cb": self,
        }


def test_producer_over_its_quota_is_throttled(run, broker: RunningBroker, topic: str) -> None:
    """A client id with a small producer_byte_rate (set with kafka-configs) is throttled: the
    broker answers with a throttle time that librdkafka reports in its statistics.

    A client's first request is measured over Kafka's 10 whole quota windows, so 60 kB against
    4 kB/s is over the quota by half (a throttle of about 4.6 s).
    """
    client = f"throttled-{uuid.uuid4().hex[:8]}"
    clients = ["--entity-type", "clients", "--entity-name", client]
    ok(run(CONFIGS, "--alter", *clients, "--add-config", "producer_byte_rate=4096"))
    stats = ThrottleStats()
    producer = Producer(stats.settings(broker, client) | {"linger.ms": 0})
    try:

        def throttled() -> None:
            producer.produce(topic, b"q" * 60_000)
            assert producer.flush(30) == 0
            producer.poll(0.3)
            assert stats.largest_ms > 0

        eventually(throttled)
    finally:
        producer.flush(30)
        ok(run(CONFIGS, "--alter", *clients, "--delete-config", "producer_byte_rate"))


def test_consumer_over_its_quota_is_throttled(run, admin: Driver, broker: RunningBroker, topic: str) -> None:
    """A client id with a small consumer_byte_rate is throttled: a 60 kB record against 4 kB/s
    (counted over 10 windows) gets its consumer a throttle time, reported in its statistics."""
    admin.create_topic(topic, 1)
    admin.produce(topic, [Message(b"c" * 60_000, partition=0)], ProducerSettings())
    client = f"throttled-consumer-{uuid.uuid4().hex[:8]}"
    clients = ["--entity-type", "clients", "--entity-name", client]
    ok(run(CONFIGS, "--alter", *clients, "--add-config", "consumer_byte_rate=4096"))
    stats = ThrottleStats()
    consumer = Consumer(
        stats.settings(broker, client) | {"group.id": client, "auto.offset.reset": "earliest"}
    )
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])

        def throttled() -> None:
            consumer.poll(0.5)
            assert stats.largest_ms > 0

        eventually(throttled)
    finally:
        consumer.close()
        ok(run(CONFIGS, "--alter", *clients, "--delete-config", "consumer_byte_rate"))


def test_delegation_tokens_are_refused_on_plaintext(run, tmp_path) -> None:
    """A broker without token authentication refuses token requests over PLAINTEXT, as Kafka."""
    config = tmp_path / "admin.properties"
    config.write_text("")
    for action in (["--describe"], ["--create", "--max-life-time-period", "-1"]):
        result = run(TOOLS + "DelegationTokenCommand", *action, "--command-config", str(config))
        assert result.code == 1
        assert "Delegation Token requests are not allowed on PLAINTEXT/1-way SSL channels" in result.err


def test_broker_api_versions(run) -> None:
    listed = ok(run(TOOLS + "BrokerApiVersionsCommand"))
    for api in ("Produce(0):", "Fetch(1):", "Metadata(3):", "ApiVersions(18):", "SaslHandshake(17):"):
        assert api in listed
    assert "UNSUPPORTED" not in listed.split("Produce(0):")[1].split("\n")[0]

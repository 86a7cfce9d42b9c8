"""Topic administration through stock admin clients: create, delete, grow, configure, describe.

Admin tools (kafka-topics, Kafka UI, Terraform providers, Spark's AdminClient) rely on Kafka's
exact error codes and defaults: they print the error name, retry on some and give up on others,
and diff DescribeConfigs output against what they want. So every expectation below is what Apache
Kafka answers (defaults, config sources, error names), checked through both librdkafka's
AdminClient and kafka-python's KafkaAdminClient.

Most tests share one broker (each with its own topics); auto-creation off and restarts get
brokers of their own because they change broker-wide state.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from compat_tests.kit.broker_process import OdradekProcess
from compat_tests.kit.drivers.admin import Admin, BrokerInfo, ConfigValue
from compat_tests.kit.drivers.base import ClientError
from compat_tests.kit.drivers.catalog import ADMINS, CLIENTS
from compat_tests.kit.drivers.confluent import ConfluentAdmin, ConfluentClient
from compat_tests.kit.drivers.kafka_python import raw_produce
from compat_tests.kit.drivers.records import make_records, unique_topic
from tests.integration.waiting import wait_until

pytestmark = pytest.mark.timeout(120)

KAFKA_TOPIC_DEFAULTS = {
    "cleanup.policy": "delete",
    "retention.ms": "604800000",
    "segment.bytes": "1073741824",
    "max.message.bytes": "1048588",
    "message.timestamp.type": "CreateTime",
}
"""Apache Kafka 4.x topic defaults, as DescribeConfigs reports them for a topic without overrides."""


@pytest.fixture(params=list(ADMINS))
def admin(request: pytest.FixtureRequest, shared_broker: OdradekProcess) -> Iterator[Admin]:
    """Each test runs once per admin client, against the module's shared broker."""
    with ADMINS[request.param](shared_broker.bootstrap) as client:
        yield client


@pytest.fixture(scope="module")
def no_autocreate_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OdradekProcess]:
    """A broker started with ``auto.create.topics.enable=false`` (and num.partitions=3, to see a
    broker default that is not Kafka's)."""
    with OdradekProcess(
        tmp_path_factory.mktemp("no-autocreate"),
        {"auto.create.topics.enable": "false", "num.partitions": "3"},
    ) as broker:
        yield broker


def expect_failure(error: str, call: object, *args: object, **kwargs: object) -> ClientError:
    """Run ``call`` and return the ClientError it must raise with Kafka error ``error``."""
    assert callable(call)
    with pytest.raises(ClientError) as failure:
        call(*args, **kwargs)
    assert failure.value.error == error, failure.value
    return failure.value


# ---------------------------------------------------------------------------------------------
# CreateTopics


def test_create_topic_with_partitions_and_configs(admin: Admin) -> None:
    """The topic exists with the requested partition count and its configs are topic overrides."""
    topic = unique_topic("create")
    admin.create_topic(topic, 3, configs={"retention.ms": "3600000", "cleanup.policy": "compact"})

    assert topic in admin.list_topics()
    assert admin.describe_topic(topic).partitions == 3
    configs = admin.topic_configs(topic)
    assert configs["retention.ms"] == ConfigValue("3600000", "DYNAMIC_TOPIC_CONFIG")
    assert configs["cleanup.policy"] == ConfigValue("compact", "DYNAMIC_TOPIC_CONFIG")
    assert configs["segment.bytes"] == ConfigValue("1073741824", "DEFAULT_CONFIG")


def test_create_topic_with_broker_default_partitions(admin: Admin) -> None:
    """num_partitions = replication_factor = -1 (CreateTopics v4+) means the broker's defaults:
    num.partitions (1) and default.replication.factor."""
    topic = unique_topic("create-default")
    admin.create_topic(topic, -1, replication_factor=-1)
    assert admin.describe_topic(topic).partitions == 1


def test_create_existing_topic_is_topic_already_exists(admin: Admin) -> None:
    """Creating a topic twice fails with TOPIC_ALREADY_EXISTS and leaves the first one intact."""
    topic = unique_topic("twice")
    admin.create_topic(topic, 2)
    expect_failure("TOPIC_ALREADY_EXISTS", admin.create_topic, topic, 5)
    assert admin.describe_topic(topic).partitions == 2


@pytest.mark.parametrize(
    ("name", "partitions", "replication_factor", "configs", "error"),
    [
        pytest.param("ok", 0, 1, {}, "INVALID_PARTITIONS", id="zero-partitions"),
        pytest.param("ok", 2, 3, {}, "INVALID_REPLICATION_FACTOR", id="rf3-on-one-node"),
        pytest.param("bad/name", 1, 1, {}, "INVALID_TOPIC_EXCEPTION", id="slash-in-name"),
        pytest.param("bad name", 1, 1, {}, "INVALID_TOPIC_EXCEPTION", id="space-in-name"),
        pytest.param("..", 1, 1, {}, "INVALID_TOPIC_EXCEPTION", id="dot-dot"),
        pytest.param("x" * 250, 1, 1, {}, "INVALID_TOPIC_EXCEPTION", id="250-chars"),
        pytest.param("ok", 1, 1, {"no.such.config": "1"}, "INVALID_CONFIG", id="unknown-config"),
        pytest.param("ok", 1, 1, {"retention.ms": "soon"}, "INVALID_CONFIG", id="bad-number"),
        pytest.param("ok", 1, 1, {"cleanup.policy": "shred"}, "INVALID_CONFIG", id="bad-enum"),
        pytest.param("ok", 1, 1, {"retention.ms": "-5"}, "INVALID_CONFIG", id="below-minimum"),
        pytest.param("ok", 1, 1, {"min.insync.replicas": "0"}, "INVALID_CONFIG", id="zero-min-isr"),
        pytest.param("ok", 1, 1, {"segment.bytes": "2147483648"}, "INVALID_CONFIG", id="int-overflow"),
    ],
)
def test_create_topic_errors(
    admin: Admin, name: str, partitions: int, replication_factor: int, configs: dict[str, str], error: str
) -> None:
    """Each invalid CreateTopics request fails with Kafka's error code and creates nothing."""
    topic = unique_topic("bad") if name == "ok" else name
    expect_failure(error, admin.create_topic, topic, partitions, replication_factor, configs)
    assert topic not in admin.list_topics()


def test_topic_name_limits(admin: Admin) -> None:
    """Kafka's name rules at their edges: 249 characters of [a-zA-Z0-9._-] are fine; a name that
    differs from an existing one only by '.' versus '_' collides in metric names and is
    INVALID_TOPIC_EXCEPTION."""
    longest = "n" * 237 + unique_topic("x")[-12:]
    assert len(longest) == 249
    admin.create_topic(longest, 1)
    assert admin.describe_topic(longest).partitions == 1

    dotted = unique_topic("Mixed.Case_9")
    admin.create_topic(dotted, 1)
    collides = dotted.replace(".", "_")
    expect_failure("INVALID_TOPIC_EXCEPTION", admin.create_topic, collides, 1)
    assert collides not in admin.list_topics()


def test_create_topic_validate_only(admin: Admin) -> None:
    """validate_only checks the request (errors included) but creates nothing."""
    topic = unique_topic("validate")
    admin.create_topic(topic, 3, configs={"retention.ms": "1000"}, validate_only=True)
    assert topic not in admin.list_topics()
    expect_failure("INVALID_CONFIG", admin.create_topic, topic, 3, 1, {"bogus.key": "1"}, validate_only=True)
    admin.create_topic(topic, 2)
    expect_failure("TOPIC_ALREADY_EXISTS", admin.create_topic, topic, 2, validate_only=True)


# ---------------------------------------------------------------------------------------------
# Auto-creation


def test_metadata_auto_creates_topic_when_enabled(admin: Admin) -> None:
    """Metadata with allow_auto_topic_creation=true creates an unknown topic with num.partitions (1).

    The response that triggers the creation reports the topic as not yet usable (Kafka 4 in KRaft
    mode: UNKNOWN_TOPIC_OR_PARTITION; ZooKeeper-era brokers: LEADER_NOT_AVAILABLE); clients retry,
    so the test does too until the topic is listed with its partitions.
    """
    topic = unique_topic("auto")
    deadline = time.monotonic() + 30
    while True:
        try:
            info = admin.metadata_allowing_creation(topic)
            break
        except ClientError as failure:
            assert failure.error in {"UNKNOWN_TOPIC_OR_PARTITION", "LEADER_NOT_AVAILABLE"}, failure
            assert time.monotonic() < deadline, "topic never became available"
            time.sleep(0.2)
    assert info.partitions == 1
    assert admin.describe_topic(topic).partitions == 1


def test_metadata_without_creation_flag_does_not_create(admin: Admin) -> None:
    """Admin clients ask for Metadata with allow_auto_topic_creation=false: an unknown topic is
    UNKNOWN_TOPIC_OR_PARTITION and stays unknown, even with auto-creation enabled."""
    topic = unique_topic("describe-only")
    expect_failure("UNKNOWN_TOPIC_OR_PARTITION", admin.describe_topic, topic)
    assert topic not in admin.list_topics()


@pytest.mark.parametrize("admin_name", list(ADMINS))
def test_metadata_does_not_auto_create_when_disabled(
    no_autocreate_broker: OdradekProcess, admin_name: str
) -> None:
    """With auto.create.topics.enable=false the same Metadata request is UNKNOWN_TOPIC_OR_PARTITION."""
    with ADMINS[admin_name](no_autocreate_broker.bootstrap) as admin:
        topic = unique_topic("no-auto")
        expect_failure("UNKNOWN_TOPIC_OR_PARTITION", admin.metadata_allowing_creation, topic)
        assert topic not in admin.list_topics()


@pytest.mark.parametrize("admin_name", list(ADMINS))
def test_broker_defaults_from_the_command_line(no_autocreate_broker: OdradekProcess, admin_name: str) -> None:
    """num.partitions=3 given at start-up is what CreateTopics with -1 partitions uses, and
    DescribeConfigs reports it as STATIC_BROKER_CONFIG."""
    with ADMINS[admin_name](no_autocreate_broker.bootstrap) as admin:
        topic = unique_topic("broker-default")
        admin.create_topic(topic, -1, replication_factor=-1)
        assert admin.describe_topic(topic).partitions == 3
        assert admin.broker_configs(1)["num.partitions"] == ConfigValue("3", "STATIC_BROKER_CONFIG")
        assert admin.broker_configs(1)["auto.create.topics.enable"] == ConfigValue(
            "false", "STATIC_BROKER_CONFIG"
        )


@pytest.mark.parametrize("auto_create", [True, False], ids=["auto-create-on", "auto-create-off"])
def test_produce_request_never_creates_topics(
    shared_broker: OdradekProcess, no_autocreate_broker: OdradekProcess, auto_create: bool
) -> None:
    """A Produce request for an unknown topic, or for a partition the topic does not have, is
    UNKNOWN_TOPIC_OR_PARTITION and creates nothing: Kafka auto-creates on Metadata only."""
    broker = shared_broker if auto_create else no_autocreate_broker
    topic = unique_topic("raw-produce")
    assert raw_produce(broker.bootstrap, topic, 0) == "UNKNOWN_TOPIC_OR_PARTITION"
    with ConfluentAdmin(broker.bootstrap) as admin:
        assert topic not in admin.list_topics()
        admin.create_topic(topic, 1)
    assert raw_produce(broker.bootstrap, topic, 1) == "UNKNOWN_TOPIC_OR_PARTITION"
    assert raw_produce(broker.bootstrap, topic, 0) == "NONE"
    with ConfluentAdmin(broker.bootstrap) as admin:
        assert admin.describe_topic(topic).partitions == 1


@pytest.mark.parametrize("client_name", list(CLIENTS))
def test_producer_auto_creates_topic(shared_broker: OdradekProcess, client_name: str) -> None:
    """With auto-creation on (Kafka's default) a producer can simply write to a new topic: its
    Metadata request creates it, it retries until the topic is ready, and the records land."""
    client = CLIENTS[client_name](shared_broker.bootstrap)
    topic = unique_topic("auto-produce")
    records = make_records(10)
    delivered = client.produce(topic, records, timeout_s=30)
    assert [(d.partition, d.offset) for d in delivered] == [(0, i) for i in range(10)]
    assert [c.record for c in client.consume(topic, {0: 0}, until={0: 10}, timeout_s=30)[0]] == records


@pytest.mark.parametrize("client_name", list(CLIENTS))
def test_produce_to_unknown_topic_fails_cleanly(
    no_autocreate_broker: OdradekProcess, client_name: str
) -> None:
    """A producer sending to a topic that does not exist (and will not be created) gets an error
    within its configured time, the topic stays absent, and the broker keeps serving.

    librdkafka and aiokafka report the broker's UNKNOWN_TOPIC_OR_PARTITION; kafka-python only
    says its wait for the topic's metadata timed out.
    """
    client = CLIENTS[client_name](no_autocreate_broker.bootstrap)
    topic = unique_topic("unknown")
    with pytest.raises(ClientError) as failure:
        client.produce(topic, make_records(3), timeout_s=5)
    # kafka-python's producer waits for the topic to appear in Metadata until max_block_ms.
    expected = "KafkaTimeoutError" if client_name == "kafka-python" else "UNKNOWN_TOPIC_OR_PARTITION"
    assert failure.value.error == expected, failure.value
    with ConfluentAdmin(no_autocreate_broker.bootstrap) as admin:
        assert topic not in admin.list_topics()
        existing = unique_topic("still-serving")
        admin.create_topic(existing, 1)
    delivered = client.produce(existing, make_records(3), timeout_s=30)
    assert [d.offset for d in delivered] == [0, 1, 2]


# ---------------------------------------------------------------------------------------------
# DeleteTopics


def test_delete_topic_then_recreate_empty(admin: Admin, shared_broker: OdradekProcess) -> None:
    """A deleted topic leaves Metadata and its data directory; the same name can be created again
    and starts empty with a new topic id. Deleting an unknown topic is UNKNOWN_TOPIC_OR_PARTITION."""
    topic = unique_topic("delete")
    admin.create_topic(topic, 2)
    producer = ConfluentClient(shared_broker.bootstrap)
    assert len(producer.produce(topic, make_records(50))) == 50
    old_id = admin.describe_topic(topic).topic_id

    admin.delete_topic(topic)

    assert topic not in admin.list_topics()
    expect_failure("UNKNOWN_TOPIC_OR_PARTITION", admin.describe_topic, topic)
    data = shared_broker.data_dir
    wait_until(
        lambda: not any((data / f"{topic}-{p}").exists() for p in range(2)),
        "partition directories removed or renamed for deletion",
    )
    expect_failure("UNKNOWN_TOPIC_OR_PARTITION", admin.delete_topic, topic)

    admin.create_topic(topic, 3)
    again = admin.describe_topic(topic)
    assert again.partitions == 3
    assert again.topic_id != old_id
    assert producer.list_offsets(topic, range(3), "latest") == {0: 0, 1: 0, 2: 0}
    assert producer.list_offsets(topic, range(3), "earliest") == {0: 0, 1: 0, 2: 0}


# ---------------------------------------------------------------------------------------------
# CreatePartitions


def test_create_partitions_grows_topic(admin: Admin, shared_broker: OdradekProcess) -> None:
    """Growing 2 -> 5 partitions shows in Metadata and the new partitions take records; shrinking
    or keeping the count is INVALID_PARTITIONS; an unknown topic is UNKNOWN_TOPIC_OR_PARTITION."""
    topic = unique_topic("grow")
    admin.create_topic(topic, 2)
    admin.create_partitions(topic, 5)
    assert admin.describe_topic(topic).partitions == 5

    client = ConfluentClient(shared_broker.bootstrap)
    records = make_records(10)
    delivered = client.produce(topic, records, partition=4)
    assert [(d.partition, d.offset) for d in delivered] == [(4, i) for i in range(10)]
    consumed = client.consume(topic, {4: 0}, until={4: 10}, timeout_s=30)
    assert [c.record for c in consumed[4]] == records

    expect_failure("INVALID_PARTITIONS", admin.create_partitions, topic, 3)
    expect_failure("INVALID_PARTITIONS", admin.create_partitions, topic, 5)
    assert admin.describe_topic(topic).partitions == 5
    expect_failure("UNKNOWN_TOPIC_OR_PARTITION", admin.create_partitions, unique_topic("nope"), 3)


# ---------------------------------------------------------------------------------------------
# DescribeConfigs / AlterConfigs / IncrementalAlterConfigs


def test_describe_topic_configs_kafka_defaults(admin: Admin) -> None:
    """Without overrides a topic reports Kafka's defaults with source DEFAULT_CONFIG; an override
    reports its value with source DYNAMIC_TOPIC_CONFIG."""
    plain = unique_topic("defaults")
    admin.create_topic(plain, 1)
    configs = admin.topic_configs(plain)
    for key, value in KAFKA_TOPIC_DEFAULTS.items():
        assert configs[key] == ConfigValue(value, "DEFAULT_CONFIG"), key

    tuned = unique_topic("override")
    admin.create_topic(tuned, 1, configs={"retention.ms": "86400000"})
    configs = admin.topic_configs(tuned)
    assert configs["retention.ms"] == ConfigValue("86400000", "DYNAMIC_TOPIC_CONFIG")
    assert configs["cleanup.policy"] == ConfigValue("delete", "DEFAULT_CONFIG")


def test_describe_configs_unknown_topic(admin: Admin) -> None:
    """DescribeConfigs for a topic that does not exist is UNKNOWN_TOPIC_OR_PARTITION."""
    expect_failure("UNKNOWN_TOPIC_OR_PARTITION", admin.topic_configs, unique_topic("ghost"))


def test_describe_broker_configs(admin: Admin) -> None:
    """Broker resource "1" (the node id) lists Kafka's broker keys with their defaults; a key set
    on the command line reports STATIC_BROKER_CONFIG."""
    configs = admin.broker_configs(1)
    assert configs["num.partitions"] == ConfigValue("1", "DEFAULT_CONFIG")
    assert configs["log.segment.bytes"] == ConfigValue("1073741824", "DEFAULT_CONFIG")
    assert configs["message.max.bytes"] == ConfigValue("1048588", "DEFAULT_CONFIG")
    assert configs["auto.create.topics.enable"] == ConfigValue("true", "DEFAULT_CONFIG")
    assert configs["log.retention.hours"] == ConfigValue("168", "DEFAULT_CONFIG")
    assert configs["node.id"].value == "1"
    # The integration fixture starts every broker with this override.
    assert configs["group.initial.rebalance.delay.ms"] == ConfigValue("0", "STATIC_BROKER_CONFIG")


def test_incremental_alter_configs(admin: Admin) -> None:
    """IncrementalAlterConfigs SET changes one key and keeps the other overrides."""
    topic = unique_topic("incremental")
    admin.create_topic(topic, 1, configs={"retention.ms": "3600000"})
    admin.alter_topic_configs(topic, {"max.message.bytes": "2000000"}, incremental=True)
    configs = admin.topic_configs(topic)
    assert configs["max.message.bytes"] == ConfigValue("2000000", "DYNAMIC_TOPIC_CONFIG")
    assert configs["retention.ms"] == ConfigValue("3600000", "DYNAMIC_TOPIC_CONFIG")


def test_incremental_alter_configs_delete_restores_default(admin: Admin) -> None:
    """IncrementalAlterConfigs DELETE removes an override: the key shows Kafka's default again."""
    topic = unique_topic("incremental-delete")
    admin.create_topic(topic, 1, configs={"retention.ms": "3600000", "cleanup.policy": "compact"})
    admin.alter_topic_configs(topic, {"retention.ms": None}, incremental=True)
    configs = admin.topic_configs(topic)
    assert configs["retention.ms"] == ConfigValue("604800000", "DEFAULT_CONFIG")
    assert configs["cleanup.policy"] == ConfigValue("compact", "DYNAMIC_TOPIC_CONFIG")


def test_legacy_alter_configs(admin: Admin) -> None:
    """AlterConfigs (non-incremental) replaces the topic's whole override set.

    kafka-python re-sends the other current overrides itself (its docs say so, to soften exactly
    this replace semantics), so for it the untouched override survives; librdkafka sends only
    what it is given, so the untouched override returns to Kafka's default.
    """
    topic = unique_topic("legacy")
    admin.create_topic(topic, 1, configs={"cleanup.policy": "compact"})
    admin.alter_topic_configs(
        topic, {"retention.ms": "7200000", "segment.bytes": "104857600"}, incremental=False
    )
    configs = admin.topic_configs(topic)
    assert configs["retention.ms"] == ConfigValue("7200000", "DYNAMIC_TOPIC_CONFIG")
    assert configs["segment.bytes"] == ConfigValue("104857600", "DYNAMIC_TOPIC_CONFIG")
    if admin.name == "kafka-python":
        assert configs["cleanup.policy"] == ConfigValue("compact", "DYNAMIC_TOPIC_CONFIG")
    else:
        assert configs["cleanup.policy"] == ConfigValue("delete", "DEFAULT_CONFIG")


@pytest.mark.parametrize("incremental", [True, False], ids=["incremental", "legacy"])
@pytest.mark.parametrize(
    ("configs", "error"),
    [
        pytest.param({"retention.ms": "tomorrow"}, "INVALID_CONFIG", id="bad-value"),
        pytest.param({"no.such.config": "1"}, "INVALID_CONFIG", id="unknown-key"),
        pytest.param({"retention.ms": "-5"}, "INVALID_CONFIG", id="below-minimum"),
    ],
)
def test_alter_configs_rejects_invalid(
    admin: Admin, incremental: bool, configs: dict[str, str], error: str
) -> None:
    """An invalid value or unknown key is INVALID_CONFIG and changes nothing."""
    topic = unique_topic("alter-bad")
    admin.create_topic(topic, 1, configs={"retention.ms": "3600000"})
    expect_failure(error, admin.alter_topic_configs, topic, configs, incremental=incremental)
    assert admin.topic_configs(topic)["retention.ms"] == ConfigValue("3600000", "DYNAMIC_TOPIC_CONFIG")


def test_alter_configs_unknown_topic(admin: Admin) -> None:
    """Altering a topic that does not exist is UNKNOWN_TOPIC_OR_PARTITION."""
    expect_failure(
        "UNKNOWN_TOPIC_OR_PARTITION",
        admin.alter_topic_configs,
        unique_topic("ghost"),
        {"retention.ms": "1000"},
        incremental=True,
    )


# ---------------------------------------------------------------------------------------------
# DescribeCluster


def test_describe_cluster_lists_this_broker(admin: Admin, shared_broker: OdradekProcess) -> None:
    """DescribeCluster lists exactly one broker: node 1 at the advertised listener."""
    host, port = shared_broker.bootstrap.rsplit(":", 1)
    assert admin.brokers() == [BrokerInfo(1, host, int(port))]


# ---------------------------------------------------------------------------------------------
# Persistence


def _topic_state(admin: Admin, topics: list[str]) -> dict[str, tuple[int, str, dict[str, ConfigValue]]]:
    """Partition count, topic id and overrides of each topic: what must survive a restart."""
    state = {}
    for topic in topics:
        info = admin.describe_topic(topic)
        overrides = {
            k: v for k, v in admin.topic_configs(topic).items() if v.source == "DYNAMIC_TOPIC_CONFIG"
        }
        state[topic] = (info.partitions, info.topic_id, overrides)
    return state


def test_rejected_config_leaves_broker_restartable(tmp_path: Path) -> None:
    """An out-of-range config is INVALID_CONFIG at CreateTopics and AlterConfigs, nothing of it is
    stored, and the broker restarts with its topics intact."""
    broker = OdradekProcess(tmp_path / "broker").start()
    try:
        with ConfluentAdmin(broker.bootstrap) as admin:
            kept, rejected = unique_topic("kept"), unique_topic("rejected")
            admin.create_topic(kept, 1)
            expect_failure("INVALID_CONFIG", admin.create_topic, rejected, 1, 1, {"retention.ms": "-5"})
            expect_failure(
                "INVALID_CONFIG", admin.alter_topic_configs, kept, {"retention.ms": "-5"}, incremental=True
            )
            assert rejected not in admin.list_topics()
        broker.restart()
        with ConfluentAdmin(broker.bootstrap) as admin:
            assert admin.topic_configs(kept)["retention.ms"] == ConfigValue("604800000", "DEFAULT_CONFIG")
            assert rejected not in admin.list_topics()
    finally:
        broker.stop()


@pytest.mark.parametrize("stop", ["restart", "kill"])
def test_topic_state_survives_restart(tmp_path: Path, stop: str) -> None:
    """Topics, partition counts (grown ones too), config overrides and topic ids are the same after
    a clean restart and after kill -9; a deleted topic stays deleted; stored records stay."""
    broker = OdradekProcess(tmp_path / "broker").start()
    try:
        with ConfluentAdmin(broker.bootstrap) as admin:
            grown, configured, deleted = (unique_topic(n) for n in ("grown", "configured", "deleted"))
            admin.create_topic(grown, 2, configs={"retention.ms": "3600000"})
            admin.create_partitions(grown, 4)
            admin.create_topic(configured, 1, configs={"cleanup.policy": "compact"})
            admin.alter_topic_configs(configured, {"max.message.bytes": "50000"}, incremental=True)
            admin.create_topic(deleted, 1)
            admin.delete_topic(deleted)
            client = ConfluentClient(broker.bootstrap)
            client.produce(grown, make_records(20), partition=3)
            before = _topic_state(admin, [grown, configured])
            topics_before = {t for t in admin.list_topics() if not t.startswith("__")}

        broker.restart(crash=stop == "kill")

        with ConfluentAdmin(broker.bootstrap) as admin:
            assert {t for t in admin.list_topics() if not t.startswith("__")} == topics_before
            assert deleted not in topics_before
            assert _topic_state(admin, [grown, configured]) == before
        assert ConfluentClient(broker.bootstrap).list_offsets(grown, range(4), "latest") == {
            0: 0,
            1: 0,
            2: 0,
            3: 20,
        }
    finally:
        broker.stop()


def test_manual_replica_assignment_on_the_only_broker(admin: Admin) -> None:
    """Kafka accepts explicit replica lists naming registered brokers; here that is node 1 only."""
    topic = unique_topic("assigned")
    admin.create_topic(topic, 2, assignments=[[1], [1]])
    assert admin.describe_topic(topic).partitions == 2
    admin.create_partitions(topic, 3, assignments=[[1]])
    assert admin.describe_topic(topic).partitions == 3
    elsewhere = unique_topic("assigned-elsewhere")
    with pytest.raises(ClientError, match="INVALID_REPLICA_ASSIGNMENT|unknown broker"):
        admin.create_topic(elsewhere, 1, assignments=[[2]])

"""ACLs and authorization (KIP-11, the KRaft StandardAuthorizer) through stock clients.

The broker runs ``authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer``
with ``allow.everyone.if.no.acl.found=true`` and is reached over PLAINTEXT, where every client is
``User:ANONYMOUS``: resources no ACL covers stay open, so each scenario closes its own topics
and groups to ANONYMOUS with ACLs and checks Kafka's answers (TOPIC_AUTHORIZATION_FAILED,
GROUP_AUTHORIZATION_FAILED, CLUSTER_AUTHORIZATION_FAILED, hidden topics).  Apache Kafka needs
its own controller and inter-broker traffic to be a super user for that (see
:func:`compat_tests.kit.brokers.kafka_authorizer_listeners`).  ACLs reach Kafka's brokers through
its metadata log a moment after CreateAcls answers, so effects are awaited with ``eventually``.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from compat_tests.helpers import eventually, poll_for_error, poll_until
from compat_tests.kafka_tools import ok, run_tool
from compat_tests.kit.brokers import RunningBroker, kafka_tools_jars
from compat_tests.kit.drivers import base
from compat_tests.kit.drivers.admin import Acl, Admin
from compat_tests.kit.drivers.base import ClientError, Driver, ErrorKind, Message, ProducerSettings
from compat_tests.kit.drivers.catalog import ADMINS
from compat_tests.kit.raw_groups import find_coordinator, streams_join
from compat_tests.kit.raw_protocol import ask
from compat_tests.maven import classpath
from compat_tests.pools import BrokerPool, DriverPool
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode

AUTHORIZER = {
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "allow.everyone.if.no.acl.found": "true",
}
ANONYMOUS = "User:ANONYMOUS"
ALICE = "User:alice"
EVERY_ACL_OF = "ANY"
"""Operation and permission filter value that matches everything."""


@pytest.fixture(scope="module")
def secured(brokers: BrokerPool) -> RunningBroker:
    return brokers.get(AUTHORIZER)


@pytest.fixture(params=sorted(ADMINS))
def acl_admin(request: pytest.FixtureRequest, secured: RunningBroker) -> Iterator[Admin]:
    """Each admin client in turn, for the ACL APIs themselves."""
    with ADMINS[request.param](secured.bootstrap) as admin:
        yield admin


@pytest.fixture
def setup(secured: RunningBroker) -> Iterator[Admin]:
    """The setup admin (confluent-kafka), whichever client a scenario tests."""
    with ADMINS["confluent-kafka"](secured.bootstrap) as admin:
        yield admin


@pytest.fixture
def secured_driver(client: str, secured: RunningBroker, drivers: DriverPool) -> Driver:
    return drivers.get(client, secured.bootstrap)


def unique(stem: str) -> str:
    return f"compat-acl-{stem}-{uuid.uuid4().hex[:8]}"


def every_acl_on(resource_type: str, name: str, pattern: str = "LITERAL") -> Acl:
    return Acl(resource_type, name, None, EVERY_ACL_OF, EVERY_ACL_OF, pattern, None)


def deny(admin: Admin, resource_type: str, name: str, operation: str) -> None:
    assert admin.create_acls([Acl(resource_type, name, ANONYMOUS, operation, "DENY")]) == [None]


def deny_but_describe(admin: Admin, resource_type: str, name: str, operation: str) -> None:
    """DENY one operation yet ALLOW DESCRIBE: once an ACL covers a resource,
    allow.everyone.if.no.acl.found no longer opens it, and clients need DESCRIBE (Metadata,
    FindCoordinator) to get as far as the refused request."""
    allowed = Acl(resource_type, name, ANONYMOUS, "DESCRIBE")
    assert admin.create_acls([allowed, Acl(resource_type, name, ANONYMOUS, operation, "DENY")]) == [
        None,
        None,
    ]


def refused_with(error: ErrorKind, call: Callable[[], object]) -> Callable[[], None]:
    """A check for ``eventually``: ``call`` fails with Kafka's ``error`` (not yet: retry)."""

    def check() -> None:
        try:
            result = call()
        except ClientError as exc:
            assert exc.kind == error, exc
        else:
            raise AssertionError(f"not refused yet: {result!r}")

    return check


def test_acls_round_trip(acl_admin: Admin) -> None:
    """CreateAcls, DescribeAcls (LITERAL, PREFIXED, MATCH and ANY filters) and DeleteAcls."""
    name = unique("round-trip")
    literal = Acl("TOPIC", name, ALICE, "READ")
    prefixed = Acl("TOPIC", f"{name}-", ALICE, "WRITE", "DENY", "PREFIXED")
    group = Acl("GROUP", name, "User:*", "ALL")
    assert acl_admin.create_acls([literal, prefixed, group]) == [None, None, None]
    assert acl_admin.create_acls([literal]) == [None]  # an existing ACL: success, kept once

    def described() -> None:
        assert acl_admin.describe_acls(Acl("TOPIC", f"{name}-eu", None, "ANY", "ANY", "MATCH", None)) == {
            prefixed
        }
        assert acl_admin.describe_acls(every_acl_on("TOPIC", name)) == {literal}
        assert acl_admin.describe_acls(Acl("ANY", name, None, "ANY", "ANY", "ANY", None)) == {literal, group}
        assert acl_admin.describe_acls(Acl("TOPIC", name, ALICE, "WRITE", "ANY", "ANY", None)) == set()

    eventually(described)
    deleted = acl_admin.delete_acls(
        [
            every_acl_on("TOPIC", name),
            every_acl_on("TOPIC", f"{name}-", "PREFIXED"),
            every_acl_on("GROUP", name),
        ]
    )
    assert deleted == [{literal}, {prefixed}, {group}]
    eventually(lambda: _assert_equal(acl_admin.describe_acls(every_acl_on("ANY", name, "MATCH")), set()))


def _assert_equal(actual: object, expected: object) -> None:
    assert actual == expected


def test_invalid_acls_are_refused(acl_admin: Admin) -> None:
    """Kafka's validation: the CLUSTER resource has one name; resource names are not empty."""
    outcomes = acl_admin.create_acls(
        [Acl("CLUSTER", "my-cluster", ALICE, "ALTER"), Acl("TOPIC", unique("valid"), ALICE, "READ")]
    )
    assert outcomes[0] == "INVALID_REQUEST", outcomes
    assert outcomes[1] is None


def test_produce_to_a_denied_topic(secured_driver: Driver, setup: Admin) -> None:
    """DENY WRITE: produce answers TOPIC_AUTHORIZATION_FAILED; other topics stay open."""
    topic, open_topic = unique("no-write"), unique("open")
    setup.create_topic(topic, 1)
    setup.create_topic(open_topic, 1)
    deny_but_describe(setup, "TOPIC", topic, "WRITE")
    settings = ProducerSettings(timeout_s=15)
    eventually(
        refused_with(
            "TOPIC_AUTHORIZATION_FAILED", lambda: secured_driver.produce(topic, [Message(b"x")], settings)
        )
    )
    assert len(secured_driver.produce(open_topic, [Message(b"y")], settings)) == 1


def test_consume_from_a_denied_topic(secured_driver: Driver, setup: Admin, drivers: DriverPool) -> None:
    """DENY READ: the consumer's fetch answers TOPIC_AUTHORIZATION_FAILED."""
    topic = unique("no-read")
    setup.create_topic(topic, 1)
    drivers.get("confluent-kafka", setup.bootstrap).produce(
        topic, [Message(b"r", partition=0)], ProducerSettings()
    )
    deny_but_describe(setup, "TOPIC", topic, "READ")

    def refused() -> None:
        with secured_driver.consumer(base.ConsumerSettings(reset="earliest")) as consumer:
            consumer.assign({(topic, 0): 0})
            error = poll_for_error(consumer, timeout_s=15)
            assert error.kind == ErrorKind.TOPIC_AUTHORIZATION_FAILED, error

    eventually(refused)


def test_commit_to_a_denied_group(secured_driver: Driver, setup: Admin, drivers: DriverPool) -> None:
    """DENY READ on a group: committing its offsets answers GROUP_AUTHORIZATION_FAILED."""
    topic, group = unique("group-topic"), unique("no-group")
    setup.create_topic(topic, 1)
    drivers.get("confluent-kafka", setup.bootstrap).produce(
        topic, [Message(b"c", partition=0)], ProducerSettings()
    )
    deny_but_describe(setup, "GROUP", group, "READ")

    def refused() -> None:
        with secured_driver.consumer(base.ConsumerSettings(group=group, reset="earliest")) as consumer:
            consumer.assign({(topic, 0): 0})
            poll_until(consumer, 1)
            try:
                consumer.commit({(topic, 0): 1})
            except ClientError as exc:
                assert exc.kind == ErrorKind.GROUP_AUTHORIZATION_FAILED, exc
            else:
                raise AssertionError("commit not refused yet")

    eventually(refused)


def test_authorized_operations(acl_admin: Admin, setup: Admin) -> None:
    """The ``*_authorized_operations`` bitfields: what the ACLs allow, implied operations
    included; the cluster, which no ACL covers here, allows everything by default."""
    topic = unique("operations")
    setup.create_topic(topic, 1)
    granted = [Acl("TOPIC", topic, ANONYMOUS, "READ"), Acl("TOPIC", topic, ANONYMOUS, "ALTER_CONFIGS")]
    assert setup.create_acls(granted) == [None, None]
    expected = {"READ", "DESCRIBE", "ALTER_CONFIGS", "DESCRIBE_CONFIGS"}
    eventually(lambda: _assert_equal(acl_admin.authorized_operations("TOPIC", topic), expected))
    everything = {
        "CREATE",
        "ALTER",
        "DESCRIBE",
        "CLUSTER_ACTION",
        "DESCRIBE_CONFIGS",
        "ALTER_CONFIGS",
        "IDEMPOTENT_WRITE",
    }
    assert acl_admin.authorized_operations("CLUSTER", "kafka-cluster") == everything


@pytest.mark.parametrize(
    ("operation", "call"),
    [
        ("DESCRIBE_CONFIGS", lambda admin, topic: admin.topic_configs(topic)),
        (
            "ALTER_CONFIGS",
            lambda admin, topic: admin.alter_topic_configs(
                topic, {"retention.ms": "60000"}, incremental=True
            ),
        ),
        ("ALTER", lambda admin, topic: admin.create_partitions(topic, 2)),
        ("DELETE", lambda admin, topic: admin.delete_records(topic, {0: 0})),
    ],
    ids=["describe-configs", "alter-configs", "create-partitions", "delete-records"],
)
def test_topic_admin_refused(
    acl_admin: Admin, setup: Admin, operation: str, call: Callable[[Admin, str], object]
) -> None:
    """DescribeConfigs, IncrementalAlterConfigs, CreatePartitions and DeleteRecords each need
    their operation on the topic (DESCRIBE_CONFIGS, ALTER_CONFIGS, ALTER, DELETE)."""
    topic = unique(operation.lower().replace("_", "-"))
    setup.create_topic(topic, 1)
    deny_but_describe(setup, "TOPIC", topic, operation)
    eventually(refused_with(ErrorKind.TOPIC_AUTHORIZATION_FAILED, lambda: call(acl_admin, topic)))


def test_transactional_id_refused(secured_driver: Driver, setup: Admin) -> None:
    """DENY WRITE on a transactional id: the producer cannot initialize (InitProducerId, or
    already FindCoordinator, which needs DESCRIBE on the id, answers
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED)."""
    transactional_id = unique("txn")
    deny(setup, "TRANSACTIONAL_ID", transactional_id, "WRITE")

    def refused() -> None:
        try:
            producer = secured_driver.transactional_producer(transactional_id, timeout_ms=10000)
        except ClientError as exc:
            assert exc.kind == ErrorKind.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, exc
        else:
            producer.close()
            raise AssertionError("initialized anyway")

    eventually(refused)


def test_undescribable_topic_is_hidden(acl_admin: Admin, setup: Admin) -> None:
    """DENY DESCRIBE: Metadata leaves the topic out of a listing and refuses it by name."""
    topic = unique("hidden")
    setup.create_topic(topic, 1)
    assert topic in acl_admin.list_topics()
    deny(setup, "TOPIC", topic, "DESCRIBE")
    eventually(lambda: _assert_equal(topic in acl_admin.list_topics(), False))
    eventually(refused_with(ErrorKind.TOPIC_AUTHORIZATION_FAILED, lambda: acl_admin.describe_topic(topic)))


def test_an_acl_for_someone_else_closes_the_topic(secured_driver: Driver, setup: Admin) -> None:
    """allow.everyone.if.no.acl.found opens only resources no ACL covers: one ALLOW for
    another principal closes the topic to ANONYMOUS, for every operation."""
    topic = unique("alice-only")
    setup.create_topic(topic, 1)
    assert setup.create_acls([Acl("TOPIC", topic, ALICE, "ALL")]) == [None]
    settings = ProducerSettings(timeout_s=15)
    eventually(
        refused_with(
            "TOPIC_AUTHORIZATION_FAILED", lambda: secured_driver.produce(topic, [Message(b"x")], settings)
        )
    )


def test_cluster_acls(brokers: BrokerPool) -> None:
    """DENY ALTER on the cluster refuses CreateAcls (CLUSTER_AUTHORIZATION_FAILED), and covers
    the cluster, so every cluster operation no ACL allows is refused: DescribeAcls (DESCRIBE),
    and CREATE/DELETE, after which CreateTopics, auto-creation and DeleteTopics need
    CREATE/DELETE on each topic, which the default allows where no ACL covers the topic. A broker of its own: nothing
    anonymous can undo this. (librdkafka drops DescribeAcls' top-level error and reports no
    ACLs, so kafka-python asks.)"""
    broker = brokers.get({**AUTHORIZER, "delete.topic.enable": "true"})
    with ADMINS["kafka-python"](broker.bootstrap) as admin:
        kept, refused_prefix = unique("kept"), unique("no-create")
        admin.create_topic(kept, 1)
        no_create = [
            Acl("TOPIC", refused_prefix, ANONYMOUS, "CREATE", "DENY", "PREFIXED"),
            Acl("TOPIC", refused_prefix, ANONYMOUS, "DESCRIBE", "ALLOW", "PREFIXED"),
        ]
        assert admin.create_acls(no_create) == [None, None]
        deny_but_describe(admin, "TOPIC", kept, "DELETE")
        deny(admin, "CLUSTER", "kafka-cluster", "ALTER")
        probe = Acl("TOPIC", unique("after"), ALICE, "READ")
        eventually(lambda: _assert_equal(admin.create_acls([probe]), ["CLUSTER_AUTHORIZATION_FAILED"]))
        eventually(
            refused_with(
                ErrorKind.CLUSTER_AUTHORIZATION_FAILED, lambda: admin.describe_acls(every_acl_on("ANY", None))
            )
        )
        topic_refused = ErrorKind.TOPIC_AUTHORIZATION_FAILED
        eventually(refused_with(topic_refused, lambda: admin.create_topic(f"{refused_prefix}-1", 1)))
        # Metadata's auto-creation needs CREATE too.
        eventually(
            refused_with(topic_refused, lambda: admin.metadata_allowing_creation(f"{refused_prefix}-2"))
        )
        admin.create_topic(unique("uncovered"), 1)
        eventually(refused_with(topic_refused, lambda: admin.delete_topic(kept)))


def kafka_acls(bootstrap: str, *args: str) -> str:
    """Run Kafka's ``kafka-acls`` (org.apache.kafka.tools.AclCommand) in the suite's tool runner
    (:func:`compat_tests.kafka_tools.run_tool`: one JVM for every tool) and return its output."""
    return ok(run_tool(classpath(kafka_tools_jars()), bootstrap, "org.apache.kafka.tools.AclCommand", *args))


def test_kafka_acls_tool(secured: RunningBroker, tmp_path: Path) -> None:
    """``kafka-acls --add / --list / --remove`` as operators run it."""
    topic = unique("tool")
    entry = "(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)"
    kafka_acls(
        secured.bootstrap, "--add", "--allow-principal", ALICE, "--operation", "Read", "--topic", topic
    )
    eventually(
        lambda: _assert_equal(entry in kafka_acls(secured.bootstrap, "--list", "--topic", topic), True)
    )
    kafka_acls(
        secured.bootstrap,
        "--remove",
        "--force",
        "--allow-principal",
        ALICE,
        "--operation",
        "Read",
        "--topic",
        topic,
    )
    eventually(
        lambda: _assert_equal(entry in kafka_acls(secured.bootstrap, "--list", "--topic", topic), False)
    )


def test_streams_heartbeat_is_refused_without_the_rights_kafka_checks(
    secured: RunningBroker, setup: Admin
) -> None:
    """A Streams member needs READ on its group (GROUP_AUTHORIZATION_FAILED) and DESCRIBE on its
    source topics (TOPIC_AUTHORIZATION_FAILED); with both, it joins."""
    group, source = unique("streams-group"), unique("streams-source")
    setup.create_topic(source, 1)
    find_coordinator(secured.bootstrap, group)

    def join() -> dict[str, object]:
        return ask(secured.bootstrap, ApiKey.STREAMS_GROUP_HEARTBEAT, 0, streams_join(group, source), 10.0)

    deny(setup, "GROUP", group, "READ")
    eventually(lambda: _assert_equal(join()["error_code"], ErrorCode.GROUP_AUTHORIZATION_FAILED))
    assert setup.delete_acls([every_acl_on("GROUP", group)]) is not None
    deny(setup, "TOPIC", source, "DESCRIBE")
    eventually(lambda: _assert_equal(join()["error_code"], ErrorCode.TOPIC_AUTHORIZATION_FAILED))
    assert setup.delete_acls([every_acl_on("TOPIC", source)]) is not None
    eventually(lambda: _assert_equal(join()["error_code"], ErrorCode.NONE))

"""Authenticated users keep out of each other's resources, for every API family.

Alice and Bob authenticate with SASL/PLAIN; ``allow.everyone.if.no.acl.found=false``, and an
admin (a super user) grants each of them ALL on their own topic, group and transactional id.
Alice then tries everything on Bob's: produce, consume, list offsets, see it in Metadata,
describe and alter its configs, delete its records and the topic itself, commit and fetch
offsets for his group, describe and delete the group, use his transactional id, and change
ACLs. Each is refused with Kafka's error for that resource; Bob does the same on his own
resources. Run with ``--broker apache-kafka`` it proves these are Kafka's answers.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import Any

import kafka
import kafka.errors
import pytest
from confluent_kafka import (
    KafkaError,
    KafkaException,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ConfigResource,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)
from kafka.structs import OffsetAndMetadata

from compat_tests.helpers import eventually
from compat_tests.kit.brokers import RunningBroker, start_broker
from compat_tests.kit.drivers.base import ClientError, ConsumerSettings
from compat_tests.kit.drivers.java import JAVA_CLIENT_VERSIONS, JavaDriver, JavaProcess
from compat_tests.kit.secured import ClientSecurity, TlsFiles, make_tls_files

USERS = {"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-secret"}
JAAS = "org.apache.kafka.common.security.plain.PlainLoginModule required " + " ".join(
    f'user_{name}="{password}"' for name, password in USERS.items()
)
TIMEOUT_S = 20.0


@pytest.fixture(scope="module")
def broker(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RunningBroker]:
    if request.config.getoption("--bootstrap"):
        pytest.skip("needs its own secured broker; drop --bootstrap")
    kind = request.config.getoption("--broker")
    workdir = tmp_path_factory.mktemp(f"{kind}-principals")
    TLS.append(make_tls_files(workdir / "tls"))
    overrides = {
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "allow.everyone.if.no.acl.found": "false",
        "super.users": "User:admin",
        "sasl.enabled.mechanisms": "PLAIN",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS + ";",
        # mTLS: the certificate's CN is the user name (the subject is CN=client-alice,OU=...,O=...)
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(TLS[0].server),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(TLS[0].ca),
        "listener.name.ssl.ssl.client.auth": "required",
        "ssl.principal.mapping.rules": "RULE:^CN=([^,]+),.*$/$1/,DEFAULT",
    }
    listeners = {"SASL_PLAINTEXT": "SASL_PLAINTEXT", "SSL": "SSL"}
    running = start_broker(kind, workdir / "broker", overrides, listeners)
    yield running
    running.stop()
    TLS.pop()


TLS: list[TlsFiles] = []
"""The module's CA and certificates (its broker's SSL listener, the mTLS client)."""


def security(user: str) -> ClientSecurity:
    return ClientSecurity("SASL_PLAINTEXT", "PLAIN", user, USERS[user])


def config(broker: RunningBroker, user: str) -> dict[str, Any]:
    """confluent-kafka's settings for ``user``."""
    return {"bootstrap.servers": broker.addresses["SASL_PLAINTEXT"], **security(user).librdkafka(None)}


class Owned:
    """One user's topic, group and transactional id, with ALL granted to that user only."""

    def __init__(self, broker: RunningBroker, user: str) -> None:
        tag = uuid.uuid4().hex[:6]
        self.user, self.topic, self.group, self.txn = (
            user,
            f"{user}-topic-{tag}",
            f"{user}-group-{tag}",
            f"{user}-txn-{tag}",
        )
        admin = AdminClient(config(broker, "admin"))
        admin.create_topics([NewTopic(self.topic, 1, 1)])[self.topic].result(TIMEOUT_S)
        bindings = [
            AclBinding(
                kind,
                name,
                ResourcePatternType.LITERAL,
                f"User:{user}",
                "*",
                AclOperation.ALL,
                AclPermissionType.ALLOW,
            )
            for kind, name in (
                (ResourceType.TOPIC, self.topic),
                (ResourceType.GROUP, self.group),
                (ResourceType.TRANSACTIONAL_ID, self.txn),
            )
        ]
        for future in admin.create_acls(bindings).values():
            future.result(TIMEOUT_S)


def error_name(call: Callable[[], object]) -> str:
    """The Kafka error a call fails with ("" if it succeeds)."""
    try:
        call()
    except KafkaException as exc:
        error = exc.args[0]
        return error.str() if error.code() == -1 else error.name()
    return ""


def produce(broker: RunningBroker, user: str, topic: str, transactional_id: str | None = None) -> None:
    produce_with(config(broker, user), topic, transactional_id)


def produce_with(client: dict[str, Any], topic: str, transactional_id: str | None = None) -> None:
    errors: list[KafkaError] = []
    settings = {**client, "message.timeout.ms": int(TIMEOUT_S * 1000)}
    if transactional_id:
        producer = Producer({**settings, "transactional.id": transactional_id})
        producer.init_transactions(TIMEOUT_S)
        producer.begin_transaction()
    else:
        producer = Producer(settings)
    producer.produce(topic, b"v", on_delivery=lambda err, _msg: errors.append(err) if err else None)
    producer.flush(TIMEOUT_S)
    if errors:
        raise KafkaException(errors[0])
    if transactional_id:
        producer.commit_transaction(TIMEOUT_S)


def kafka_python_config(broker: RunningBroker, user: str) -> dict[str, Any]:
    return {
        "bootstrap_servers": broker.addresses["SASL_PLAINTEXT"],
        "request_timeout_ms": int(TIMEOUT_S * 1000),
        **security(user).kafka_python(None),
    }


def kafka_python_errors(call: Callable[[], object]) -> Callable[[], object]:
    """kafka-python raises its own classes; report them as Kafka's error names, like confluent's."""

    def run() -> object:
        try:
            return call()
        except kafka.errors.BrokerResponseError as exc:
            raise KafkaException(KafkaError(exc.errno, exc.message)) from None

    return run


def consume(java: JavaProcess, broker: RunningBroker, user: str, topic: str) -> None:
    """Fetch from offset 0 without a group, with the Java client (librdkafka and kafka-python
    keep waiting on a topic they may not describe instead of reporting it)."""
    driver = JavaDriver(broker.addresses["SASL_PLAINTEXT"], java, security(user).java(None))
    try:
        with driver.consumer(ConsumerSettings()) as consumer:
            consumer.assign({(topic, 0): 0})
            for _ in range(int(TIMEOUT_S)):
                if consumer.poll(1, 1.0):
                    return
    except ClientError as exc:
        raise KafkaException(KafkaError(-1, exc.kind.value)) from None
    raise AssertionError("nothing consumed and no error")


def commit(broker: RunningBroker, user: str, group: str, topic: str) -> None:
    """A standalone OffsetCommit (no group membership), as kafka-python sends it."""
    consumer = kafka.KafkaConsumer(
        **kafka_python_config(broker, user), group_id=group, enable_auto_commit=False
    )
    try:
        consumer.commit({kafka.TopicPartition(topic, 0): OffsetAndMetadata(1, "", -1)})
    finally:
        consumer.close()


def admin_call(
    broker: RunningBroker, user: str, action: Callable[[AdminClient], Any]
) -> Callable[[], object]:
    return lambda: action(AdminClient(config(broker, user)))


JAVA: list[JavaProcess] = []


@pytest.fixture(scope="module", autouse=True)
def java_client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    JAVA.append(JavaProcess(JAVA_CLIENT_VERSIONS[-1], tmp_path_factory.mktemp("java") / "java.log"))
    yield
    JAVA.pop().stop()


@pytest.fixture(scope="module")
def owners(broker: RunningBroker) -> tuple[Owned, Owned]:
    alice, bob = Owned(broker, "alice"), Owned(broker, "bob")
    for owner in (alice, bob):  # ACLs reach Kafka's broker through its metadata log a moment later

        def produced(owner: Owned = owner) -> None:
            assert error_name(lambda: produce(broker, owner.user, owner.topic)) == ""

        eventually(produced)
    return alice, bob


def only(futures: dict[Any, Any]) -> Any:
    """The result of an admin call's one future."""
    return next(iter(futures.values())).result(TIMEOUT_S)


def admin_attempt(
    action: Callable[[AdminClient, Owned], dict[Any, Any]],
) -> Callable[..., Callable[[], object]]:
    """An attempt by ``me``'s admin client on ``other``'s resource."""
    return lambda b, me, other: admin_call(b, me.user, lambda a: only(action(a, other)))


def _acl_for_me(me: Owned, other: Owned) -> AclBinding:
    return AclBinding(
        ResourceType.TOPIC,
        other.topic,
        ResourcePatternType.LITERAL,
        f"User:{me.user}",
        "*",
        AclOperation.ALL,
        AclPermissionType.ALLOW,
    )


ATTEMPTS: dict[str, tuple[str, Callable[[RunningBroker, Owned, Owned], Callable[[], object]]]] = {
    "produce": ("TOPIC_AUTHORIZATION_FAILED", lambda b, me, other: lambda: produce(b, me.user, other.topic)),
    "consume": (
        "TOPIC_AUTHORIZATION_FAILED",
        lambda b, me, other: lambda: consume(JAVA[0], b, me.user, other.topic),
    ),
    "describe configs": (
        "TOPIC_AUTHORIZATION_FAILED",
        admin_attempt(lambda a, other: a.describe_configs([ConfigResource("TOPIC", other.topic)])),
    ),
    "alter configs": (
        "TOPIC_AUTHORIZATION_FAILED",
        admin_attempt(
            lambda a, other: a.incremental_alter_configs(
                [ConfigResource("TOPIC", other.topic, incremental_configs=[_retention()])]
            )
        ),
    ),
    # librdkafka cannot find the leader of a topic it may not describe, so it never sends the
    # DeleteRecords (so with Kafka): the records stay.
    "delete records": (
        "_NOENT",
        admin_attempt(lambda a, other: a.delete_records([TopicPartition(other.topic, 0, 1)])),
    ),
    "delete topic": (
        "TOPIC_AUTHORIZATION_FAILED",
        admin_attempt(lambda a, other: a.delete_topics([other.topic])),
    ),
    "commit offsets": (
        "GROUP_AUTHORIZATION_FAILED",
        lambda b, me, other: kafka_python_errors(lambda: commit(b, me.user, other.group, me.topic)),
    ),
    "describe group": (
        "GROUP_AUTHORIZATION_FAILED",
        admin_attempt(lambda a, other: a.describe_consumer_groups([other.group])),
    ),
    "delete group": (
        "GROUP_AUTHORIZATION_FAILED",
        admin_attempt(lambda a, other: a.delete_consumer_groups([other.group])),
    ),
    "transactional id": (
        "TRANSACTIONAL_ID_AUTHORIZATION_FAILED",
        lambda b, me, other: lambda: produce(b, me.user, me.topic, transactional_id=other.txn),
    ),
    "create acls": (
        "CLUSTER_AUTHORIZATION_FAILED",
        lambda b, me, other: admin_call(b, me.user, lambda a: only(a.create_acls([_acl_for_me(me, other)]))),
    ),
}


def _retention() -> Any:
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry

    return ConfigEntry("retention.ms", "1000", incremental_operation=AlterConfigOpType.SET)


@pytest.mark.parametrize("attempt", list(ATTEMPTS))
def test_a_user_is_refused_on_another_users_resources(
    broker: RunningBroker, owners: tuple[Owned, Owned], attempt: str
) -> None:
    alice, bob = owners
    expected, make = ATTEMPTS[attempt]
    assert error_name(make(broker, alice, bob)) == expected


def test_another_users_topic_is_not_listed(broker: RunningBroker, owners: tuple[Owned, Owned]) -> None:
    alice, bob = owners
    listed = AdminClient(config(broker, "alice")).list_topics(timeout=TIMEOUT_S).topics
    assert alice.topic in listed and bob.topic not in listed


@pytest.mark.parametrize(
    "attempt", ["produce", "consume", "commit offsets", "describe configs", "transactional id"]
)
def test_the_owner_is_allowed(broker: RunningBroker, owners: tuple[Owned, Owned], attempt: str) -> None:
    _, bob = owners
    _, make = ATTEMPTS[attempt]

    def allowed() -> None:  # a group's coordinator may still be loading (NOT_COORDINATOR)
        assert error_name(make(broker, bob, bob)) == ""

    eventually(allowed)


def test_a_certificate_subject_is_the_principal(broker: RunningBroker, owners: tuple[Owned, Owned]) -> None:
    """Over mTLS the mapped certificate subject (User:client-alice) is who ACLs judge."""
    _, bob = owners
    mine = Owned(broker, "client-alice")
    conf = {"bootstrap.servers": broker.addresses["SSL"], **ClientSecurity("SSL").librdkafka(TLS[0])}

    def produce_as_certificate(topic: str) -> str:
        return error_name(lambda: produce_with(conf, topic))

    def allowed() -> None:
        assert produce_as_certificate(mine.topic) == ""

    eventually(allowed)
    assert produce_as_certificate(bob.topic) == "TOPIC_AUTHORIZATION_FAILED"

"""The secured-broker mode: TLS, mTLS and SASL (PLAIN, SCRAM-SHA-256/512, OAUTHBEARER) through
stock clients in three languages, against a broker configured with Kafka's own keys.

Run with ``--broker apache-kafka`` it proves the scenarios (and the configuration) are Kafka's.
Each client authenticates every way it can, produces a record and reads it back over the
secured listener; wrong passwords, unknown users, expired tokens, missing client certificates
and a plaintext client on a TLS port are refused.
"""

from __future__ import annotations

import json
import socket
import ssl
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer as ConfluentConsumer
from confluent_kafka import Producer, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)
from kafka import KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KafkaTopicPartition

from compat_tests.conftest import selected_clients
from compat_tests.helpers import eventually
from compat_tests.kafka_tools import CONFIGS, ok, run_tool
from compat_tests.kit.brokers import RunningBroker, odradek_cli
from compat_tests.kit.drivers.base import ConsumerSettings, Message, ProducerSettings
from compat_tests.kit.drivers.java import JavaDriver, JavaProcess
from compat_tests.kit.raw_protocol import request_frame
from compat_tests.kit.secured import (
    PLAIN_MODULE,
    PLAIN_USERS,
    SCRAM_MODULE,
    SCRAM_USERS,
    ClientSecurity,
    TlsFiles,
    client_cases,
    start_secured_broker,
)
from wire.api_keys import ApiKey

JAVA_CLIENT = "java-4.4.0"
SECURED_CLIENTS = ["confluent-kafka", "kafka-python", JAVA_CLIENT]
TIMEOUT_S = 20.0


class Secured:
    """The secured broker of this module and the files its clients need."""

    def __init__(self, broker: RunningBroker, files: TlsFiles, log_dir: Path) -> None:
        self.broker, self.files, self.log_dir = broker, files, log_dir
        self.jvm: JavaProcess | None = None

    def address(self, security: ClientSecurity) -> str:
        return self.broker.addresses[security.listener]


@pytest.fixture(scope="module")
def secured(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Secured]:
    broker, files = start_secured_broker(request, tmp_path_factory)
    state = Secured(broker, files, tmp_path_factory.mktemp("secured-clients"))
    try:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        upserts = [
            UserScramCredentialUpsertion(
                user,
                ScramCredentialInfo(getattr(ScramMechanism, mechanism.replace("-", "_")), 4096),
                password.encode(),
            )
            for mechanism, (user, password) in SCRAM_USERS.items()
        ]
        for future in admin.alter_user_scram_credentials(upserts).values():
            future.result(TIMEOUT_S)
        yield state
    finally:
        if state.jvm is not None:
            state.jvm.stop()
        broker.stop()


def _first_value(poll: Callable[[], bytes | None]) -> bytes:
    """Poll until a record's value comes back (the topic holds the one just produced)."""
    deadline = time.monotonic() + TIMEOUT_S
    while time.monotonic() < deadline:
        value = poll()
        if value is not None:
            return value
    raise AssertionError("nothing consumed")


def _value(message: Any) -> bytes | None:
    return message.value() if message is not None and message.error() is None else None


def _confluent_roundtrip(
    secured: Secured, security: ClientSecurity, topic: str, value: bytes, timeout_s: float = TIMEOUT_S
) -> bytes:
    conf = {"bootstrap.servers": secured.address(security), **security.librdkafka(secured.files)}
    errors: list[Any] = []
    producer = Producer({**conf, "message.timeout.ms": int(TIMEOUT_S * 1000), "error_cb": errors.append})

    def delivered(error: Any, _message: Any) -> None:
        if error is not None:
            errors.append(error)

    producer.produce(topic, value, on_delivery=delivered)
    deadline = time.monotonic() + timeout_s
    while producer.flush(0.2) and not errors and time.monotonic() < deadline:
        pass  # librdkafka retries a refused authentication for ever: stop at its first report
    if errors or len(producer):
        raise AuthError(str(errors[0]) if errors else "not delivered")
    consumer = ConfluentConsumer(
        {**conf, "group.id": f"g-{uuid.uuid4().hex[:8]}", "enable.auto.commit": False}
    )
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        return _first_value(lambda: _value(consumer.poll(1.0)))
    finally:
        consumer.close()


def _kafka_python_roundtrip(
    secured: Secured, security: ClientSecurity, topic: str, value: bytes, timeout_s: float = TIMEOUT_S
) -> bytes:
    conf = {"bootstrap_servers": secured.address(security), **security.kafka_python(secured.files)}
    try:
        producer = KafkaProducer(
            **conf,
            request_timeout_ms=int(TIMEOUT_S * 1000),
            max_block_ms=int(timeout_s * 1000),
            bootstrap_timeout_ms=int(timeout_s * 1000),
        )
        try:
            producer.send(topic, value).get(timeout_s)
        finally:
            producer.close(5)
    except Exception as exc:  # kafka-python raises several kinds on a refused authentication
        raise AuthError(f"{type(exc).__name__}: {exc}") from None
    consumer = KafkaConsumer(**conf, auto_offset_reset="earliest", enable_auto_commit=False)
    try:
        consumer.assign([KafkaTopicPartition(topic, 0)])
        return _first_value(
            lambda: next((records[0].value for records in consumer.poll(1000).values()), None)
        )
    finally:
        consumer.close()


def _java_roundtrip(
    secured: Secured, security: ClientSecurity, topic: str, value: bytes, timeout_s: float = TIMEOUT_S
) -> bytes:
    version = JAVA_CLIENT.removeprefix("java-")
    if secured.jvm is None:
        secured.jvm = JavaProcess(version, secured.log_dir / "java-secured.log")
    driver = JavaDriver(secured.address(security), secured.jvm, security.java(secured.files))
    try:
        driver.produce(topic, [Message(value)], ProducerSettings(timeout_s=timeout_s))
    except Exception as exc:
        raise AuthError(str(exc)) from None
    with driver.consumer(ConsumerSettings()) as consumer:
        consumer.assign({(topic, 0): 0})
        return _first_value(lambda: next((r.value or b"" for r in consumer.poll(1, 1.0)), None))


class AuthError(Exception):
    """The client could not get in; the message is what it reported."""


REFUSAL_WAIT_S = 6.0
"""How long a refused client is given to report it (kafka-python only times out its bootstrap)."""
ROUNDTRIPS: dict[str, Callable[..., bytes]] = {
    "confluent-kafka": _confluent_roundtrip,
    "kafka-python": _kafka_python_roundtrip,
    JAVA_CLIENT: _java_roundtrip,
}
CASES = client_cases()


@pytest.fixture(params=SECURED_CLIENTS)
def secured_client(request: pytest.FixtureRequest) -> str:
    if request.param not in selected_clients(request.config):
        pytest.skip(f"{request.param} not selected (--clients)")
    return request.param


@pytest.mark.parametrize("case", list(CASES))
def test_authenticated_client_produces_and_consumes(secured: Secured, secured_client: str, case: str) -> None:
    topic = f"secured-{case}-{uuid.uuid4().hex[:6]}"
    value = f"{secured_client} over {case}".encode()
    assert ROUNDTRIPS[secured_client](secured, CASES[case], topic, value) == value


REFUSED = {
    "wrong-scram-password": ClientSecurity("SASL_PLAINTEXT", "SCRAM-SHA-256", "bob", "not-bobs-password"),
    "unknown-scram-user": ClientSecurity("SASL_SSL", "SCRAM-SHA-512", "mallory", "whatever"),
    "wrong-plain-password": ClientSecurity("SASL_SSL", "PLAIN", "alice", "wrong"),
    "scram-user-with-other-mechanism": ClientSecurity("SASL_PLAINTEXT", "SCRAM-SHA-512", "bob", "bob-secret"),
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_bad_credentials_are_refused_with_kafkas_error(
    secured: Secured, secured_client: str, case: str
) -> None:
    with pytest.raises(AuthError) as refused:
        ROUNDTRIPS[secured_client](
            secured, REFUSED[case], f"refused-{uuid.uuid4().hex[:6]}", b"x", REFUSAL_WAIT_S
        )
    if secured_client != "kafka-python":  # it only reports that it could not bootstrap (so with Kafka)
        assert "Authentication failed" in str(refused.value)


def test_expired_oauth_token_is_refused(secured: Secured) -> None:
    expired = ClientSecurity("SASL_SSL", "OAUTHBEARER", "dave", token_lifetime_s=-60)
    with pytest.raises(AuthError):
        _kafka_python_roundtrip(secured, expired, f"expired-{uuid.uuid4().hex[:6]}", b"x", REFUSAL_WAIT_S)


def test_tls_client_without_certificate_is_refused_when_required(
    secured: Secured, secured_client: str
) -> None:
    without = ClientSecurity("SSL", with_certificate=False)
    with pytest.raises(AuthError):
        ROUNDTRIPS[secured_client](secured, without, f"nocert-{uuid.uuid4().hex[:6]}", b"x", REFUSAL_WAIT_S)


def _assert_gets_in(secured: Secured, security: ClientSecurity) -> None:
    value = f"{security.user} is in".encode()
    try:
        assert _confluent_roundtrip(secured, security, f"users-{uuid.uuid4().hex[:6]}", value) == value
    except AuthError as exc:
        raise AssertionError(f"{security.user} was refused: {exc}") from None


def _assert_refused(secured: Secured, security: ClientSecurity) -> None:
    with pytest.raises(AuthError):
        _confluent_roundtrip(secured, security, f"users-{uuid.uuid4().hex[:6]}", b"x", REFUSAL_WAIT_S)


def _user_configs(secured: Secured, tool_classpath: str, user: str, *args: str) -> str:
    """kafka-configs ... --entity-type users --entity-name USER, over the plaintext listener."""
    entity = ("--entity-type", "users", "--entity-name", user)
    return ok(run_tool(tool_classpath, secured.broker.bootstrap, CONFIGS, *args, *entity))


def test_kafka_configs_adds_and_deletes_scram_users(secured: Secured, tool_classpath: str) -> None:
    """kafka-configs --entity-type users: add a credential, a client logs in with it,
    --delete-config removes it and the client is refused (the broker learns of a change a
    moment later on Kafka, hence ``eventually``)."""
    user = f"u-{uuid.uuid4().hex[:6]}"
    security = ClientSecurity("SASL_SSL", "SCRAM-SHA-512", user, "u-secret")
    _user_configs(
        secured, tool_classpath, user, "--alter", "--add-config", "SCRAM-SHA-512=[password=u-secret]"
    )
    eventually(lambda: _assert_gets_in(secured, security))
    _user_configs(secured, tool_classpath, user, "--alter", "--delete-config", "SCRAM-SHA-512")
    eventually(lambda: _assert_refused(secured, security))


def test_kafka_configs_describes_scram_users(secured: Secured, tool_classpath: str) -> None:
    user = f"u-{uuid.uuid4().hex[:6]}"
    add = "SCRAM-SHA-512=[iterations=8192,password=u-secret]"
    _user_configs(secured, tool_classpath, user, "--alter", "--add-config", add)
    described = _user_configs(secured, tool_classpath, user, "--describe")
    assert (
        f"SCRAM credential configs for user-principal '{user}' are SCRAM-SHA-512=iterations=8192" in described
    )


def _users(secured: Secured, *args: str, stdin: str | None = None) -> str:
    done = odradek_cli("users", *args, "--bootstrap", secured.broker.bootstrap, stdin=stdin)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_odradek_users_manages_scram_users(secured: Secured) -> None:
    """``odradek users set`` salts the password client-side; a SASL client then logs in with it,
    ``list``/``describe`` show it, ``delete`` removes it, and the broker's refusal is reported."""
    user = f"cli-{uuid.uuid4().hex[:6]}"
    security = ClientSecurity("SASL_SSL", "SCRAM-SHA-256", user, "cli-secret")
    _users(secured, "set", user, "--mechanism", "SCRAM-SHA-256", "--iterations", "8192", stdin="cli-secret\n")
    _users(secured, "set", user, "--mechanism", "SCRAM-SHA-512", "--password", "other-secret")
    eventually(lambda: _assert_gets_in(secured, security))
    expected = [
        {"user": user, "mechanism": "SCRAM-SHA-256", "iterations": 8192},
        {"user": user, "mechanism": "SCRAM-SHA-512", "iterations": 4096},
    ]
    assert [
        row for row in json.loads(_users(secured, "list", "--output", "json")) if row["user"] == user
    ] == expected
    table = _users(secured, "describe", user).splitlines()
    assert table[0].split() == ["USER", "MECHANISM", "ITERATIONS"]
    assert [line.split() for line in table[2:]] == [
        [user, "SCRAM-SHA-256", "8192"],
        [user, "SCRAM-SHA-512", "4096"],
    ]
    _users(secured, "delete", user, "--mechanism", "SCRAM-SHA-512")
    assert json.loads(_users(secured, "describe", user, "--output", "json")) == expected[:1]
    _users(secured, "delete", user)
    eventually(lambda: _assert_refused(secured, security))
    missing = odradek_cli("users", "describe", user, "--bootstrap", secured.broker.bootstrap)
    assert missing.returncode == 1
    assert "RESOURCE_NOT_FOUND: Attempt to describe a user credential that does not exist" in missing.stderr
    too_few = odradek_cli(
        "users", "set", user, "--mechanism", "SCRAM-SHA-256", "--iterations", "100", "--password", "p",
        "--bootstrap", secured.broker.bootstrap,
    )  # fmt: skip
    assert too_few.returncode == 1 and "UNACCEPTABLE_CREDENTIAL: Too few iterations" in too_few.stderr


def test_plaintext_on_a_tls_port_is_closed_promptly(secured: Secured) -> None:
    with socket.create_connection(_host_port(secured.broker.addresses["SSL"]), timeout=10) as sock:
        sock.sendall(request_frame(ApiKey.API_VERSIONS, 0, {}))
        assert _closed_within(sock, 10)  # after a TLS alert, or none


def test_tls_on_a_plaintext_port_is_closed_promptly(secured: Secured) -> None:
    context = ssl.create_default_context(cafile=str(secured.files.ca))
    with (
        socket.create_connection(_host_port(secured.broker.bootstrap), timeout=10) as raw,
        pytest.raises((ssl.SSLError, ConnectionError, OSError)),
        context.wrap_socket(raw, server_hostname="127.0.0.1") as tls,
    ):
        tls.recv(1)


def test_requests_before_authentication_close_the_connection(secured: Secured) -> None:
    """A Metadata request (v1) on a SASL port before SaslHandshake: Kafka closes."""
    with socket.create_connection(_host_port(secured.broker.addresses["SASL_PLAINTEXT"]), timeout=10) as sock:
        sock.sendall(request_frame(ApiKey.METADATA, 1, {"topics": None}))
        assert _closed_within(sock, 10)


def _host_port(address: str) -> tuple[str, int]:
    host, port = address.rsplit(":", 1)
    return host, int(port)


def _closed_within(sock: socket.socket, seconds: float) -> bool:
    sock.settimeout(seconds)
    try:
        while sock.recv(4096):
            pass
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False
    return True


def _command_config(secured: Secured, name: str, lines: list[str]) -> Path:
    path = secured.log_dir / f"{name}.properties"
    path.write_text("\n".join(["# a client properties file, as Kafka's tools take it", *lines]) + "\n")
    return path


@pytest.mark.parametrize(
    ("listener", "mechanism"),
    [
        ("SASL_SSL", "SCRAM-SHA-256"),
        ("SASL_SSL", "SCRAM-SHA-512"),
        ("SASL_PLAINTEXT", "PLAIN"),
        ("SSL", None),
    ],
    ids=["sasl_ssl-scram-sha-256", "sasl_ssl-scram-sha-512", "sasl_plaintext-plain", "ssl-mtls"],
)
def test_odradek_commands_reach_secured_listeners(
    secured: Secured, listener: str, mechanism: str | None
) -> None:
    """``--command-config`` takes the client properties Kafka's tools take (PEM stores): the
    ``odradek`` commands create and list a topic over TLS, SASL or both, and a wrong password
    is reported as an authentication failure, not a crash."""
    user, password = SCRAM_USERS[mechanism] if mechanism in SCRAM_USERS else ("alice", PLAIN_USERS["alice"])
    module = PLAIN_MODULE if mechanism == "PLAIN" else SCRAM_MODULE
    lines = [f"security.protocol={listener}"]
    if mechanism is not None:
        lines += [
            f"sasl.mechanism={mechanism}",
            f'sasl.jaas.config={module} required username="{user}" password="{password}";',
        ]
    if listener != "SASL_PLAINTEXT":
        lines += ["ssl.truststore.type=PEM", f"ssl.truststore.location={secured.files.ca}"]
    if listener == "SSL":
        lines += ["ssl.keystore.type=PEM", f"ssl.keystore.location={secured.files.client_keystore}"]
    name = f"cli-{listener.lower()}-{(mechanism or 'mtls').lower()}"
    config = _command_config(secured, name, lines)
    address = secured.broker.addresses[listener]
    topic = f"{name}-{uuid.uuid4().hex[:6]}"
    created = odradek_cli(
        "topics",
        "create",
        topic,
        "--partitions",
        "2",
        "--bootstrap",
        address,
        "--command-config",
        str(config),
    )
    assert created.returncode == 0, created.stderr
    listed = odradek_cli(
        "topics", "list", "--output", "json", "--bootstrap", address, "--command-config", str(config)
    )
    assert listed.returncode == 0, listed.stderr
    assert topic in {row["topic"] for row in json.loads(listed.stdout)}
    if mechanism is not None:
        wrong = _command_config(
            secured, f"{name}-wrong", [line.replace(password, "not-the-password") for line in lines]
        )
        refused = odradek_cli("topics", "list", "--bootstrap", address, "--command-config", str(wrong))
        assert refused.returncode == 1 and f"authentication as {user} failed" in refused.stderr, (
            refused.stderr
        )

"""Dynamic broker configs through AlterConfigs and IncrementalAlterConfigs, as clients send them.

librdkafka's own admin test (0081) alters a broker's ``sasl.kerberos.min.time.before.relogin``
through both APIs, then ``background.threads`` and ``log.cleanup.policy`` with SET, APPEND,
DELETE and SUBTRACT; the first test does exactly that through confluent-kafka. librdkafka (and
kafka-python's admin) cannot name the cluster-wide default, a BROKER resource called "", so
those requests go out through kafka-python's protocol classes, as Kafka's own tools send them.
Kafka answers a change before its broker applies it, so what a test reads back it awaits; each
test removes what it set, leaving the session's broker as it found it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import Future
from typing import Any

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource
from confluent_kafka.admin import ResourceType as RdResourceType

from compat_tests.helpers import eventually
from compat_tests.kit.brokers import RunningBroker
from compat_tests.kit.drivers.kafka_python import KafkaPythonAdmin

OK = ("NONE", None)
KERBEROS = "sasl.kerberos.min.time.before.relogin"
SET, DELETE, APPEND, SUBTRACT = (
    AlterConfigOpType.SET,
    AlterConfigOpType.DELETE,
    AlterConfigOpType.APPEND,
    AlterConfigOpType.SUBTRACT,
)
DYNAMIC_BROKER, DYNAMIC_DEFAULT, DEFAULT = 2, 3, 5  # Kafka's ConfigSource numbers


@pytest.fixture
def rdkafka(broker: RunningBroker) -> AdminClient:
    """librdkafka's admin client."""
    return AdminClient({"bootstrap.servers": broker.bootstrap})


@pytest.fixture
def node(rdkafka: AdminClient) -> str:
    """The broker's id, as librdkafka's test takes it from the cluster's brokers."""
    return str(rdkafka.describe_cluster(request_timeout=30).result(timeout=30).nodes[0].id)


@pytest.fixture
def raw(broker: RunningBroker) -> Iterator[KafkaPythonAdmin]:
    """Requests for the cluster-wide default, which librdkafka cannot address."""
    admin = KafkaPythonAdmin(broker.bootstrap)
    yield admin
    admin.close()


def outcome(future: Future[Any]) -> tuple[str, str | None]:
    """A resource's answer as Kafka's error name and message (``OK`` when accepted)."""
    try:
        future.result(timeout=30)
    except KafkaException as exc:
        error = exc.args[0]
        return error.name(), error.str()
    return OK


def legacy(
    admin: AdminClient, node: str, configs: Mapping[str, str], validate_only: bool = False
) -> tuple[str, str | None]:
    """AlterConfigs: the broker's whole set of dynamic configs becomes ``configs``."""
    resource = ConfigResource(RdResourceType.BROKER, node, set_config=dict(configs))
    with pytest.warns(DeprecationWarning):
        (future,) = admin.alter_configs([resource], validate_only=validate_only).values()
    return outcome(future)


def incremental(
    admin: AdminClient,
    node: str,
    ops: Sequence[tuple[str, AlterConfigOpType, str]],
    validate_only: bool = False,
) -> tuple[str, str | None]:
    """IncrementalAlterConfigs of one broker."""
    entries = [ConfigEntry(key, value, incremental_operation=op) for key, op, value in ops]
    resource = ConfigResource(RdResourceType.BROKER, node, incremental_configs=entries)
    (future,) = admin.incremental_alter_configs([resource], validate_only=validate_only).values()
    return outcome(future)


def described(admin: AdminClient, node: str, keys: Sequence[str]) -> dict[str, tuple[str | None, int] | None]:
    """Value and source of some of a broker's keys, as librdkafka describes them (None: not listed)."""
    resource = ConfigResource(RdResourceType.BROKER, node)
    (future,) = admin.describe_configs([resource]).values()
    entries = future.result(timeout=30)
    return {key: (entries[key].value, int(entries[key].source)) if key in entries else None for key in keys}


def test_broker_configs_altered_as_librdkafkas_admin_test_does(rdkafka: AdminClient, node: str) -> None:
    """Kerberos keys change on a broker through both APIs even with no GSSAPI listener, and a
    list key appended to and subtracted from starts from its default, as on Kafka."""
    try:
        assert legacy(rdkafka, node, {KERBEROS: "58000"}) == OK
        assert incremental(rdkafka, node, [(KERBEROS, SET, "58000")]) == OK
        assert (
            incremental(
                rdkafka, node, [("background.threads", SET, "9"), ("log.cleanup.policy", APPEND, "compact")]
            )
            == OK
        )

        def changed() -> None:
            assert described(rdkafka, node, [KERBEROS, "background.threads", "log.cleanup.policy"]) == {
                KERBEROS: ("58000", DYNAMIC_BROKER),
                "background.threads": ("9", DYNAMIC_BROKER),
                "log.cleanup.policy": ("delete,compact", DYNAMIC_BROKER),
            }

        eventually(changed)
        ops = [("background.threads", DELETE, ""), ("log.cleanup.policy", SUBTRACT, "compact")]
        assert incremental(rdkafka, node, ops) == OK

        def restored() -> None:
            assert described(rdkafka, node, ["background.threads", "log.cleanup.policy"]) == {
                "background.threads": ("10", DEFAULT),
                "log.cleanup.policy": ("delete", DYNAMIC_BROKER),
            }

        eventually(restored)
    finally:
        incremental(rdkafka, node, [(KERBEROS, DELETE, ""), ("log.cleanup.policy", DELETE, "")])


@pytest.mark.parametrize(
    ("configs", "error"),
    [
        (
            {"ssl.keystore.type": "PEM"},
            "These security configs can be dynamically updated only per-listener using the listener prefix: [ssl.keystore.type]",
        ),
        (
            {"log.dirs": "/elsewhere", "num.partitions": "3", "broker.id": "1"},
            "Cannot update these configs dynamically: [num.partitions, broker.id, log.dirs]",
        ),
        ({"log.retention.hours": "5"}, "Cannot update these configs dynamically: [log.retention.hours]"),
        ({KERBEROS: "soon"}, f"Invalid value soon for configuration {KERBEROS}: Not a number of type LONG"),
        (
            {"sasl.login.refresh.buffer.seconds": "99999"},
            "Invalid value 99999 for configuration sasl.login.refresh.buffer.seconds: Not a number of type SHORT",
        ),
        (
            {"background.threads": "0"},
            "Invalid value 0 for configuration background.threads: Value must be at least 1",
        ),
        (
            {"listener.name.external.ssl.client.auth": "sometimes"},
            "Invalid value sometimes for configuration ssl.client.auth: String must be one of: required, requested, none",
        ),
        (
            {"compression.gzip.level": "12"},
            "Invalid value 12 for configuration compression.gzip.level: Value must be between 1 and 9 or equal to -1",
        ),
        (
            {"log.cleaner.min.cleanable.ratio": "1.5"},
            "Invalid value 1.5 for configuration log.cleaner.min.cleanable.ratio: Value must be no more than 1",
        ),
        (
            {"log.cleanup.policy": "compact,shred"},
            "Invalid value shred for configuration log.cleanup.policy: String must be one of: compact, delete",
        ),
        (
            {"num.io.threads": "17"},
            "Invalid value org.apache.kafka.common.config.ConfigException: Dynamic thread count update validation failed for num.io.threads=17, value should not be greater than double the current value 8 for configuration Invalid dynamic configuration",
        ),
        (
            {"num.network.threads": "1", "num.replica.fetchers": "3"},
            "Invalid value org.apache.kafka.common.config.ConfigException: Dynamic thread count update validation failed for num.replica.fetchers=3, value should not be greater than double the current value 1 for configuration Invalid dynamic configuration",
        ),
        (
            {"log.cleaner.threads": "3"},
            "Invalid value org.apache.kafka.common.config.ConfigException: Log cleaner threads cannot be increased to more than double the current value 1 for configuration Invalid dynamic configuration",
        ),
    ],
    ids=lambda value: next(iter(value)) if isinstance(value, dict) else "",
)
def test_refused_broker_changes_read_as_on_kafka(
    rdkafka: AdminClient, node: str, configs: dict[str, str], error: str
) -> None:
    """Static keys, TLS stores without a listener, values of the wrong type or range, thread
    counts that more than double: INVALID_REQUEST with Kafka's message, through both APIs."""
    assert legacy(rdkafka, node, configs, validate_only=True) == ("INVALID_REQUEST", error)
    ops = [(key, SET, value) for key, value in configs.items()]
    assert incremental(rdkafka, node, ops, validate_only=True) == ("INVALID_REQUEST", error)


def test_append_to_a_broker_key_that_is_no_list(rdkafka: AdminClient, node: str) -> None:
    appended = incremental(rdkafka, node, [("background.threads", APPEND, "3")], validate_only=True)
    assert appended == (
        "INVALID_CONFIG",
        "Config value append is not allowed for config key: background.threads",
    )


def test_cluster_default_takes_cluster_wide_keys_only(raw: KafkaPythonAdmin, node: str) -> None:
    """The cluster-wide default refuses the keys only a broker may set (Kerberos and TLS ones,
    per-listener keys), takes the others through both APIs, and brokers inherit them."""
    per_broker = {KERBEROS: "58000", "sasl.kerberos.ticket.renew.jitter": "0.1"}
    for incremental_api in (False, True):
        answer = raw.alter_broker_resource(
            "", _sets(per_broker), incremental=incremental_api, validate_only=True
        )
        assert answer == (
            "INVALID_REQUEST",
            "Cannot update these configs at default cluster level, broker id must be specified: "
            "[sasl.kerberos.min.time.before.relogin, sasl.kerberos.ticket.renew.jitter]",
        )
    listener = _sets({"listener.name.external.ssl.keystore.type": "PEM"})
    assert raw.alter_broker_resource("", listener, incremental=True, validate_only=True) == (
        "INVALID_REQUEST",
        "Cannot update these configs at default cluster level, broker id must be specified: "
        "[listener.name.external.ssl.keystore.type]",
    )
    wide = {
        "max.connections": "10000",
        "listener.name.external.max.connections": "500",
        "remote.fetch.max.wait.ms": "600",
    }
    try:
        assert raw.alter_broker_resource("", _sets(wide), incremental=True) == OK

        def inherited() -> None:
            default = raw.describe_broker_resource("")
            assert {key: _shown(default, key) for key in wide} == {
                key: (value, DYNAMIC_DEFAULT) for key, value in wide.items()
            }
            entry = raw.describe_broker_resource(node, ["max.connections"]).get("max.connections", {})
            assert (entry["value"], entry["config_source"], entry["read_only"]) == (
                "10000",
                DYNAMIC_DEFAULT,
                False,
            )
            assert entry["synonyms"][0] == {
                "name": "max.connections",
                "value": "10000",
                "source": DYNAMIC_DEFAULT,
            }

        eventually(inherited)
        # The legacy API replaces the whole default set. Kafka 4.3 keeps min.insync.replicas in it
        # while eligible leader replicas are on (it refuses a set without it), so it is kept.
        replaced = {"min.insync.replicas": "1", "max.connections": "20000"}
        assert raw.alter_broker_resource("", _sets(replaced), incremental=False) == OK

        def replaced_whole() -> None:
            default = raw.describe_broker_resource("")
            assert _shown(default, "max.connections") == ("20000", DYNAMIC_DEFAULT)
            assert "remote.fetch.max.wait.ms" not in default

        eventually(replaced_whole)
    finally:
        raw.alter_broker_resource("", {key: (1, None) for key in wide}, incremental=True)


def test_per_listener_secret_and_custom_keys_described_as_on_kafka(
    rdkafka: AdminClient, raw: KafkaPythonAdmin, node: str
) -> None:
    """A per-listener key is described read-only with its listener-less synonym, a password is
    never shown, and a key Kafka does not know is kept (plugins read such keys) but hidden."""
    keys = {
        "listener.name.external.ssl.keystore.type": "PEM",
        "listener.name.external.ssl.keystore.password": "not-shown",
        "odradek.compat.custom": "kept",
    }
    try:
        assert incremental(rdkafka, node, [(key, SET, value) for key, value in keys.items()]) == OK

        def shown() -> None:
            entries = raw.describe_broker_resource(node, list(keys))
            assert set(entries) == set(keys)
            store = entries["listener.name.external.ssl.keystore.type"]
            assert (store["value"], store["config_source"], store["read_only"], store["is_sensitive"]) == (
                "PEM",
                DYNAMIC_BROKER,
                True,
                False,
            )
            assert [(s["name"], s["source"]) for s in store["synonyms"]] == [
                ("listener.name.external.ssl.keystore.type", DYNAMIC_BROKER),
                ("ssl.keystore.type", DEFAULT),
            ]
            for secret in ("listener.name.external.ssl.keystore.password", "odradek.compat.custom"):
                entry = entries[secret]
                assert (
                    entry["value"],
                    entry["config_source"],
                    entry["is_sensitive"],
                    entry["read_only"],
                ) == (
                    None,
                    DYNAMIC_BROKER,
                    True,
                    True,
                )
                assert entry["synonyms"] == [{"name": secret, "value": None, "source": DYNAMIC_BROKER}]
            assert entries["odradek.compat.custom"]["config_type"] == 0

        eventually(shown)
    finally:
        incremental(rdkafka, node, [(key, DELETE, "") for key in keys])


def _shown(entries: Mapping[str, dict[str, Any]], key: str) -> tuple[str | None, int] | None:
    """A described key's value and source, or None when it is not listed."""
    entry = entries.get(key)
    return None if entry is None else (entry["value"], entry["config_source"])


def _sets(configs: Mapping[str, str]) -> dict[str, tuple[int, str | None]]:
    """IncrementalAlterConfigs SET operations (Kafka's operation 0) for ``configs``."""
    return {key: (0, value) for key, value in configs.items()}

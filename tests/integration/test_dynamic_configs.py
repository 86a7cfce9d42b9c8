"""Dynamic broker and group configs survive a crash: they are on disk before the answer.

The compatibility suite (``compat_tests/test_kafka_tools.py``) checks that changes apply at
once, against both brokers; this checks what it cannot restart a broker for.
"""

from __future__ import annotations

import json
from pathlib import Path

from confluent_kafka.admin import ConfigSource

from broker.client.admin_client import KafkaConnection
from compat_tests.kit.broker_process import OdradekProcess
from compat_tests.kit.drivers.confluent import ConfluentAdmin
from compat_tests.kit.raw_protocol import RawClient
from wire.api_keys import ApiKey


def test_dynamic_configs_survive_a_crash(odradek_broker: OdradekProcess) -> None:
    admin = ConfluentAdmin(odradek_broker.bootstrap)
    # The cluster-wide default (resource name ""), through the legacy AlterConfigs: the stock
    # Python admins refuse a broker resource without a number.
    default_resource = {
        "resource_type": 4,
        "resource_name": "",
        "configs": [{"name": "log.retention.ms", "value": "5400000"}],
    }
    with KafkaConnection(odradek_broker.bootstrap) as connection:
        answer = connection.request(
            ApiKey.ALTER_CONFIGS, 2, {"resources": [default_resource], "validate_only": False}
        )
    assert [r["error_code"] for r in answer["responses"]] == [0]
    node_values = {"log.retention.ms": "7200000", "log.cleaner.backoff.ms": "20000"}
    admin.alter_configs("BROKER", "1", node_values, incremental=True)
    admin.alter_configs("GROUP", "billing", {"consumer.session.timeout.ms": "50000"}, incremental=True)
    odradek_broker.kill()
    odradek_broker.start()
    admin = ConfluentAdmin(odradek_broker.bootstrap)

    node = admin.broker_configs(1)
    retention = node["log.retention.ms"]
    assert retention.value == "7200000"
    assert retention.source == "DYNAMIC_BROKER_CONFIG"
    assert not retention.read_only
    assert node["log.cleaner.backoff.ms"].value == "20000"
    assert node["log.dirs"].read_only
    with KafkaConnection(odradek_broker.bootstrap) as connection:
        (default,) = connection.request(
            ApiKey.DESCRIBE_CONFIGS,
            4,
            {"resources": [{"resource_type": 4, "resource_name": "", "configuration_keys": None}]},
        )["results"]
    assert [(c["name"], c["value"], c["config_source"]) for c in default["configs"]] == [
        ("log.retention.ms", "5400000", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value)
    ]
    group = admin.configs("GROUP", "billing")
    assert group["consumer.session.timeout.ms"].value == "50000"
    assert group["consumer.heartbeat.interval.ms"].value == "5000"


def test_a_group_config_applies_to_its_next_heartbeat(odradek_broker: OdradekProcess) -> None:
    """A KIP-848 member is told its group's heartbeat interval, others the broker's."""
    admin = ConfluentAdmin(odradek_broker.bootstrap)
    with RawClient(odradek_broker.bootstrap) as client:
        assert client.join_consumer_group("tuned", topics=["t"])["heartbeat_interval_ms"] == 5000
        admin.alter_configs("GROUP", "tuned", {"consumer.heartbeat.interval.ms": "7000"}, incremental=True)
        assert client.join_consumer_group("tuned", topics=["t"])["heartbeat_interval_ms"] == 7000
        assert client.join_consumer_group("plain", topics=["t"])["heartbeat_interval_ms"] == 5000


def test_keys_without_effect_are_kept_but_never_applied(odradek_broker: OdradekProcess) -> None:
    """Kafka's dynamic keys Odradek does not apply (Kerberos, per-listener TLS, connection limits)
    survive a crash and are described, while the broker goes on using its static settings."""
    admin = ConfluentAdmin(odradek_broker.bootstrap)
    kept = {
        "sasl.kerberos.min.time.before.relogin": "58000",
        "listener.name.external.ssl.keystore.type": "PEM",
        "max.connections": "1",
    }
    admin.alter_configs("BROKER", "1", kept, incremental=True)
    odradek_broker.kill()
    odradek_broker.start()
    admin = ConfluentAdmin(odradek_broker.bootstrap)
    node = admin.broker_configs(1)
    assert {key: (node[key].value, node[key].source) for key in kept} == {
        key: (value, "DYNAMIC_BROKER_CONFIG") for key, value in kept.items()
    }
    # max.connections=1 would refuse this second connection if it applied.
    assert ConfluentAdmin(odradek_broker.bootstrap).broker_configs(1)["max.connections"].value == "1"


def test_a_saved_key_kafka_keeps_static_is_dropped_at_start(tmp_path: Path) -> None:
    """Before Odradek took Kafka's list, ``log.retention.hours`` could be changed at runtime: a
    saved one is dropped with a warning at start, and the rest of the saved layer still applies."""
    broker = OdradekProcess(tmp_path / "broker")
    broker.data_dir.mkdir(parents=True)
    saved = {"default": {}, "node": {"log.retention.hours": "5", "log.retention.ms": "7200000"}, "groups": {}}
    (broker.data_dir / "dynamic-configs.json").write_text(json.dumps(saved))
    with broker:
        node = ConfluentAdmin(broker.bootstrap).broker_configs(1)
        assert node["log.retention.ms"].value == "7200000"
        assert node["log.retention.hours"].source == "DEFAULT_CONFIG"
    assert (
        "ignoring saved dynamic broker configs Kafka keeps static: log.retention.hours" in broker.log_text()
    )

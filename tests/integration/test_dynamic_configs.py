"""Dynamic broker and group configs survive a crash: they are on disk before the answer.

The compatibility suite (``compat_tests/test_kafka_tools.py``) checks that changes apply at
once, against both brokers; this checks what it cannot restart a broker for.
"""

from __future__ import annotations

from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    ResourceType,
)

from broker.admin_client import KafkaConnection
from tests.integration.broker_process import OdradekProcess
from tests.integration.raw_client import RawClient
from wire.api_keys import ApiKey

TIMEOUT_S = 30


def set_configs(admin: AdminClient, resource_type: ResourceType, name: str, values: dict[str, str]) -> None:
    entries = [ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET) for k, v in values.items()]
    resource = ConfigResource(resource_type, name, incremental_configs=entries)
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(timeout=TIMEOUT_S)


def describe(admin: AdminClient, resource_type: ResourceType, name: str) -> dict[str, ConfigEntry]:
    (future,) = admin.describe_configs([ConfigResource(resource_type, name)]).values()
    return future.result(timeout=TIMEOUT_S)


def test_dynamic_configs_survive_a_crash(odradek_broker: OdradekProcess) -> None:
    admin = AdminClient({"bootstrap.servers": odradek_broker.bootstrap})
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
    set_configs(
        admin, ResourceType.BROKER, "1", {"log.retention.ms": "7200000", "log.cleaner.backoff.ms": "20000"}
    )
    set_configs(admin, ResourceType.GROUP, "billing", {"consumer.session.timeout.ms": "50000"})
    odradek_broker.kill()
    odradek_broker.start()
    admin = AdminClient({"bootstrap.servers": odradek_broker.bootstrap})

    node = describe(admin, ResourceType.BROKER, "1")
    retention = node["log.retention.ms"]
    assert retention.value == "7200000"
    assert retention.source == ConfigSource.DYNAMIC_BROKER_CONFIG.value
    assert not retention.is_read_only
    assert node["log.cleaner.backoff.ms"].value == "20000"
    assert node["log.dirs"].is_read_only
    with KafkaConnection(odradek_broker.bootstrap) as connection:
        (default,) = connection.request(
            ApiKey.DESCRIBE_CONFIGS,
            4,
            {"resources": [{"resource_type": 4, "resource_name": "", "configuration_keys": None}]},
        )["results"]
    assert [(c["name"], c["value"], c["config_source"]) for c in default["configs"]] == [
        ("log.retention.ms", "5400000", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value)
    ]
    group = describe(admin, ResourceType.GROUP, "billing")
    assert group["consumer.session.timeout.ms"].value == "50000"
    assert group["consumer.heartbeat.interval.ms"].value == "5000"


def test_a_group_config_applies_to_its_next_heartbeat(odradek_broker: OdradekProcess) -> None:
    """A KIP-848 member is told its group's heartbeat interval, others the broker's."""
    admin = AdminClient({"bootstrap.servers": odradek_broker.bootstrap})
    with RawClient(odradek_broker.bootstrap) as client:
        assert client.join_consumer_group("tuned", topics=["t"])["heartbeat_interval_ms"] == 5000
        set_configs(admin, ResourceType.GROUP, "tuned", {"consumer.heartbeat.interval.ms": "7000"})
        assert client.join_consumer_group("tuned", topics=["t"])["heartbeat_interval_ms"] == 7000
        assert client.join_consumer_group("plain", topics=["t"])["heartbeat_interval_ms"] == 5000

"""``odradek configs get|set|delete`` against a real broker: overrides with their sources,
incremental changes that leave other keys alone, and the broker's own refusals."""

from __future__ import annotations

import json

from compat_tests.kit.broker_process import OdradekProcess
from compat_tests.kit.brokers import odradek_cli as odradek


def configs(broker: OdradekProcess, *args: str) -> list[dict]:
    result = odradek("configs", "get", *args, "--output", "json", "--bootstrap", broker.bootstrap)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_topic_configs_set_get_delete(shared_broker: OdradekProcess) -> None:
    bootstrap = ["--bootstrap", shared_broker.bootstrap]
    assert (
        odradek("topics", "create", "configured", "--config", "cleanup.policy=compact", *bootstrap).returncode
        == 0
    )
    topic = ["--topic", "configured"]
    assert configs(shared_broker, *topic) == [
        {"name": "cleanup.policy", "value": "compact", "source": "DYNAMIC_TOPIC_CONFIG"}
    ]
    changed = odradek("configs", "set", *topic, "retention.ms=60000", "max.message.bytes=2000", *bootstrap)
    assert changed.returncode == 0, changed.stderr
    assert changed.stdout.strip() == "Completed updating config for topic configured."
    assert {c["name"]: c["value"] for c in configs(shared_broker, *topic)} == {
        "cleanup.policy": "compact",  # untouched: set is incremental
        "max.message.bytes": "2000",
        "retention.ms": "60000",
    }
    table = odradek("configs", "get", *topic, *bootstrap).stdout.splitlines()
    assert table[0].split() == ["NAME", "VALUE", "SOURCE"]
    assert ["retention.ms", "60000", "DYNAMIC_TOPIC_CONFIG"] in [line.split() for line in table]
    deleted = odradek("configs", "delete", *topic, "retention.ms", "cleanup.policy", *bootstrap)
    assert deleted.returncode == 0, deleted.stderr
    assert [c["name"] for c in configs(shared_broker, *topic)] == ["max.message.bytes"]
    (default,) = configs(shared_broker, *topic, "retention.ms")
    assert default == {"name": "retention.ms", "value": "604800000", "source": "DEFAULT_CONFIG"}
    everything = configs(shared_broker, *topic, "--all")
    assert len(everything) > 20 and {"segment.bytes", "retention.ms"} <= {c["name"] for c in everything}


def test_refusals_carry_the_brokers_error(shared_broker: OdradekProcess) -> None:
    bootstrap = ["--bootstrap", shared_broker.bootstrap]
    assert odradek("topics", "create", "refusing", *bootstrap).returncode == 0
    bad_value = odradek("configs", "set", "--topic", "refusing", "retention.ms=soon", *bootstrap)
    assert bad_value.returncode == 1
    assert "changing the configs of topic refusing failed: INVALID_CONFIG" in bad_value.stderr
    missing = odradek("configs", "get", "--topic", "no-such-topic", *bootstrap)
    assert missing.returncode == 1 and "UNKNOWN_TOPIC_OR_PARTITION" in missing.stderr
    unknown_key = odradek("configs", "get", "--topic", "refusing", "retention.msec", *bootstrap)
    assert unknown_key.returncode == 1 and "has no config named retention.msec" in unknown_key.stderr
    malformed = odradek("configs", "set", "--topic", "refusing", "retention.ms", *bootstrap)
    assert malformed.returncode == 1 and "expected KEY=VALUE" in malformed.stderr


def test_broker_configs(shared_broker: OdradekProcess) -> None:
    shown = {c["name"]: c for c in configs(shared_broker, "--broker", "1")}
    assert shown["listeners"]["source"] == "STATIC_BROKER_CONFIG"
    assert shown["listeners"]["value"] == f"PLAINTEXT://{shared_broker.bootstrap}"
    refused = odradek(
        "configs", "set", "--broker", "1", "num.partitions=3", "--bootstrap", shared_broker.bootstrap
    )
    assert refused.returncode == 1 and "INVALID_REQUEST" in refused.stderr

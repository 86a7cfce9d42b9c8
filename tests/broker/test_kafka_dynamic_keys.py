"""The committed list of Kafka's dynamic broker keys is what the pinned Kafka release says.

The facts are read from Kafka's own broker jars (fetched with Maven, run with Java), as
``python -m broker.config.configgen`` does, so a pin bumped without regenerating, a hand edit of the
generated module, or an extractor bug fails here.
"""

from __future__ import annotations

from pathlib import Path

import broker.config.kafka_dynamic_keys as generated
from broker.config.config_defs import BROKER_CONFIGS, LIVE_BROKER_KEYS
from broker.config.configgen import GENERATED_MARKER, committed, load
from broker.config.kafka_values import DESCRIBED_CHECKS, Described
from wire.schemagen.specs import KAFKA_CLIENTS_VERSION


def test_generated_keys_match_the_pinned_kafka_release() -> None:
    found = load(KAFKA_CLIENTS_VERSION)
    assert committed(generated) == found, "regenerate with `python -m broker.config.configgen`"
    assert (
        f"{GENERATED_MARKER} from Apache Kafka {KAFKA_CLIENTS_VERSION}"
        in Path(generated.__file__).read_text()
    )


def test_kafkas_key_list_is_whole() -> None:
    """The librdkafka admin test's keys are there, and static keys are not dynamic ones."""
    assert generated.DYNAMIC_KEYS["sasl.kerberos.min.time.before.relogin"].per_broker
    assert not generated.DYNAMIC_KEYS["background.threads"].per_broker
    assert "log.dirs" in generated.STATIC_KEYS
    assert not generated.STATIC_KEYS & set(generated.DYNAMIC_KEYS)


def test_every_validator_written_as_code_is_reproduced() -> None:
    described = {
        key.validator.text for key in generated.DYNAMIC_KEYS.values() if isinstance(key.validator, Described)
    }
    assert described <= set(DESCRIBED_CHECKS), (
        "add Kafka's check to broker.config.kafka_values.DESCRIBED_CHECKS"
    )


def test_odradek_applies_only_keys_kafka_lets_change() -> None:
    assert set(LIVE_BROKER_KEYS) <= set(generated.DYNAMIC_KEYS)
    for key in set(BROKER_CONFIGS) & set(generated.DYNAMIC_KEYS):
        assert BROKER_CONFIGS[key].type == generated.DYNAMIC_KEYS[key].type, key

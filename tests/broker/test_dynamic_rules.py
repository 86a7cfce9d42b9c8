"""Kafka's checks of a dynamic broker config change, read as Kafka 4.3 words them.

Each expected message is what a real Kafka 4.3.1 broker answered for the same change
(``compat_tests/test_dynamic_broker_configs.py`` checks a sample against both brokers).
"""

from __future__ import annotations

import pytest

from broker.config.config_defs import ConfigType
from broker.config.dynamic_rules import check_change, check_thread_counts
from broker.config.kafka_values import InvalidValue, java_hash_set_text, java_number_text, parse

STATIC = "Cannot update these configs dynamically"
AT_DEFAULT = "Cannot update these configs at default cluster level, broker id must be specified"


def refusal(configs: dict[str, str], per_broker: bool = True) -> str | None:
    try:
        check_change(configs, per_broker)
    except InvalidValue as exc:
        return str(exc)
    return None


@pytest.mark.parametrize(
    ("configs", "per_broker", "message"),
    [
        ({"sasl.kerberos.min.time.before.relogin": "58000"}, True, None),
        ({"listener.name.external.ssl.keystore.type": "PEM"}, True, None),
        ({"listener.name.external.max.connections": "5", "max.connections": "9"}, False, None),
        ({"plugin.custom.key": "x"}, False, None),
        (
            {"log.dirs": "x", "num.partitions": "3", "broker.id": "1"},
            True,
            f"{STATIC}: [num.partitions, broker.id, log.dirs]",
        ),
        ({"max.partitions.per.broker": "5"}, True, f"{STATIC}: [max.partitions.per.broker]"),
        (
            {"sasl.kerberos.min.time.before.relogin": "1", "sasl.kerberos.ticket.renew.jitter": "0.1"},
            False,
            f"{AT_DEFAULT}: [sasl.kerberos.min.time.before.relogin, sasl.kerberos.ticket.renew.jitter]",
        ),
        (
            {"listener.name.external.ssl.keystore.type": "PEM"},
            False,
            f"{AT_DEFAULT}: [listener.name.external.ssl.keystore.type]",
        ),
        (
            {"ssl.truststore.type": "PEM", "ssl.keystore.type": "PEM"},
            True,
            "These security configs can be dynamically updated only per-listener using the listener prefix: "
            "[ssl.keystore.type, ssl.truststore.type]",
        ),
        (
            {"leader.replication.throttled.rate": "-5"},
            True,
            "Invalid value -5 for configuration leader.replication.throttled.rate: Value must be at least 0",
        ),
        (
            {"listener.name.x.sasl.login.refresh.buffer.seconds": "40000"},
            True,
            "Invalid value 40000 for configuration sasl.login.refresh.buffer.seconds: Not a number of type SHORT",
        ),
        (
            {"log.cleaner.io.max.bytes.per.second": "fast"},
            True,
            "Invalid value fast for configuration log.cleaner.io.max.bytes.per.second: Not a number of type DOUBLE",
        ),
        (
            {"log.preallocate": "yes"},
            True,
            "Invalid value yes for configuration log.preallocate: Expected value to be either true or false",
        ),
        (
            {"compression.type": "brotli"},
            True,
            "Invalid value brotli for configuration compression.type: String must be one of: uncompressed, zstd, lz4, snappy, gzip, producer",
        ),
        (
            {"compression.gzip.level": "0"},
            True,
            "Invalid value 0 for configuration compression.gzip.level: Value must be between 1 and 9 or equal to -1",
        ),
        (
            {"log.cleaner.min.cleanable.ratio": "2e7"},
            True,
            "Invalid value 2.0E7 for configuration log.cleaner.min.cleanable.ratio: Value must be no more than 1",
        ),
    ],
)
def test_kafkas_rules_and_words(configs: dict[str, str], per_broker: bool, message: str | None) -> None:
    assert refusal(configs, per_broker) == message


def test_thread_counts_at_most_halve_or_double() -> None:
    current = {"num.io.threads": "8", "log.cleaner.threads": "1"}.get
    wrapped = "Invalid value org.apache.kafka.common.config.ConfigException: {} for configuration Invalid dynamic configuration"
    check_thread_counts(current, {"num.io.threads": "4", "log.cleaner.threads": "1"}.get)
    with pytest.raises(InvalidValue) as halved:
        check_thread_counts(current, {"num.io.threads": "3", "log.cleaner.threads": "1"}.get)
    assert str(halved.value) == wrapped.format(
        "Dynamic thread count update validation failed for num.io.threads=3, value should be at least half the current value 8"
    )
    with pytest.raises(InvalidValue) as cleaner:
        check_thread_counts(current, {"num.io.threads": "8", "log.cleaner.threads": "0"}.get)
    assert str(cleaner.value) == wrapped.format("Log cleaner threads should be at least 1")


def test_values_parse_as_java_parses_them() -> None:
    assert parse("k", ConfigType.INT, " 12 ") == 12
    assert parse("k", ConfigType.LIST, " a , b ") == ["a", "b"]
    assert parse("k", ConfigType.LIST, "") == []
    assert parse("k", ConfigType.DOUBLE, "1e3d") == 1000.0
    for text, type_ in (
        ("1_000", ConfigType.INT),
        ("2147483648", ConfigType.INT),
        ("inf", ConfigType.DOUBLE),
    ):
        with pytest.raises(InvalidValue):
            parse("k", type_, text)
    assert [java_number_text(v) for v in (1.5, 1e7, 1e-4, 0.0, 7)] == ["1.5", "1.0E7", "1.0E-4", "0.0", "7"]


def test_key_lists_print_in_java_hash_set_order() -> None:
    """Kafka's messages list keys as a Java HashSet prints them: by hash bucket."""
    assert (
        java_hash_set_text(["log.dirs", "num.partitions", "broker.id"])
        == "[num.partitions, broker.id, log.dirs]"
    )
    assert java_hash_set_text([]) == "[]"

"""Broker configuration: Kafka's key names, defaults, precedence and error messages."""

from __future__ import annotations

from pathlib import Path

import pytest

from broker.config.config import BrokerConfig, ConfigError, env_overrides, parse_listeners, parse_properties
from log.config import LogConfig


def test_properties_syntax_as_kafka_files_use_it() -> None:
    text = "# comment\n! also\nlog.dirs=/a,/b\nnum.partitions: 3\nlisteners PLAINTEXT://h:1\nlong=one\\\n  two\n\n"
    assert parse_properties(text) == {
        "log.dirs": "/a,/b",
        "num.partitions": "3",
        "listeners": "PLAINTEXT://h:1",
        "long": "onetwo",
    }


def test_environment_names_map_to_kafka_keys() -> None:
    env = {"ODRADEK_LOG_DIRS": "/d", "ODRADEK_LOG_ROLL__X": "1", "ODRADEK_A___B": "2", "PATH": "/bin"}
    assert env_overrides(env) == {"log.dirs": "/d", "log.roll_x": "1", "a-b": "2"}


def test_precedence_file_then_env_then_overrides(tmp_path: Path) -> None:
    props = tmp_path / "server.properties"
    props.write_text("num.partitions=2\nlog.segment.bytes=100\nauto.create.topics.enable=false\n")
    config = BrokerConfig.load(
        props,
        {"log.segment.bytes": "300"},
        environ={"ODRADEK_LOG_SEGMENT_BYTES": "200", "ODRADEK_NUM_PARTITIONS": "5"},
    )
    assert config.get_int("num.partitions") == 5
    assert config.get_int("log.segment.bytes") == 300
    assert config.get_bool("auto.create.topics.enable") is False


def test_kafka_defaults_and_derived_ms_keys() -> None:
    config = BrokerConfig.load(environ={})
    assert config.get("log.retention.ms") == str(168 * 3_600_000)
    assert config.get_int("num.partitions") == 1
    assert config.get_int("message.max.bytes") == 1048588
    assert config.get_bool("auto.create.topics.enable") is True
    minutes = BrokerConfig.load(overrides={"log.retention.minutes": "5"}, environ={})
    assert minutes.get("log.retention.ms") == "300000"
    assert minutes.topic_defaults()["retention.ms"] == "300000"
    ms = BrokerConfig.load(overrides={"log.retention.minutes": "5", "log.retention.ms": "7"}, environ={})
    assert ms.topic_defaults()["retention.ms"] == "7"


def test_topic_defaults_follow_broker_synonyms() -> None:
    config = BrokerConfig.load(
        overrides={"log.segment.bytes": "4096", "message.max.bytes": "2000"}, environ={}
    )
    defaults = config.topic_defaults()
    assert defaults["segment.bytes"] == "4096"
    assert defaults["max.message.bytes"] == "2000"
    assert defaults["cleanup.policy"] == "delete"


def test_unknown_keys_are_reported_not_dropped() -> None:
    config = BrokerConfig.load(overrides={"log.segmnet.bytes": "1", "retention.ms": "5"}, environ={})
    assert config.unknown_keys == ["log.segmnet.bytes"]


def test_bad_values_say_what_is_wrong() -> None:
    with pytest.raises(ConfigError, match="num.partitions='many' is not a valid int"):
        BrokerConfig.load(overrides={"num.partitions": "many"}, environ={})
    with pytest.raises(ConfigError, match="NAME://host:port"):
        BrokerConfig.load(overrides={"listeners": "localhost:9092"}, environ={})
    with pytest.raises(ConfigError, match="cannot read config file"):
        BrokerConfig.load("/nonexistent/server.properties", environ={})
    with pytest.raises(ConfigError, match="telemetry.max.bytes must be at least 1"):
        BrokerConfig.load(overrides={"telemetry.max.bytes": "0"}, environ={})


def test_listeners_and_advertised_defaults() -> None:
    assert [
        (x.name, x.host, x.port) for x in parse_listeners("PLAINTEXT://:9092, INTERNAL://[::1]:9093")
    ] == [
        ("PLAINTEXT", "", 9092),
        ("INTERNAL", "::1", 9093),
    ]
    config = BrokerConfig.load(overrides={"listeners": "PLAINTEXT://0.0.0.0:9092"}, environ={})
    assert config.advertised_listeners[0].host == "localhost"
    assert config.node_id == 1


def broker_log_config(properties: dict[str, str]) -> LogConfig:
    """The log settings a topic without overrides gets from these server.properties keys."""
    return LogConfig.from_properties(BrokerConfig.load(overrides=properties, environ={}).topic_defaults())


def test_broker_properties_use_kafka_synonyms() -> None:
    config = broker_log_config(
        {
            "log.segment.bytes": "2048",
            "log.roll.hours": "2",
            "log.retention.minutes": "3",
            "log.retention.hours": "100",  # lower priority than minutes
            "message.max.bytes": "777",
            "log.flush.interval.messages": "1",
            "log.cleaner.min.cleanable.ratio": "0.1",
            "num.partitions": "8",  # not a log setting
        }
    )
    assert config.segment_bytes == 2048
    assert config.segment_ms == 2 * 3_600_000
    assert config.retention_ms == 3 * 60_000
    assert config.max_message_bytes == 777 and config.flush_messages == 1
    assert config.min_cleanable_dirty_ratio == 0.1
    assert broker_log_config({"log.retention.hours": "-1"}).retention_ms == -1
    assert broker_log_config({"log.roll.ms": "5", "log.roll.hours": "1"}).segment_ms == 5


def test_broker_roll_keys_in_hours_and_ms() -> None:
    hours = broker_log_config({"log.roll.hours": "2", "log.roll.jitter.hours": "1"})
    assert (hours.segment_ms, hours.segment_jitter_ms) == (7_200_000, 3_600_000)
    both = broker_log_config({"log.roll.hours": "2", "log.roll.ms": "5000"})
    assert both.segment_ms == 5000, "log.roll.ms wins over log.roll.hours, as in Kafka"
    topic = LogConfig.from_properties({"segment.ms": "100", "segment.bytes": "4096"}, hours)
    assert (topic.segment_ms, topic.segment_bytes, topic.segment_jitter_ms) == (100, 4096, 3_600_000)

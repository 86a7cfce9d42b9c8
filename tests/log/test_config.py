"""LogConfig: Kafka's defaults, topic-level keys, broker-level synonyms."""

from __future__ import annotations

import pytest

from log import InvalidConfigError, LogConfig
from log.config import LONG_MAX
from wire.error_codes import ErrorCode


def test_kafka_defaults() -> None:
    config = LogConfig()
    assert config.segment_bytes == 1_073_741_824
    assert config.segment_ms == 604_800_000 == config.retention_ms
    assert config.segment_index_bytes == 10_485_760
    assert config.index_interval_bytes == 4096
    assert config.max_message_bytes == 1_048_588
    assert config.message_timestamp_type == "CreateTime" and not config.log_append_time
    assert config.retention_bytes == -1
    assert config.cleanup_policy == ("delete",) and not config.compact
    assert config.flush_messages == config.flush_ms == LONG_MAX
    assert config.min_insync_replicas == 1
    assert config.random_segment_jitter() == 0


def test_topic_properties_override_a_base() -> None:
    base = LogConfig(segment_bytes=1000)
    config = LogConfig.from_properties(
        {
            "retention.ms": "-1",
            "cleanup.policy": "compact, delete",
            "message.timestamp.type": "LogAppendTime",
            "min.cleanable.dirty.ratio": "0.25",
            "compression.type": "lz4",  # not modelled by the engine: ignored here
        },
        base,
    )
    assert config.segment_bytes == 1000 and config.retention_ms == -1
    assert config.compact and config.log_append_time
    assert config.min_cleanable_dirty_ratio == 0.25
    assert LogConfig.from_properties(config.to_properties()) == config


@pytest.mark.parametrize(
    "key, value",
    [
        ("segment.bytes", "abc"),
        ("segment.bytes", "10"),
        ("retention.ms", "-2"),
        ("message.timestamp.type", "Now"),
        ("cleanup.policy", "delete,forever"),
        ("min.cleanable.dirty.ratio", "1.5"),
    ],
)
def test_bad_values_are_invalid_config(key: str, value: str) -> None:
    with pytest.raises(InvalidConfigError) as info:
        LogConfig.from_properties({key: value})
    assert info.value.error_code == ErrorCode.INVALID_CONFIG


def test_segment_jitter_stays_below_the_roll_time() -> None:
    config = LogConfig(segment_ms=100, segment_jitter_ms=10_000)
    assert all(0 <= config.random_segment_jitter() < 100 for _ in range(200))

"""What the console changes on the cluster, and only when started with ``--allow-writes``:
create a topic, set or remove a topic config, produce one record, reset a group's offsets,
delete records below an offset.

Each is the request the matching ``odradek`` command sends (and so each keeps that command's
rules: a group with members is refused a reset with kafka-consumer-groups.sh's message,
through :func:`broker.cli.group_offsets.groups_reset_offsets` itself); each returns a sentence
saying what happened, which the page shows.
"""

from __future__ import annotations

import argparse
import random
import time
from typing import cast

from broker.cli.configs import DELETE, SET
from broker.cli.group_offsets import groups_reset_offsets
from broker.cli.records import partition_for_key
from broker.cli.registry import AdminError
from broker.cli.web.errors import require
from broker.cli.web.links import Session
from broker.cli.web.offsets import leaders
from broker.cli.web.topics_data import topic_metadata
from broker.client.admin_client import REQUEST_TIMEOUT_MS
from wire.api_keys import ApiKey
from wire.record_batch import Header, Record, encode_batch

RESETS = ("to-earliest", "to-latest", "to-offset", "to-datetime")
DELETE_RECORDS_VERSION = 2


def key_values(text: str, what: str) -> list[tuple[str, str]]:
    """``KEY=VALUE`` lines (blank lines skipped) as pairs."""
    pairs = []
    for line in text.splitlines():
        if not line.strip():
            continue
        key, equals, value = line.partition("=")
        if not equals or not key.strip():
            raise AdminError(f"{what}: expected KEY=VALUE, got {line!r}")
        pairs.append((key.strip(), value))
    return pairs


def create_topic(s: Session, name: str, partitions: int, configs: str) -> str:
    result = s.any().create_topic(name, partitions, dict(key_values(configs, "configs")))
    require(result, f"creating topic {name}", f"CREATE on TOPIC {name} (or on CLUSTER)")
    return f"Created topic {name} with {result['num_partitions']} partition(s)."


def alter_config(s: Session, topic: str, key: str, value: str) -> str:
    """Sets ``key``, or removes its override (back to the default) when ``value`` is empty."""
    change = (key, SET, value) if value else (key, DELETE, None)
    answer = s.any().alter_configs(topic, [change])
    require(answer, f"changing {key} of {topic}", f"ALTER_CONFIGS on TOPIC {topic}", f"topic {topic}")
    return f"Set {key}={value} on {topic}." if value else f"Removed the override of {key} on {topic}."


def produce(s: Session, topic: str, partition: int | None, key: str, value: str, headers: str) -> str:
    """One record, to ``partition``, else to the key's partition (the Java client's), else any."""
    metadata = topic_metadata(s, topic)
    led = leaders(metadata)
    count = len(led)
    if partition is None:
        partition = partition_for_key(key.encode(), count) if key else random.randrange(count)
    if (topic, partition) not in led:
        raise AdminError(f"topic {topic} has no partition {partition} (it has {count})")
    pairs: tuple[Header, ...] = tuple((k, v.encode()) for k, v in key_values(headers, "headers"))
    record = Record(0, int(time.time() * 1000), key.encode() if key else None, value.encode(), pairs)
    answer = s.node(led[(topic, partition)]).produce(topic, partition, bytes(encode_batch([record])))
    require(answer, f"producing to {topic}-{partition}", f"WRITE on TOPIC {topic}", f"topic {topic}")
    return f"Produced one record to {topic}-{partition} at offset {answer['base_offset']}."


def reset_offsets(s: Session, group: str, scenario: str, topic: str, target: str) -> str:
    """kafka-consumer-groups.sh --reset-offsets --execute, on ``topic`` or every committed topic."""
    if scenario not in RESETS:
        raise AdminError(f"choose one of {', '.join(RESETS)}")
    try:
        to_offset = int(target) if scenario == "to-offset" else None
    except ValueError as exc:
        raise AdminError(f"the offset must be a whole number, not {target!r}") from exc
    args = argparse.Namespace(
        group=group,
        topic=[topic] if topic else None,
        all_topics=not topic,
        to_earliest=scenario == "to-earliest",
        to_latest=scenario == "to-latest",
        to_current=False,
        to_offset=to_offset,
        shift_by=None,
        to_datetime=target if scenario == "to-datetime" else None,
        by_duration=None,
        execute=True,
        dry_run=False,
    )
    plan = cast(list[dict[str, object]], groups_reset_offsets(s.coordinator(group), args).data)
    moved = ", ".join(f"{row['topic']}-{row['partition']}: {row['new_offset']}" for row in plan)
    return f"Reset the offsets of group {group}: {moved or 'no partitions'}."


def delete_records(s: Session, topic: str, partition: int, before: int) -> str:
    """DeleteRecords: the partition's records below ``before`` (-1: all of them) are gone."""
    led = leaders(topic_metadata(s, topic))
    if (topic, partition) not in led:
        raise AdminError(f"topic {topic} has no partition {partition} (it has {len(led)})")
    body = {
        "topics": [{"name": topic, "partitions": [{"partition_index": partition, "offset": before}]}],
        "timeout_ms": REQUEST_TIMEOUT_MS,
    }
    answer = s.node(led[(topic, partition)]).request(ApiKey.DELETE_RECORDS, DELETE_RECORDS_VERSION, body)
    (result,) = answer["topics"][0]["partitions"]
    require(result, f"deleting records of {topic}-{partition}", f"DELETE on TOPIC {topic}", f"topic {topic}")
    return f"Deleted the records of {topic}-{partition} below offset {result['low_watermark']}."

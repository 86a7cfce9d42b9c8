"""``__consumer_offsets`` cannot be emptied or switched to deletion by a client.

DeleteRecords on it used to be accepted and wiped committed offsets at the next restart (the
replay starts at the new log start), and its ``cleanup.policy`` could be set to ``delete`` so
that retention would drop them. Kafka answers DeleteRecords on an internal topic with
INVALID_TOPIC_EXCEPTION; it accepts the config change, which Odradek refuses (POLICY_VIOLATION)
because it loses group state. Each test ends by restarting the broker and reading the group's
committed offset back, which is what the refusals protect.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from compat_tests.kit.broker_process import OdradekProcess
from compat_tests.kit.raw_protocol import RawClient
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode

pytestmark = pytest.mark.timeout(120)

OFFSETS_TOPIC, GROUP, TOPIC = "__consumer_offsets", "keeps-its-offsets", "data"
SET, DELETE, APPEND = 0, 1, 2
TOPIC_RESOURCE = 2


def commit_offset(client: RawClient, offset: int) -> None:
    """Commit ``offset`` for TOPIC-0 as a simple (memberless) group, retrying while the
    coordinator is still loading: this creates ``__consumer_offsets`` on a fresh broker."""
    body = {
        "group_id": GROUP,
        "generation_id_or_member_epoch": -1,
        "member_id": "",
        "group_instance_id": None,
        "topics": [
            {
                "name": TOPIC,
                "partitions": [
                    {
                        "partition_index": 0,
                        "committed_offset": offset,
                        "committed_leader_epoch": -1,
                        "committed_metadata": None,
                    }
                ],
            }
        ],
    }
    retriable = {ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.COORDINATOR_NOT_AVAILABLE}
    for _ in range(200):
        code = client.request(ApiKey.OFFSET_COMMIT, 8, body)["topics"][0]["partitions"][0]["error_code"]
        if code not in retriable:
            break
    assert code == ErrorCode.NONE


def committed_after_restart(broker: OdradekProcess) -> int:
    broker.restart()
    with RawClient(broker.bootstrap) as client:
        for _ in range(200):  # the group's partition replays in the background after a start
            committed = client.committed_offsets(GROUP).get((TOPIC, 0), -1)
            if committed != -1:
                return committed
    return -1


@pytest.fixture
def group_broker(odradek_broker: OdradekProcess) -> OdradekProcess:
    """A broker with ``__consumer_offsets`` holding one committed offset (42)."""
    with RawClient(odradek_broker.bootstrap) as client:
        client.create_topic(TOPIC, 1)
        commit_offset(client, 42)
    return odradek_broker


def test_delete_records_on_consumer_offsets_is_invalid_topic(group_broker: OdradekProcess) -> None:
    with RawClient(group_broker.bootstrap) as client:
        (topic,) = client.metadata([OFFSETS_TOPIC])["topics"]
        partitions = [p["partition_index"] for p in topic["partitions"]]
        assert partitions, topic
        for before in (-1, 1):  # -1: the high watermark, i.e. everything
            wanted = [{"partition_index": p, "offset": before} for p in partitions]
            body = {"topics": [{"name": OFFSETS_TOPIC, "partitions": wanted}], "timeout_ms": 30_000}
            (answer,) = client.request(ApiKey.DELETE_RECORDS, 2, body)["topics"]
            codes = {p["error_code"] for p in answer["partitions"]}
            assert codes == {ErrorCode.INVALID_TOPIC_EXCEPTION}, answer
    assert committed_after_restart(group_broker) == 42


def alter(client: RawClient, configs: dict[str, str], validate_only: bool = False) -> dict[str, Any]:
    """Legacy AlterConfigs: the given keys replace every override of the topic."""
    entries = [{"name": k, "value": v} for k, v in configs.items()]
    resource = {"resource_type": TOPIC_RESOURCE, "resource_name": OFFSETS_TOPIC, "configs": entries}
    body = {"resources": [resource], "validate_only": validate_only}
    (answer,) = client.request(ApiKey.ALTER_CONFIGS, 2, body)["responses"]
    return answer


def alter_incrementally(client: RawClient, op: int, key: str, value: str | None) -> dict[str, Any]:
    return client.alter_configs(OFFSETS_TOPIC, [(key, op, value)])


def cleanup_policy(client: RawClient) -> str:
    return next(
        c["value"] for c in client.describe_configs(OFFSETS_TOPIC)["configs"] if c["name"] == "cleanup.policy"
    )


REFUSED_CHANGES: dict[str, Callable[[RawClient], dict[str, Any]]] = {
    "alter-delete": lambda c: alter(c, {"cleanup.policy": "delete"}),
    "alter-delete-validate-only": lambda c: alter(c, {"cleanup.policy": "delete"}, validate_only=True),
    "alter-compact-and-delete": lambda c: alter(c, {"cleanup.policy": "compact,delete"}),
    # Legacy AlterConfigs replaces all overrides: leaving cleanup.policy out resets it to the
    # broker default (delete), which Kafka does silently.
    "alter-omitting-the-policy": lambda c: alter(c, {"retention.ms": "1000"}),
    "incremental-set-delete": lambda c: alter_incrementally(c, SET, "cleanup.policy", "delete"),
    "incremental-append-delete": lambda c: alter_incrementally(c, APPEND, "cleanup.policy", "delete"),
    "incremental-delete-the-policy": lambda c: alter_incrementally(c, DELETE, "cleanup.policy", None),
}


def test_consumer_offsets_stays_compacted(group_broker: OdradekProcess) -> None:
    with RawClient(group_broker.bootstrap) as client:
        for name, change in REFUSED_CHANGES.items():
            answer = change(client)
            assert answer["error_code"] == ErrorCode.POLICY_VIOLATION, (name, answer)
            assert "cleanup.policy" in answer["error_message"], (name, answer)
            assert cleanup_policy(client) == "compact", name
        # Changes that keep it compacted are accepted, as Kafka accepts them.
        assert alter(client, {"cleanup.policy": "compact", "segment.ms": "3600000"})["error_code"] == 0
        assert alter_incrementally(client, SET, "min.cleanable.dirty.ratio", "0.4")["error_code"] == 0
        assert cleanup_policy(client) == "compact"
    assert committed_after_restart(group_broker) == 42

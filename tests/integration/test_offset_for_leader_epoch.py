"""OffsetForLeaderEpoch over a real socket, answered from the partition's leader epoch cache.

A single node leads every partition in epoch 0 for its whole life: epoch 0 ends at the log end
(written or not), a newer epoch and UNDEFINED (-1) are unknown (-1/-1), as Kafka answers.
Older epochs of a log holding several are covered in ``tests/log/test_leader_epochs.py``.
"""

from __future__ import annotations

import pytest

from broker.client.admin_client import KafkaConnection
from compat_tests.kit.broker_process import OdradekProcess
from compat_tests.kit.drivers.confluent import ConfluentAdmin, ConfluentClient
from compat_tests.kit.drivers.records import make_records, unique_topic
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode


def end_offsets(bootstrap: str, topic: str, epochs: list[int]) -> list[tuple[int, int, int]]:
    """(error code, leader epoch, end offset) for each requested epoch of partition 0."""
    with KafkaConnection(bootstrap) as connection:
        answers = [
            connection.request(
                ApiKey.OFFSET_FOR_LEADER_EPOCH,
                4,
                {
                    "replica_id": -1,
                    "topics": [
                        {
                            "topic": topic,
                            "partitions": [
                                {"partition": 0, "current_leader_epoch": 0, "leader_epoch": epoch}
                            ],
                        }
                    ],
                },
            )
            for epoch in epochs
        ]
    return [
        (p["error_code"], p["leader_epoch"], p["end_offset"])
        for answer in answers
        for t in answer["topics"]
        for p in t["partitions"]
    ]


@pytest.mark.parametrize("count", [0, 25])
def test_end_offsets_of_a_single_node_partition(shared_broker: OdradekProcess, count: int) -> None:
    topic = unique_topic("epoch-ends")
    with ConfluentAdmin(shared_broker.bootstrap) as admin:
        admin.create_topic(topic, 1)
    if count:
        ConfluentClient(shared_broker.bootstrap).produce(topic, make_records(count), partition=0)
    assert end_offsets(shared_broker.bootstrap, topic, [0, 1, -1]) == [
        (ErrorCode.NONE, 0, count),
        (ErrorCode.NONE, -1, -1),
        (ErrorCode.NONE, -1, -1),
    ]

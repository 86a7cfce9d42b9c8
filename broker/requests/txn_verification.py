"""KIP-890 part 1 in a cluster: a transactional write to a partition led here, whose
transactional id another broker coordinates, is checked with that coordinator first.

As Kafka's ``AddPartitionsToTxnManager``: only when the producer instance has no transaction
open in the partition yet (afterwards the partition's own producer state says it joined), with
AddPartitionsToTxn v4 ``verify_only`` to the leader of the id's ``__transaction_state``
partition, nothing cached.  A coordinator that cannot be asked (none elected, unreachable, not
the coordinator any more) makes the write NOT_ENOUGH_REPLICAS, which producers retry, as Kafka
answers then.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from typing import Any

from broker.requests.context import RequestContext
from broker.requests.coordinators import error_for
from coordinator.transactions import TRANSACTION_STATE_TOPIC
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode
from wire.errors import WireError
from wire.record_batch import parse_batch_header

log = logging.getLogger(__name__)

VERIFY_VERSION = 4  # the first AddPartitionsToTxn version brokers send (batched, verify_only)
VERIFY_TIMEOUT_S = 30.0  # Kafka's request.timeout.ms for the verification
UNAVAILABLE = {
    ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    ErrorCode.NOT_COORDINATOR,
}

Producer = tuple[int, int]
PartitionKey = tuple[str, int]


def _needs_check(ctx: RequestContext, topic: str, index: int, records: Any) -> Producer | None:
    """The (producer id, epoch) of a transactional batch that must be verified before it is
    appended to a partition led here, else None (append_partition validates the batch fully)."""
    replicas = ctx.broker.replicas
    partition_log = ctx.broker.partitions.get(topic, index)
    if replicas is None or partition_log is None or replicas.leader((topic, index)) is None or not records:
        return None
    try:
        batch = parse_batch_header(records, 0)
    except WireError:
        return None
    if not batch.is_transactional or partition_log.in_transaction(batch.producer_id, batch.producer_epoch):
        return None
    return batch.producer_id, batch.producer_epoch


async def verified_elsewhere(
    ctx: RequestContext, transactional_id: str | None, partitions: list[tuple[str, int, Any]]
) -> dict[PartitionKey, ErrorCode]:
    """The verdict of the remote coordinator for each of ``partitions`` (topic, index, records)
    that needs one; partitions absent from the answer need no remote check."""
    cluster, coordinator = ctx.broker.cluster, ctx.broker.transactions
    if cluster is None or coordinator is None or not transactional_id:
        return {}
    if coordinator.availability(transactional_id) is not ErrorCode.NOT_COORDINATOR:
        return {}  # coordinated here: joined_transaction asks the local coordinator
    wanted: dict[Producer, list[PartitionKey]] = defaultdict(list)
    for topic, index, records in partitions:
        producer = _needs_check(ctx, topic, index, records)
        if producer is not None:
            wanted[producer].append((topic, index))
    if not wanted:
        return {}
    record = cluster.metadata.image.partition(
        TRANSACTION_STATE_TOPIC, coordinator.partition_for(transactional_id)
    )
    verdicts: dict[PartitionKey, ErrorCode] = {}
    for (producer_id, epoch), keys in wanted.items():
        answer = None
        if record is not None and record.leader >= 0:
            answer = await _ask(ctx, record.leader, transactional_id, producer_id, epoch, keys)
        for key in keys:
            code = (
                answer.get(key, ErrorCode.NOT_ENOUGH_REPLICAS)
                if answer is not None
                else ErrorCode.NOT_ENOUGH_REPLICAS
            )
            verdicts[key] = ErrorCode.NOT_ENOUGH_REPLICAS if code in UNAVAILABLE else error_for(ctx, code)
    return verdicts


async def _ask(
    ctx: RequestContext,
    node: int,
    transactional_id: str,
    producer_id: int,
    epoch: int,
    keys: list[PartitionKey],
) -> dict[PartitionKey, ErrorCode] | None:
    """AddPartitionsToTxn v4 verify_only to ``node``: an error per partition, None on failure."""
    cluster = ctx.broker.cluster
    if cluster is None:  # only cluster members ask another broker
        return None
    by_topic: dict[str, list[int]] = defaultdict(list)
    for topic, index in keys:
        by_topic[topic].append(index)
    body = {
        "transactions": [
            {
                "transactional_id": transactional_id,
                "producer_id": producer_id,
                "producer_epoch": epoch,
                "verify_only": True,
                "topics": [{"name": topic, "partitions": indexes} for topic, indexes in by_topic.items()],
            }
        ]
    }
    try:
        response = await cluster.peers.request(
            node, ApiKey.ADD_PARTITIONS_TO_TXN, VERIFY_VERSION, body, VERIFY_TIMEOUT_S
        )
    except ConnectionError as exc:
        log.warning("cannot verify transaction %s with broker %d: %s", transactional_id, node, exc)
        return None
    if response["error_code"] != ErrorCode.NONE:
        return dict.fromkeys(keys, _code(response["error_code"]))
    return {
        (topic["name"], result["partition_index"]): _code(result["partition_error_code"])
        for txn in response["results_by_transaction"]
        for topic in txn["topic_results"]
        for result in topic["results_by_partition"]
    }


def _code(value: int) -> ErrorCode:
    """A peer's error code; one this broker does not know counts as unavailable (retried)."""
    try:
        return ErrorCode(value)
    except ValueError:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE

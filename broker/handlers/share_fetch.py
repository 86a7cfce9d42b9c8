"""ShareFetch and ShareAcknowledge (KIP-932): a share group's members reading records.

Each request goes to the leader of the partitions it names and carries the member's share
session epoch (``broker.services.share.share_sessions``). Acknowledgements are applied and
persisted first (a ShareFetch may piggyback the previous batch's), then a ShareFetch reads
and acquires records from every partition of the session, waiting up to ``MaxWaitMs`` for
records to arrive or to come back (released, or their locks expired).

Kafka's error placement is kept: group-level problems (no rights on the group, a session
unknown or at another epoch, a full session cache, acknowledgements on an initial fetch) are
the top-level error; a partition's fetch error and its acknowledgement error are separate
fields of its answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import trio

from broker.requests.acl_checks import authorized
from broker.requests.api_support import Served
from broker.requests.context import RequestContext
from broker.requests.leader_hints import leader_hint, node_endpoints
from broker.requests.partition_requests import find_partition
from broker.services.security.acl_model import ResourceType
from broker.services.share.share_partitions import FetchLimits, ShareFetchError, SharePartitions
from broker.services.share.share_sessions import FINAL_EPOCH, INITIAL_EPOCH, ShareSession, ShareSessionError
from coordinator.share.model import AcknowledgementBatch, AcquiredRecords
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode

if TYPE_CHECKING:
    from broker.services.share.share_sessions import SharePartitionId, ShareSessions
    from wire.messages import (
        ShareAcknowledgeRequest,
        ShareAcknowledgeResponse,
        ShareAcknowledgeResponsePartitions,
        ShareFetchRequest,
        ShareFetchRequestAcknowledgementBatches,
        ShareFetchResponse,
        ShareFetchResponseCurrentLeader,
        ShareFetchResponsePartitions,
    )

NO_LEADER: ShareFetchResponseCurrentLeader = {"leader_id": -1, "leader_epoch": -1}
PARTITION_READ_BYTES = 4 << 20
"""The most one partition's read takes from the log per ShareFetch (at least one batch): a
share-partition hands out at most MaxRecords records and its record locks' worth, so reading
the client's whole fetch.max.bytes (50 MiB by default) would read and drop most of it."""
DEFAULT_MAX_RECORDS = 500  # ShareFetch v0's members have no MaxRecords: the client's max.poll.records default


class _Answer:
    """What one partition's answer will hold."""

    __slots__ = ("error", "message", "ack_error", "ack_message", "records", "acquired", "leader")

    def __init__(self) -> None:
        self.error = ErrorCode.NONE
        self.message: str | None = None
        self.ack_error = ErrorCode.NONE
        self.ack_message: str | None = None
        self.records = b""
        self.acquired: list[AcquiredRecords] = []
        self.leader: ShareFetchResponseCurrentLeader = NO_LEADER


def _leader_epoch(ctx: RequestContext, key: tuple[str, int], single_node_epoch: int) -> int:
    """The partition's leader epoch (a new one means another leader had the share-partition)."""
    replicas = ctx.broker.replicas
    known = replicas.known_leader(key) if replicas is not None else None
    return known[1] if known is not None else single_node_epoch


def _leader_hint(
    ctx: RequestContext, key: tuple[str, int], code: ErrorCode
) -> ShareFetchResponseCurrentLeader:
    """Where a client that asked the wrong broker should go (a cluster's leader, if known)."""
    replicas = ctx.broker.replicas
    hint = leader_hint(replicas, key, code) if replicas is not None else None
    if hint is None:
        return NO_LEADER
    return {"leader_id": hint["leader_id"], "leader_epoch": hint["leader_epoch"]}


def _services(ctx: RequestContext) -> tuple[SharePartitions, ShareSessions]:
    share, sessions = ctx.broker.share, ctx.broker.share_sessions
    if share is None or sessions is None:
        raise RuntimeError(
            "broker.services.coordinators.share_coordinator.install_share_coordinator was not called"
        )
    return share, sessions


def _acknowledgements(
    topics: Sequence[tuple[bytes, int, list[ShareFetchRequestAcknowledgementBatches]]],
) -> dict[SharePartitionId, list[AcknowledgementBatch]]:
    return {
        (topic_id, index): [
            AcknowledgementBatch(b["first_offset"], b["last_offset"], list(b["acknowledge_types"]))
            for b in batches
        ]
        for topic_id, index, batches in topics
        if batches
    }


def _open_session(
    sessions: ShareSessions, ctx: RequestContext, group_id: str, member_id: str, epoch: int
) -> tuple[ShareSession, ShareSession | None]:
    """The session this request runs in (and a replaced or closed one whose records to release)."""
    if epoch == INITIAL_EPOCH:
        return sessions.open(group_id, member_id, ctx.auth)
    if epoch == FINAL_EPOCH:
        closed = sessions.close(group_id, member_id)
        return closed, closed
    return sessions.next(group_id, member_id, epoch), None


def _update_session(
    ctx: RequestContext,
    session: ShareSession,
    request: ShareFetchRequest,
    answers: dict[SharePartitionId, _Answer],
) -> None:
    """Add the request's partitions to the session and drop its forgotten ones. Only partitions
    that exist are kept (a client naming made-up topic ids must not grow the session): the
    others are answered UNKNOWN_TOPIC_ID (or UNKNOWN_TOPIC_OR_PARTITION) once."""
    for topic in request["topics"]:
        info = ctx.broker.topics.by_id(topic["topic_id"])
        for partition in topic["partitions"]:
            key = (topic["topic_id"], partition["partition_index"])
            if info is not None and 0 <= key[1] < info.partitions:
                session.partitions[key] = None
            else:
                unknown = ErrorCode.UNKNOWN_TOPIC_ID if info is None else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                answers.setdefault(key, _Answer()).error = unknown
    for forgotten in request["forgotten_topics_data"]:
        for index in forgotten["partitions"]:
            session.partitions.pop((forgotten["topic_id"], index), None)


async def _acknowledge(
    ctx: RequestContext,
    share: SharePartitions,
    group_id: str,
    member_id: str,
    acks: dict[SharePartitionId, list[AcknowledgementBatch]],
    answers: dict[SharePartitionId, _Answer],
) -> None:
    for (topic_id, index), batches in acks.items():
        answer = answers.setdefault((topic_id, index), _Answer())
        info = ctx.broker.topics.by_id(topic_id)
        if info is None:
            answer.ack_error = ErrorCode.UNKNOWN_TOPIC_ID
            continue
        if not authorized(ctx, ResourceType.TOPIC, info.name):
            answer.ack_error = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            continue
        failure = await share.acknowledge(group_id, member_id, (group_id, info.name, index), batches)
        if failure is not None:
            answer.ack_error, answer.ack_message = failure.error_code, str(failure)


async def _release(ctx: RequestContext, share: SharePartitions, session: ShareSession) -> None:
    keys = []
    for topic_id, index in session.partitions:
        info = ctx.broker.topics.by_id(topic_id)
        if info is not None:
            keys.append((session.group_id, info.name, index))
    await share.release(session.group_id, session.member_id, keys)


async def _read_all(
    ctx: RequestContext,
    share: SharePartitions,
    session: ShareSession,
    limits: FetchLimits,
    answers: dict[SharePartitionId, _Answer],
) -> tuple[bool, list[tuple[str, int]]]:
    """Read and acquire every partition of the session: (whether anything was acquired or
    failed, the partitions to wait on). ``max_records`` bounds the whole answer, as Kafka's
    ``maxFetchRecords - acquiredRecordsCount`` does, not each partition: a client is given no
    more than it asked for, so it holds nothing its polls do not return."""
    group_id, member_id = session.group_id, session.member_id
    total, taken, done, keys = 0, 0, False, []
    for topic_id, index in session.partitions:
        answer = answers.setdefault((topic_id, index), _Answer())
        info = ctx.broker.topics.by_id(topic_id)
        if info is None:
            answer.error, done = ErrorCode.UNKNOWN_TOPIC_ID, True
            continue
        found = find_partition(ctx, info.name, index)
        if isinstance(found, ErrorCode):
            answer.error, done = found, True
            answer.leader = _leader_hint(ctx, (info.name, index), found)
            continue
        log_, _info = found
        keys.append((info.name, index))
        if taken >= limits.max_records:
            continue
        try:
            epoch = _leader_epoch(ctx, (info.name, index), info.leader_epoch)
            hosted = await share.hosted(group_id, info.name, index, topic_id, epoch, log_)
            budget = min(limits.max_bytes - total, PARTITION_READ_BYTES)
            remaining = FetchLimits(
                limits.max_records - taken, limits.batch_size, budget, limits.record_limit
            )
            records, acquired = share.read_and_acquire(
                group_id, member_id, (group_id, info.name, index), hosted, log_, remaining, total == 0
            )
        except ShareFetchError as error:
            answer.error, answer.message, done = error.code, str(error), True
            continue
        if acquired:
            answer.records, answer.acquired, done = records, answer.acquired + acquired, True
            total += len(records)
            taken += sum(a.count for a in acquired)
    await share.flush_pending()
    return done, keys


async def _wait(
    ctx: RequestContext, share: SharePartitions, keys: list[tuple[str, int]], timeout_s: float
) -> None:
    """Until an append to one of ``keys``, records coming back anywhere, or the timeout."""
    async with trio.open_nursery() as nursery:

        async def appended() -> None:
            await ctx.broker.appends.wait_any(keys, timeout_s)
            nursery.cancel_scope.cancel()

        async def available() -> None:
            await share.wait_available(timeout_s)
            nursery.cancel_scope.cancel()

        nursery.start_soon(appended)
        nursery.start_soon(available)


def _fetch_partitions(
    answers: dict[SharePartitionId, _Answer],
) -> dict[bytes, list[ShareFetchResponsePartitions]]:
    by_topic: dict[bytes, list[ShareFetchResponsePartitions]] = {}
    for (topic_id, index), answer in answers.items():
        by_topic.setdefault(topic_id, []).append(
            {
                "partition_index": index,
                "error_code": answer.error,
                "error_message": answer.message,
                "acknowledge_error_code": answer.ack_error,
                "acknowledge_error_message": answer.ack_message,
                "current_leader": answer.leader,
                "records": answer.records,
                "acquired_records": [
                    {
                        "first_offset": a.first_offset,
                        "last_offset": a.last_offset,
                        "delivery_count": a.delivery_count,
                    }
                    for a in answer.acquired
                ],
            }
        )
    return by_topic


def _fetch_refused(code: ErrorCode, message: str | None = None) -> ShareFetchResponse:
    return {
        "error_code": code,
        "error_message": message,
        "acquisition_lock_timeout_ms": 0,
        "responses": [],
        "node_endpoints": [],
    }


async def handle_share_fetch(ctx: RequestContext, request: ShareFetchRequest) -> ShareFetchResponse:
    share, sessions = _services(ctx)
    group_id, member_id = request["group_id"] or "", request["member_id"] or ""
    if not group_id or not member_id:
        return _fetch_refused(ErrorCode.INVALID_REQUEST, "A group id and a member id are required.")
    if not authorized(ctx, ResourceType.GROUP, group_id):
        return _fetch_refused(ErrorCode.GROUP_AUTHORIZATION_FAILED)
    epoch = request["share_session_epoch"]
    acks = _acknowledgements(
        [
            (t["topic_id"], p["partition_index"], p["acknowledgement_batches"])
            for t in request["topics"]
            for p in t["partitions"]
        ]
    )
    if epoch == INITIAL_EPOCH and acks:
        return _fetch_refused(
            ErrorCode.INVALID_REQUEST, "Acknowledge data present in the initial share fetch request."
        )
    try:
        session, released = _open_session(sessions, ctx, group_id, member_id, epoch)
    except ShareSessionError as error:
        return _fetch_refused(error.code, str(error))
    if released is not None and released is not session:
        await _release(ctx, share, released)
    answers: dict[SharePartitionId, _Answer] = {}
    if epoch != FINAL_EPOCH:
        _update_session(ctx, session, request, answers)
    await _acknowledge(ctx, share, group_id, member_id, acks, answers)
    if epoch == FINAL_EPOCH:
        await _release(ctx, share, session)
    else:
        limits = FetchLimits(
            max_records=request.get("max_records", DEFAULT_MAX_RECORDS)
            if request.get("max_records", 0) > 0
            else DEFAULT_MAX_RECORDS,
            batch_size=max(1, request.get("batch_size", 0) or DEFAULT_MAX_RECORDS),
            max_bytes=max(0, min(request["max_bytes"], ctx.broker.config.get_int("fetch.max.bytes"))),
            record_limit=request.get("share_acquire_mode", 0) == 1,
        )
        deadline = trio.current_time() + max(0, request["max_wait_ms"]) / 1000
        while True:
            done, keys = await _read_all(ctx, share, session, limits, answers)
            remaining = deadline - trio.current_time()
            if done or acks or remaining <= 0 or not keys:
                break
            await _wait(ctx, share, keys, remaining)
    by_topic = _fetch_partitions(
        {k: a for k, a in answers.items() if a.acquired or a.error or a.ack_error or k in acks},
    )
    partitions = [p for parts in by_topic.values() for p in parts if p["current_leader"]["leader_id"] >= 0]
    return {
        "error_code": ErrorCode.NONE,
        "error_message": None,
        "acquisition_lock_timeout_ms": share.lock_duration_ms(group_id),
        "responses": [{"topic_id": topic_id, "partitions": parts} for topic_id, parts in by_topic.items()],
        "node_endpoints": node_endpoints(ctx, partitions, 0),
    }


def _ack_refused(code: ErrorCode, message: str | None = None) -> ShareAcknowledgeResponse:
    return {"error_code": code, "error_message": message, "responses": [], "node_endpoints": []}


async def handle_share_acknowledge(
    ctx: RequestContext, request: ShareAcknowledgeRequest
) -> ShareAcknowledgeResponse:
    share, sessions = _services(ctx)
    group_id, member_id = request["group_id"] or "", request["member_id"] or ""
    if not group_id or not member_id:
        return _ack_refused(ErrorCode.INVALID_REQUEST, "A group id and a member id are required.")
    if not authorized(ctx, ResourceType.GROUP, group_id):
        return _ack_refused(ErrorCode.GROUP_AUTHORIZATION_FAILED)
    epoch = request["share_session_epoch"]
    if epoch == INITIAL_EPOCH:
        return _ack_refused(
            ErrorCode.INVALID_SHARE_SESSION_EPOCH, "A share acknowledge request cannot open a session."
        )
    try:
        session, _closed = _open_session(sessions, ctx, group_id, member_id, epoch)
    except ShareSessionError as error:
        return _ack_refused(error.code, str(error))
    acks = _acknowledgements(
        [
            (t["topic_id"], p["partition_index"], p["acknowledgement_batches"])
            for t in request["topics"]
            for p in t["partitions"]
        ]
    )
    answers: dict[SharePartitionId, _Answer] = {}
    await _acknowledge(ctx, share, group_id, member_id, acks, answers)
    if epoch == FINAL_EPOCH:
        await _release(ctx, share, session)
    by_topic: dict[bytes, list[ShareAcknowledgeResponsePartitions]] = {}
    for (topic_id, index), answer in answers.items():
        by_topic.setdefault(topic_id, []).append(
            {
                "partition_index": index,
                "error_code": answer.ack_error,
                "error_message": answer.ack_message,
                "current_leader": NO_LEADER,
            }
        )
    return {
        "error_code": ErrorCode.NONE,
        "error_message": None,
        "acquisition_lock_timeout_ms": share.lock_duration_ms(group_id),
        "responses": [{"topic_id": topic_id, "partitions": parts} for topic_id, parts in by_topic.items()],
        "node_endpoints": [],
    }


HANDLERS = {
    ApiKey.SHARE_FETCH: Served(handle_share_fetch),
    ApiKey.SHARE_ACKNOWLEDGE: Served(handle_share_acknowledge),
}

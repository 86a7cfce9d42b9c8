"""Fetch: hand out whole record batches from partition logs, long-polling for new data.

The handler resolves the fetch's partitions (sessions, topic ids, authorization, leader
epochs), reads each through ``broker.services.storage.partition_reads`` (Kafka's
ReplicaManager.readFromLog: consumers and followers, isolation, divergence, KIP-74 limits)
and waits, shapes and throttles the answer.

Batches go out exactly as they sit in the segment files, never decoded: the response carries
file regions that the connection sends with ``os.sendfile`` (a response's first 64 KiB are
read into it instead, fewer system calls than regions for the small fetches of a consumer
that keeps up: ``broker.services.storage.file_region``).  Size limits follow KIP-74: the first non-empty
partition of a response always gets at least one whole batch, even one larger than
``max_bytes``/``partition_max_bytes``; later partitions only get what fits.  A response with
less than ``min_bytes`` waits (up to ``max_wait_ms``) for an append to any of its partitions.
From v13 topics are named by their (persistent) topic ids; an unknown id is UNKNOWN_TOPIC_ID.

Fetch sessions (KIP-227, ``broker/services/storage/fetch_sessions.py``): a full fetch with epoch 0 may open
one, and an incremental fetch then reads every partition of its session but answers only those
with something new.  A full fetch is served whatever session id it names (Go clients send -1
with epoch -1).

Isolation (KIP-98): every partition reports its last stable offset.  A read_committed fetch
(``isolation_level`` 1) gets only the whole batches below it, and the aborted transactions
overlapping them, for the client to drop; data past the last stable offset does not count
towards ``min_bytes``, so a long poll keeps waiting until a marker decides it.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from time import perf_counter
from typing import TYPE_CHECKING

import trio

from broker.requests.acl_checks import cluster_authorized
from broker.requests.api_support import Served
from broker.requests.context import RequestContext
from broker.requests.leader_hints import leader_hint, node_endpoints
from broker.requests.partition_requests import find_partition
from broker.requests.version_rules import FIRST_TOPIC_ID_VERSION, READ_COMMITTED
from broker.services.cluster_view import rack_of
from broker.services.replication.read_replica import preferred_read_replica
from broker.services.storage.fetch_sessions import Answer, SessionKey, SessionPartition
from broker.services.storage.file_region import INLINE_RESPONSE_BYTES, FileRegion
from broker.services.storage.partition_reads import (
    FetchPosition,
    ReadRefused,
    follower_fetched,
    mark_quiet,
    read_partition,
    still_quiet,
)
from broker.state.quota_store import CONSUMER_BYTE_RATE
from log.partition_log import FileSlice, PartitionLog
from wire.api_keys import ApiKey
from wire.codec import encode_response_parts
from wire.error_codes import ErrorCode
from wire.fetch_session_epochs import INVALID_SESSION_ID

if TYPE_CHECKING:
    from wire.messages import (
        FetchRequest,
        FetchResponse,
        FetchResponsePartitions,
        FetchResponseResponses,
    )

FIRST_LEADER_HINT_VERSION = 16  # KIP-951: current_leader and node_endpoints
FIRST_RACK_VERSION = 11  # KIP-392: rack_id, preferred_read_replica, fetching from followers
ZERO_UUID = bytes(16)


def partition_error(
    index: int, code: ErrorCode, high_watermark: int = -1, log_start: int = -1
) -> FetchResponsePartitions:
    return {
        "partition_index": index,
        "error_code": code,
        "high_watermark": high_watermark,
        "last_stable_offset": high_watermark,
        "log_start_offset": log_start,
        "aborted_transactions": None,
        "records": b"",
    }


def requested_partitions(ctx: RequestContext, request: FetchRequest) -> list[SessionPartition]:
    """The request's partitions in order, each named once (a repeat replaces the first's
    position values, as Kafka's request map does). From Fetch 13 topics are named by id; an id
    this broker never issued has no name (None)."""
    by_id = ctx.api_version >= FIRST_TOPIC_ID_VERSION
    wanted: dict[SessionKey, SessionPartition] = {}
    for t in request["topics"]:
        name, topic_id = (None, t["topic_id"]) if by_id else (t["topic"], ZERO_UUID)
        for p in t["partitions"]:
            target = SessionPartition(
                name,
                topic_id,
                p["partition"],
                p["fetch_offset"],
                p["partition_max_bytes"],
                p.get("current_leader_epoch", -1),
                p.get("last_fetched_epoch", -1),
            )
            wanted[target.key(by_id)] = target
    targets = list(wanted.values())
    if by_id:
        refresh_topic_names(ctx, targets)
    return targets


def refresh_topic_names(ctx: RequestContext, targets: Sequence[SessionPartition]) -> None:
    """Name a session's topics by their ids again for this fetch (Kafka resolves a session's
    names on each fetch too): a topic deleted since is unknown (None), and one created again
    under the same name is another topic, with another id."""
    by_id = ctx.broker.topics.by_id
    for target in targets:
        info = by_id(target.topic_id)
        target.topic = info.name if info else None


def forgotten_partitions(ctx: RequestContext, request: FetchRequest) -> list[SessionKey]:
    """The session keys ``forgotten_topics_data`` names (topic ids from Fetch 13)."""
    by_id = ctx.api_version >= FIRST_TOPIC_ID_VERSION
    return [
        (t["topic_id"] if by_id else t["topic"], index)
        for t in request.get("forgotten_topics_data") or ()
        for index in t["partitions"]
    ]


class FetchPlan:
    """One Fetch's partitions and limits, re-read after each wake-up."""

    def __init__(
        self,
        ctx: RequestContext,
        request: FetchRequest,
        targets: Sequence[SessionPartition],
        incremental: bool,
    ) -> None:
        self.ctx = ctx
        self.targets = targets
        # An incremental answer leaves out quiet partitions, so none is even built (an idle
        # consumer's session may hold thousands).
        self.incremental = incremental
        broker_cap = ctx.broker.config.get_int("fetch.max.bytes")
        quota_cap = ctx.broker.quotas.max_in_window(
            CONSUMER_BYTE_RATE, ctx.principal, ctx.header.client_id or ""
        )
        if quota_cap is not None and not is_follower(request):
            broker_cap = min(broker_cap, int(quota_cap))  # Kafka's maxValueInQuotaWindow
        self.max_bytes = max(0, min(request.get("max_bytes", broker_cap), broker_cap))
        self.read_committed = request.get("isolation_level", 0) == READ_COMMITTED
        # In a cluster: a follower's fetch reads up to the log end and moves the leader's state.
        self.replicas = ctx.broker.replicas
        self.follower_id = follower_id(request) if self.replicas is not None else -1
        # As Kafka: a follower's fetch needs CLUSTER_ACTION, which then covers every topic.
        self.follower_refused = self.follower_id >= 0 and not cluster_authorized(ctx)
        # KIP-392: a consumer's Fetch v11+ may be served by a follower, and the leader points a
        # consumer in another rack to the replica in its own (``replica.selector.class``).
        self.any_replica = self.follower_id < 0 and ctx.api_version >= FIRST_RACK_VERSION
        selects = self.any_replica and bool(ctx.broker.config.get("replica.selector.class"))
        self.client_rack = (request.get("rack_id") or "") if selects and self.replicas is not None else ""
        self._last: list[FetchResponsePartitions | None] = [None] * len(targets)  # the latest read

    def keys(self) -> list[tuple[str, int]]:
        return [(t.topic, t.partition) for t in self.targets if t.topic is not None]

    def read(self, woken: Collection[tuple[str, int]] | None = None) -> tuple[list[Answer], int, bool]:
        """Locate every partition's data once: (answers, bytes of records, whether to answer
        at once: an error, or a follower's diverging epoch, which it must act on). A higher high
        watermark alone is no reason: as in Kafka (its DelayedFetch completes a follower's fetch
        by bytes), a follower learns it with its next answer, so a one-record produce costs each
        follower one fetch round trip, not a second one to carry the high watermark.

        After a wake-up, ``woken`` names the partitions that woke the fetch: only those, and
        those that had records, are read again. The others' last reads stand (nothing was
        appended to them; a log start or, for a follower, a high watermark that moved meanwhile
        goes out with the next answer), so a follower's fetch parked on dozens of partitions
        costs one read of them, not one per wake-up.

        ``records`` holds the located ``FileSlice`` (or b"") until :func:`topic_responses`
        turns it into a sendable region; nothing is read from disk here. Partitions of an
        incremental fetch with nothing new are left out.
        """
        answers: list[Answer] = []
        total = 0
        errored = False
        results: list[FetchResponsePartitions | None] = []
        for target, last in zip(self.targets, self._last, strict=True):
            stands = woken is not None and still_stands(target, last, woken)
            result = last if stands else self._locate(target, total)
            results.append(result)
            if result is None:
                continue
            located = result["records"]
            size = located.length if isinstance(located, FileSlice) else 0
            total += size
            errored = errored or result["error_code"] != ErrorCode.NONE or "diverging_epoch" in result
            answers.append((target, result, size))
        self._last = results
        return answers, total, errored

    def _locate(self, target: SessionPartition, bytes_so_far: int) -> FetchResponsePartitions | None:
        """One partition's answer (None: left out of an incremental answer)."""
        if target.topic is None:
            return partition_error(target.partition, ErrorCode.UNKNOWN_TOPIC_ID)
        return self._read_partition(target, target.topic, bytes_so_far)

    def _read_partition(
        self, target: SessionPartition, topic: str, bytes_so_far: int
    ) -> FetchResponsePartitions | None:
        index = target.partition
        if self.follower_refused:
            return partition_error(index, ErrorCode.TOPIC_AUTHORIZATION_FAILED)
        # A follower's session partition where nothing moved since its last read found nothing
        # new is not read again (``fetch_sessions.QuietMark``).
        in_session = self.replicas if self.incremental and self.follower_id >= 0 else None
        if in_session is not None and still_quiet(in_session, (topic, index), self.follower_id, target):
            return None
        found = find_partition(
            self.ctx,
            topic,
            index,
            target.current_leader_epoch,
            cluster_trusted=self.follower_id >= 0,
            any_replica=self.any_replica,
        )
        if isinstance(found, ErrorCode):
            refused = partition_error(index, found)
            if self.replicas is not None and self.ctx.api_version >= FIRST_LEADER_HINT_VERSION:
                hint = leader_hint(self.replicas, (topic, index), found)
                if hint is not None:
                    refused["current_leader"] = hint
            return refused
        partition_log, _info = found
        key = (topic, index)
        elsewhere = self._preferred_elsewhere(key, target.fetch_offset, partition_log)
        if elsewhere is not None:
            return {
                **partition_error(
                    index, ErrorCode.NONE, partition_log.high_watermark, partition_log.log_start_offset
                ),
                "last_stable_offset": partition_log.last_stable_offset,
                "preferred_read_replica": elsewhere,
            }
        diverging = None
        if self.follower_id >= 0 and self.replicas is not None:
            position = FetchPosition(
                target.fetch_offset, target.current_leader_epoch, target.last_fetched_epoch
            )
            diverging = follower_fetched(self.replicas, key, self.follower_id, position, partition_log)
        read = read_partition(
            partition_log,
            key,
            target.fetch_offset,
            min(target.max_bytes, self.max_bytes - bytes_so_far),
            bytes_so_far == 0,
            read_committed=self.read_committed,
            follower=self.follower_id,
            replicas=self.replicas,
            diverging=diverging,
        )
        if isinstance(read, ReadRefused):
            return partition_error(index, *read)
        told = target.was_told(read.high_watermark, read.log_start)
        if self.incremental and not read.records and read.diverging is None and told:
            if in_session is not None:
                mark_quiet(in_session, key, self.follower_id, partition_log, target)
            return None
        target.quiet = None
        answer: FetchResponsePartitions = {
            "partition_index": index,
            "error_code": ErrorCode.NONE,
            "high_watermark": read.high_watermark,
            "last_stable_offset": read.last_stable,
            "log_start_offset": read.log_start,
            "aborted_transactions": (
                [{"producer_id": pid, "first_offset": first} for pid, first in read.aborted]
                if self.read_committed
                else None
            ),
            "preferred_read_replica": -1,
            "records": read.records,
        }
        if read.diverging is not None:
            answer["diverging_epoch"] = read.diverging
        return answer

    def _preferred_elsewhere(self, key: tuple[str, int], fetch_offset: int, log: PartitionLog) -> int | None:
        """The follower a consumer in another rack should read ``key`` from (its answer then
        carries no records, as Kafka's), or None to read here."""
        replicas = self.replicas
        state = replicas.leader(key) if replicas is not None and self.client_rack else None
        if replicas is None or state is None:
            return None
        chosen = preferred_read_replica(
            state,
            self.client_rack,
            fetch_offset,
            log.log_end_offset,
            self.ctx.broker.clock(),
            replicas.max_lag_ms,
            lambda node: rack_of(self.ctx.broker, node),
        )
        return None if chosen == state.node_id else chosen


def still_stands(
    target: SessionPartition, last: FetchResponsePartitions | None, woken: Collection[tuple[str, int]]
) -> bool:
    """Whether a partition's last read still answers a fetch after a wake-up: nothing woke it,
    and it located no records (a located slice is valid only until the log next changes
    segments, so it is located again)."""
    if (target.topic, target.partition) in woken:
        return False
    return last is None or not isinstance(last["records"], FileSlice)


def topic_responses(
    answers: list[Answer], by_id: bool, sendable: bool = True
) -> list[FetchResponseResponses]:
    """The response's topics: consecutive partitions of one topic share an entry (as Kafka
    builds it; a session's order may name a topic again further on). Located slices become
    their bytes (the first INLINE_RESPONSE_BYTES) or file regions that own their descriptors
    (unless not ``sendable``: only measured), so this must run right after the last read with
    no await in between: a slice's descriptor is only valid until the log next changes
    segments, a region's stays valid until sent."""
    topics: list[FetchResponseResponses] = []
    previous: object = None
    inline = INLINE_RESPONSE_BYTES
    for target, response, _size in answers:
        located = response["records"]
        if sendable and isinstance(located, FileSlice):
            if located.length <= inline:  # small: one read, and the response goes in one send
                response["records"] = located.read()
                inline -= located.length
            else:
                response["records"] = FileRegion(located.fd, located.position, located.length)
        topic_key = target.topic_id if by_id else target.topic
        if not topics or topic_key != previous:
            entry: FetchResponseResponses = {"partitions": []}
            if by_id:
                entry["topic_id"] = target.topic_id
            else:
                entry["topic"] = target.topic or ""
            topics.append(entry)
            previous = topic_key
        topics[-1]["partitions"].append(response)
    return topics


def follower_id(request: FetchRequest) -> int:
    """The fetching replica's node id (before v15 ``replica_id``, from v15 in ``replica_state``);
    negative for a consumer."""
    replica_state = request.get("replica_state")
    return max(request.get("replica_id", -1), replica_state.get("replica_id", -1) if replica_state else -1)


def is_follower(request: FetchRequest) -> bool:
    """A replica's fetch: Kafka's privileged sessions, exempt from client quotas."""
    return follower_id(request) >= 0


async def handle_fetch(ctx: RequestContext, request: FetchRequest) -> FetchResponse:
    started, waited = perf_counter(), 0.0  # handling time for request_percentage, less waits
    by_id = ctx.api_version >= FIRST_TOPIC_ID_VERSION
    sessions = ctx.broker.fetch_sessions
    context = sessions.begin(
        request["session_id"],
        request["session_epoch"],
        by_id,
        requested_partitions(ctx, request),
        forgotten_partitions(ctx, request),
    )
    if context.error != ErrorCode.NONE:
        return refused(context.error, INVALID_SESSION_ID)
    if by_id and context.session is not None:
        refresh_topic_names(ctx, context.targets)
    plan = FetchPlan(ctx, request, context.targets, context.session is not None)
    deadline = trio.current_time() + max(0, request["max_wait_ms"]) / 1000
    min_bytes = request["min_bytes"]
    woken: set[tuple[str, int]] | None = None
    while True:
        answers, total, errored = plan.read(woken)
        remaining = deadline - trio.current_time()
        if total >= min_bytes or errored or remaining <= 0:
            break
        waited_from = perf_counter()
        woken = await ctx.broker.appends.wait_any(plan.keys(), remaining, plan.follower_id >= 0)
        waited += perf_counter() - waited_from
        if not woken:
            break  # nothing was appended: the last read stands
    throttle = fetch_throttle(ctx, request, answers, by_id, perf_counter() - started - waited)
    if throttle:
        # Kafka answers a throttled Fetch with no data (the next one reads it again); an
        # incremental session keeps its id, a full fetch opens none.
        ctx.throttle_ms = throttle
        return refused(ErrorCode.NONE, context.session.id if context.session else INVALID_SESSION_ID)
    error, session_id, answers = sessions.finish(context, is_follower(request), answers)
    if error != ErrorCode.NONE:
        return refused(error, session_id)
    response: FetchResponse = {
        "throttle_time_ms": 0,
        "error_code": ErrorCode.NONE,
        "session_id": session_id,
        "responses": topic_responses(answers, by_id),
    }
    partitions = (p for t in response["responses"] for p in t["partitions"])
    endpoints = node_endpoints(ctx, partitions, FIRST_LEADER_HINT_VERSION)
    if endpoints:
        response["node_endpoints"] = endpoints
    return response


class _Measured:
    """Stands for a partition's records where only their length matters."""

    __slots__ = ("length",)

    def __init__(self, length: int) -> None:
        self.length = length

    def __len__(self) -> int:
        return self.length


def response_size(ctx: RequestContext, answers: list[Answer], by_id: bool) -> int:
    """The response's size as Kafka's ``FetchResponse.sizeOf`` counts it: 4 + the body."""
    measured: list[Answer] = [
        (target, response | {"records": _Measured(size)}, size) for target, response, size in answers
    ]
    body: FetchResponse = {
        "throttle_time_ms": 0,
        "error_code": 0,
        "session_id": 0,
        "responses": topic_responses(measured, by_id, sendable=False),
    }
    return 4 + sum(len(part) for part in encode_response_parts(ApiKey.FETCH, ctx.api_version, body))


def fetch_throttle(
    ctx: RequestContext, request: FetchRequest, answers: list[Answer], by_id: bool, handling_seconds: float
) -> int:
    """Count the fetch against the client's request_percentage and consumer_byte_rate, as
    Kafka's fetch response callback does; the throttle time (0 while no quota is exceeded).

    A throttled Fetch (by either quota) sends nothing, so the bytes counted are taken back, as
    Kafka's ``unrecordQuotaSensor``.  A follower's fetch is exempt.
    """
    quotas = ctx.broker.quotas
    if not quotas.enabled or is_follower(request):
        return 0
    principal, client = ctx.principal, ctx.header.client_id or ""
    throttle = quotas.request_time(principal, client, handling_seconds)
    if CONSUMER_BYTE_RATE in quotas.enabled:
        response_bytes = response_size(ctx, answers, by_id)
        throttle = max(throttle, quotas.fetch(principal, client, response_bytes))
        if throttle:
            quotas.unrecord(CONSUMER_BYTE_RATE, principal, client, response_bytes)
    return throttle


def refused(error: ErrorCode, session_id: int) -> FetchResponse:
    """A session error answers the whole Fetch, with no partitions."""
    return {"throttle_time_ms": 0, "error_code": error, "session_id": session_id, "responses": []}


HANDLERS = {ApiKey.FETCH: Served(handle_fetch)}

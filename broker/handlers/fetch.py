"""Fetch: hand out whole record batches from partition logs, long-polling for new data.

Batches go out exactly as they sit in the segment files — never decoded, never copied into
Python: the response carries file regions that the connection sends with ``os.sendfile``.
Size limits
follow KIP-74: the first non-empty partition of a response always gets at least one whole
batch, even one larger than ``max_bytes``/``partition_max_bytes``; later partitions only
get what fits.  A response with less than ``min_bytes`` waits (up to ``max_wait_ms``) for
an append to any of its partitions.  Fetch sessions (KIP-227) are declined by answering
``session_id`` 0, which every client handles by sending full fetches; a full fetch is served
whatever session id it names (Go clients send -1 with epoch -1).  From v13 topics are
named by their (persistent) topic ids; an unknown id is UNKNOWN_TOPIC_ID.

Isolation (KIP-98): every partition reports its last stable offset.  A read_committed fetch
(``isolation_level`` 1) gets only the whole batches below it, and the aborted transactions
overlapping them, for the client to drop; data past the last stable offset does not count
towards ``min_bytes``, so a long poll keeps waiting until a marker decides it.
"""

from __future__ import annotations

from typing import Any

import trio

from broker.api_support import Served
from broker.context import RequestContext
from broker.error_mapping import error_code_of
from broker.file_region import FileRegion
from broker.partition_requests import find_partition
from log.errors import LogError
from log.partition_log import FileSlice
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode

FIRST_TOPIC_ID_VERSION = 13
READ_COMMITTED = 1


def partition_error(
    index: int, code: ErrorCode, high_watermark: int = -1, log_start: int = -1
) -> dict[str, Any]:
    return {
        "partition_index": index,
        "error_code": code,
        "high_watermark": high_watermark,
        "last_stable_offset": high_watermark,
        "log_start_offset": log_start,
        "aborted_transactions": None,
        "records": b"",
    }


class FetchPlan:
    """One Fetch request's partitions and limits, re-read after each wake-up."""

    def __init__(self, ctx: RequestContext, request: dict[str, Any]) -> None:
        self.ctx = ctx
        self.topics = request["topics"]
        self.by_id = ctx.api_version >= FIRST_TOPIC_ID_VERSION
        # Fetch v13+ names topics by id; an id this broker never issued has no name (None).
        self.names = [
            (info.name if (info := ctx.broker.topics.by_id(t["topic_id"])) else None)
            if self.by_id
            else t["topic"]
            for t in self.topics
        ]
        broker_cap = ctx.broker.config.get_int("fetch.max.bytes")
        self.max_bytes = max(0, min(request.get("max_bytes", broker_cap), broker_cap))
        self.read_committed = request.get("isolation_level", 0) == READ_COMMITTED

    def keys(self) -> list[tuple[str, int]]:
        return [
            (name, p["partition"])
            for name, t in zip(self.names, self.topics, strict=True)
            if name is not None
            for p in t["partitions"]
        ]

    def read(self) -> tuple[list[dict[str, Any]], int, bool]:
        """Locate every partition's data once: (topic responses, bytes of records, any error).

        ``records`` holds the located ``FileSlice`` (or b"") until :func:`attach_regions`
        turns it into a sendable region; nothing is read from disk here.
        """
        responses = []
        total = 0
        errored = False
        for name, topic in zip(self.names, self.topics, strict=True):
            partitions = []
            for wanted in topic["partitions"]:
                if name is None:
                    result = partition_error(wanted["partition"], ErrorCode.UNKNOWN_TOPIC_ID)
                else:
                    result = self._read_partition(name, wanted, total)
                located = result["records"]
                total += located.length if isinstance(located, FileSlice) else 0
                errored = errored or result["error_code"] != ErrorCode.NONE
                partitions.append(result)
            key = {"topic_id": topic["topic_id"]} if self.by_id else {"topic": name}
            responses.append(key | {"partitions": partitions})
        return responses, total, errored

    def _read_partition(self, topic: str, wanted: dict[str, Any], bytes_so_far: int) -> dict[str, Any]:
        index = wanted["partition"]
        found = find_partition(self.ctx, topic, index, wanted.get("current_leader_epoch", -1))
        if isinstance(found, ErrorCode):
            return partition_error(index, found)
        partition_log, _info = found
        high_watermark = partition_log.high_watermark
        last_stable = partition_log.last_stable_offset
        log_start = partition_log.log_start_offset
        offset = wanted["fetch_offset"]
        if offset < log_start or offset > partition_log.log_end_offset:
            return partition_error(index, ErrorCode.OFFSET_OUT_OF_RANGE, high_watermark, log_start)
        budget = min(wanted["partition_max_bytes"], self.max_bytes - bytes_so_far)
        records: bytes | FileSlice = b""
        aborted: list[tuple[int, int]] = []
        readable_end = last_stable if self.read_committed else high_watermark
        if offset < readable_end and (budget > 0 or bytes_so_far == 0):
            try:
                if self.read_committed:
                    slices, found_aborted = partition_log.read_committed(offset, max(budget, 1))
                else:
                    slices, found_aborted = partition_log.read_slices(offset, max(budget, 1)), []
            except LogError as exc:
                return partition_error(index, error_code_of(exc), high_watermark, log_start)
            # One read stays within one segment (one slice); the client fetches the rest next.
            if slices and not (bytes_so_far > 0 and slices[0].length > budget):
                records = slices[0]  # KIP-74: only the first non-empty partition may exceed limits
                aborted = found_aborted
        return {
            "partition_index": index,
            "error_code": ErrorCode.NONE,
            "high_watermark": high_watermark,
            "last_stable_offset": last_stable,
            "log_start_offset": log_start,
            "aborted_transactions": (
                [{"producer_id": pid, "first_offset": first} for pid, first in aborted]
                if self.read_committed
                else None
            ),
            "preferred_read_replica": -1,
            "records": records,
        }


def attach_regions(responses: list[dict[str, Any]]) -> None:
    """Replace located slices by file regions that own their descriptors.

    Must run right after the last read, with no await in between: a slice's descriptor is
    only valid until the log next changes segments, a region's stays valid until sent.
    """
    for topic in responses:
        for partition in topic["partitions"]:
            located = partition["records"]
            if isinstance(located, FileSlice):
                partition["records"] = FileRegion(located.fd, located.position, located.length)


FULL_FETCH_EPOCHS = (0, -1)
"""KIP-227: epoch 0 asks for a new session, -1 for none; both are full fetches whatever the
session id (Kafka closes the named session on -1). Only a later epoch continues a session."""


async def handle_fetch(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    if request["session_epoch"] not in FULL_FETCH_EPOCHS:
        # An incremental fetch in a session: this broker never creates one.
        return {"error_code": ErrorCode.FETCH_SESSION_ID_NOT_FOUND, "session_id": 0, "responses": []}
    plan = FetchPlan(ctx, request)
    deadline = trio.current_time() + max(0, request["max_wait_ms"]) / 1000
    min_bytes = request["min_bytes"]
    while True:
        responses, total, errored = plan.read()
        remaining = deadline - trio.current_time()
        if total >= min_bytes or errored or remaining <= 0:
            break
        if not await ctx.broker.appends.wait_any(plan.keys(), remaining):
            break  # nothing was appended: the last read stands
    attach_regions(responses)
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "session_id": 0, "responses": responses}


HANDLERS = {ApiKey.FETCH: Served(handle_fetch)}

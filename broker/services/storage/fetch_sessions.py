"""Fetch sessions (KIP-227): the broker remembers what a consumer fetches, so it need not re-send it.

A full fetch with epoch 0 asks for a session; if the cache has room the answer carries a new
session id, and the client then sends only what changed (partitions added or with a new fetch
offset, and ``forgotten_topics_data``) with epochs 1, 2, ...  An incremental answer leaves out
every partition with nothing new to say: no records, the same high watermark and log start
offset as last told, and no error.  Epoch -1 closes a session; a full fetch closes whatever
session it names.  The errors are Kafka's: an unknown id is FETCH_SESSION_ID_NOT_FOUND, a wrong
epoch INVALID_FETCH_SESSION_EPOCH, and a session opened with topic names (Fetch < 13) used with
topic ids, or the reverse, FETCH_SESSION_TOPIC_ID_ERROR.

The cache follows Kafka's ``FetchSessionCache``: at most ``max.incremental.fetch.session.cache.slots``
sessions; when full, a new session takes the place of one unused for two minutes, else of the
least valuable evictable one (fewer partitions, non-follower before follower) if it is worth more
itself.  A session only becomes evictable once it is two minutes old, and a follower's (a
privileged) one only evicts other followers' that are.  Every session is client-caused memory,
so beyond Kafka the partitions of all sessions together are capped
(``max.incremental.fetch.session.cache.partitions``): a session that would pass the cap is
declined (the client keeps sending full fetches) or, when an incremental fetch grows it past the
cap, closed as Kafka closes a session left empty.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

from log.clock import Clock, wall_clock_ms
from wire.error_codes import ErrorCode
from wire.fetch_session_epochs import FINAL_EPOCH, INITIAL_EPOCH, INVALID_SESSION_ID, next_epoch
from wire.primitives import INT32_MAX

if TYPE_CHECKING:
    from broker.services.replication.leader_state import FollowerProgress, LeaderState
    from log.partition_log import PartitionLog
    from wire.messages import FetchResponsePartitions

EVICTION_MS = 120_000
"""Kafka's fetch session eviction time (hard-coded in ``BrokerServer``): a session unused this
long may be replaced at once; one younger than this cannot be evicted."""

SessionKey = tuple[Any, int]
"""A partition in a session: (topic id, or name before Fetch 13; partition index)."""
Answer = tuple["SessionPartition", "FetchResponsePartitions", int]
"""A partition read for a Fetch: what was asked, its response, and how many record bytes it carries."""


class QuietMark(NamedTuple):
    """A follower's session partition as the leader saw it when a fetch found nothing new there
    (the follower at the log end, told the high watermark and log start, no divergence): while
    all of it stays the same, so does the answer, and the partition need not be read again.

    Why: a follower's fetch session holds every partition it follows from this leader (dozens:
    ``__consumer_offsets`` alone has 50) and each fetch reads all of them, where one moved. Kafka
    reads them all too, in Java; here a full read is most of what a quiet partition costs."""

    log: PartitionLog
    state: LeaderState  # this leadership: a new epoch or a lost lead is another object, or none
    progress: FollowerProgress  # the follower's, while it stays a replica of this leadership
    offsets: tuple[int, int, int]  # the log's end, high watermark and start


@dataclass(slots=True, eq=False)
class SessionPartition:
    """One partition a fetch reads: what the client asked, and in a session what it was last told."""

    topic: str | None  # None: a topic id this broker does not know
    topic_id: bytes
    partition: int
    fetch_offset: int
    max_bytes: int
    current_leader_epoch: int
    last_fetched_epoch: int = -1  # a follower's newest leader epoch (Fetch v12+), for divergence
    high_watermark: int = -1  # -1: never told, or told an error (so the next answer includes it)
    log_start_offset: int = -1
    quiet: QuietMark | None = None  # a follower's last read here found nothing (``partition_reads``)

    def key(self, uses_topic_ids: bool) -> SessionKey:
        return (self.topic_id if uses_topic_ids else self.topic, self.partition)

    def was_told(self, high_watermark: int, log_start_offset: int) -> bool:
        """Whether the client's last answer for this partition carried these offsets."""
        return self.high_watermark == high_watermark and self.log_start_offset == log_start_offset

    def must_respond(self, response: FetchResponsePartitions, records: int) -> bool:
        """Whether an incremental answer includes this partition (Kafka's ``CachedPartition``
        rules), remembering what it now tells: records, a changed high watermark or log start
        offset, an error (after which the high watermark is forgotten, so the partition is
        included again once the error clears), or a follower's diverging epoch, which it must
        truncate by."""
        error = response["error_code"] != ErrorCode.NONE
        news = (
            records > 0
            or error
            or "diverging_epoch" in response
            or not self.was_told(response["high_watermark"], response["log_start_offset"])
        )
        self.high_watermark = -1 if error else response["high_watermark"]
        self.log_start_offset = response["log_start_offset"]
        return news


@dataclass(slots=True, eq=False)
class FetchSession:
    """A client's partitions in fetch order; partitions that return records move to the back,
    so over successive fetches every partition gets its turn at the response size limits."""

    id: int
    privileged: bool
    uses_topic_ids: bool
    creation_ms: int
    partitions: dict[SessionKey, SessionPartition]
    epoch: int = 1
    last_used_ms: int = 0
    counted: int = 0  # partitions counted in the cache's total at the last touch
    evictable_by_privileged: bool = False
    evictable_by_all: bool = False

    def update(self, changes: Iterable[SessionPartition], forgotten: Iterable[SessionKey]) -> None:
        """Apply an incremental request: add new partitions, take new fetch positions, forget."""
        for change in changes:
            key = change.key(self.uses_topic_ids)
            cached = self.partitions.get(key)
            if cached is None:
                self.partitions[key] = change
            else:
                cached.fetch_offset = change.fetch_offset
                cached.max_bytes = change.max_bytes
                cached.current_leader_epoch = change.current_leader_epoch
                cached.last_fetched_epoch = change.last_fetched_epoch
                cached.quiet = None  # a position named again: read it again
        for key in forgotten:
            self.partitions.pop(key, None)

    def value(self) -> tuple[bool, int, int]:
        """Kafka's ``EvictableKey`` order: the least valuable session sorts first."""
        return (self.privileged, len(self.partitions), self.id)


@dataclass(slots=True)
class SessionContext:
    """How one Fetch uses the cache: the partitions it reads and what its answer does after.

    ``error`` refuses the fetch; ``create`` asks for a new session over the full fetch's
    partitions; ``session`` is the incremental fetch's session, whose epoch must still be
    ``expected_epoch`` when the answer is made (another fetch may have moved it meanwhile).
    """

    targets: Sequence[SessionPartition] = ()
    error: ErrorCode = ErrorCode.NONE
    create: bool = False
    uses_topic_ids: bool = False
    session: FetchSession | None = None
    expected_epoch: int = 0


@dataclass
class FetchSessionCache:
    """The broker's fetch sessions, least recently used first."""

    max_slots: int
    max_partitions: int
    clock: Clock = wall_clock_ms
    eviction_ms: int = EVICTION_MS
    sessions: dict[int, FetchSession] = field(default_factory=dict)
    partitions: int = 0  # cached partitions of all sessions, as of their last touch

    def begin(
        self,
        session_id: int,
        epoch: int,
        uses_topic_ids: bool,
        requested: Sequence[SessionPartition],
        forgotten: Sequence[SessionKey],
    ) -> SessionContext:
        """Kafka's ``FetchManager.newContext``: how a Fetch naming ``session_id``/``epoch`` goes on."""
        if epoch in (INITIAL_EPOCH, FINAL_EPOCH):
            if session_id != INVALID_SESSION_ID:
                self.remove(session_id)  # a full fetch closes the session it names
            return SessionContext(requested, create=epoch == INITIAL_EPOCH, uses_topic_ids=uses_topic_ids)
        session = self.sessions.get(session_id)
        if session is None:
            return SessionContext(error=ErrorCode.FETCH_SESSION_ID_NOT_FOUND)
        if session.epoch != epoch:
            return SessionContext(error=ErrorCode.INVALID_FETCH_SESSION_EPOCH)
        if session.uses_topic_ids != uses_topic_ids:
            return SessionContext(error=ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR)
        session.update(requested, forgotten)
        grown = self.partitions - session.counted + len(session.partitions)
        if not session.partitions or grown > self.max_partitions:
            # Kafka closes a session left empty and answers sessionless; one grown past the
            # cap goes the same way, and the client starts over with a full fetch.
            self.remove(session_id)
            return SessionContext(requested)
        self.touch(session, self.clock())
        session.epoch = next_epoch(session.epoch)
        return SessionContext(
            list(session.partitions.values()), session=session, expected_epoch=session.epoch
        )

    def finish(
        self, context: SessionContext, privileged: bool, answered: list[Answer]
    ) -> tuple[ErrorCode, int, list[Answer]]:
        """The answer's (error, session id, partitions) once ``answered`` has been read."""
        session = context.session
        if session is None:
            session_id = INVALID_SESSION_ID
            if context.create:
                for target, response, _size in answered:
                    target.must_respond(response, 0)  # remember what this answer tells
                session_id = self.create(privileged, context.uses_topic_ids, context.targets)
            return ErrorCode.NONE, session_id, answered
        if session.epoch != context.expected_epoch:
            return ErrorCode.INVALID_FETCH_SESSION_EPOCH, session.id, []
        kept = []
        for answer in answered:
            target, response, records = answer
            if target.must_respond(response, records):
                kept.append(answer)
                if records:
                    key = target.key(session.uses_topic_ids)
                    session.partitions[key] = session.partitions.pop(key)
        return ErrorCode.NONE, session.id, kept

    def create(self, privileged: bool, uses_topic_ids: bool, targets: Sequence[SessionPartition]) -> int:
        """A new session over ``targets`` if there is room (evicting per Kafka), else 0."""
        now = self.clock()
        size = len(targets)
        if size > self.max_partitions:
            return INVALID_SESSION_ID
        while len(self.sessions) >= self.max_slots or self.partitions + size > self.max_partitions:
            if not self._evict_one(privileged, size, now):
                return INVALID_SESSION_ID
        session_id = self._new_id()
        partitions = {t.key(uses_topic_ids): t for t in targets}
        session = FetchSession(session_id, privileged, uses_topic_ids, now, partitions)
        self.sessions[session_id] = session
        self.touch(session, now)
        return session_id

    def touch(self, session: FetchSession, now: int) -> None:
        """Mark ``session`` used now (to the back of the LRU order) and recount its partitions."""
        self.sessions[session.id] = self.sessions.pop(session.id)
        session.last_used_ms = now
        self.partitions += len(session.partitions) - session.counted
        session.counted = len(session.partitions)
        aged = now - session.creation_ms > self.eviction_ms
        session.evictable_by_privileged = aged or not session.privileged
        session.evictable_by_all = aged

    def remove(self, session_id: int) -> FetchSession | None:
        session = self.sessions.pop(session_id, None)
        if session is not None:
            self.partitions -= session.counted
        return session

    def _evict_one(self, privileged: bool, size: int, now: int) -> bool:
        """Kafka's ``tryEvict``: the least recently used session if stale, else the least
        valuable evictable session if the new one is worth more."""
        oldest = next(iter(self.sessions.values()), None)
        if oldest is None:
            return False
        if now - oldest.last_used_ms > self.eviction_ms:
            victim = oldest
        else:
            candidates = [
                s
                for s in self.sessions.values()
                if (s.evictable_by_privileged if privileged else s.evictable_by_all)
            ]
            if not candidates:
                return False
            victim = min(candidates, key=FetchSession.value)
            if (privileged, size, 0) < victim.value():
                return False
        self.remove(victim.id)
        return True

    def _new_id(self) -> int:
        while True:
            session_id = secrets.randbelow(INT32_MAX - 1) + 1
            if session_id not in self.sessions:
                return session_id

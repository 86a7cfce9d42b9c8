"""A follower's fetcher: one task per leader broker (Kafka's ReplicaFetcherThread).

It holds one plain Kafka connection to the leader's inter-broker listener and loops: first
every partition new to it (or whose leader changed) is truncated to where its log agrees with
the leader's (OffsetForLeaderEpoch, see ``truncation``), then one Fetch for all of them with
``replica_id`` set, in a fetch session (``fetch_session``: it names only the partitions that
moved, and is answered only for those with news), whose batches are appended unchanged
(``append_as_follower``) and whose high watermark, capped at the follower's own log end,
becomes the follower's.

Errors are per partition, as in Kafka: a leader that stopped leading or fences our epoch puts
the partition aside for ``replica.fetch.backoff.ms`` until the cluster layer says who leads
now; ``OFFSET_OUT_OF_RANGE`` below the leader's log start restarts the log there; a lost
connection is reopened after the same back-off.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import trio

from broker.services.replication.fetch_session import SESSION_ERRORS, FollowerSession, Position
from broker.services.replication.peer_connection import PeerConnection
from broker.services.replication.truncation import truncation_point
from log.errors import LogError
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode
from wire.record_batch import BatchInfo, scan_batches
from wire.record_batch_errors import RecordBatchError

if TYPE_CHECKING:
    from broker.services.replication.ports import ClusterPorts
    from broker.services.storage.partitions import PartitionStore
    from log.partition_log import PartitionLog

log = logging.getLogger(__name__)

FETCH_VERSION = 12  # topic names, ``last_fetched_epoch`` and ``diverging_epoch``
OFFSET_FOR_LEADER_EPOCH_VERSION = 4
PartitionKey = tuple[str, int]


@dataclass(frozen=True, slots=True)
class FetcherSettings:
    """Kafka's ``replica.fetch.*`` settings and who this follower is."""

    node_id: int
    wait_max_ms: int
    min_bytes: int
    max_bytes: int  # per partition
    response_max_bytes: int
    backoff_s: float
    socket_timeout_s: float

    @property
    def max_response_frame(self) -> int:
        """The largest response accepted: the requested bytes plus room for the envelope and
        for KIP-74's one whole batch beyond the limits."""
        return self.response_max_bytes + self.max_bytes + (1 << 20)


class FollowerThrottle(Protocol):
    """The follower side of the reassignment throttles (``broker.services.replication.throttle``)."""

    def held_back(self, keys: Iterable[PartitionKey]) -> Collection[PartitionKey]:
        """Of ``keys``, those to leave out of the next fetch (throttled, and the rate is over
        its bound)."""
        ...

    def fetched(self, key: PartitionKey, size: int) -> None:
        """``size`` bytes of ``key`` arrived (counted if ``key`` is throttled)."""
        ...


@dataclass(slots=True)
class FollowedPartition:
    """One partition this fetcher replicates and where it stands."""

    leader_epoch: int
    truncated: bool = False  # its log agrees with the leader's, fetching may start
    resume_at: float = 0.0  # trio time before which it is left out (back-off after an error)
    _at: tuple[int, int, int, int] = (-1, -1, -1, -1)
    _position: Position = field(default_factory=dict)

    def position_in(self, partition_log: PartitionLog, index: int, max_bytes: int) -> Position:
        """This partition's entry of the next Fetch, built again only when the log moved.

        Why: every fetch passes every followed partition to the session, which names only the
        entries that are not the very ones it sent last (``FollowerSession.request``); most
        partitions are idle, and a tuple comparison is cheaper than a new dict and a dict
        comparison (2% of an in-process cluster's CPU per record with 18 idle partitions)."""
        at = (
            partition_log.log_end_offset,
            partition_log.leader_epochs.latest_epoch,
            partition_log.log_start_offset,
            self.leader_epoch,
        )
        if at != self._at:
            self._at = at
            self._position = {
                "partition": index,
                "current_leader_epoch": self.leader_epoch,
                "fetch_offset": at[0],
                "last_fetched_epoch": at[1],
                "log_start_offset": at[2],
                "partition_max_bytes": max_bytes,
            }
        return self._position


def error_name(code: int) -> str:
    """Kafka's name of an error code from a peer (any number may arrive)."""
    try:
        return ErrorCode(code).name
    except ValueError:
        return f"error code {code}"


def by_topic(entries: Iterable[tuple[PartitionKey, Any]]) -> list[dict[str, Any]]:
    """Fetch request entries grouped by topic, as the request lists them."""
    topics: dict[str, list[Any]] = {}
    for (topic, _index), entry in entries:
        topics.setdefault(topic, []).append(entry)
    return [{"topic": topic, "partitions": entries} for topic, entries in topics.items()]


def straddling_start(partition_log: PartitionLog, first: BatchInfo) -> None:
    """An empty log whose start falls inside the leader's first batch (the leader's log start
    moved into a batch, by DeleteRecords) restarts at that batch's base offset so the batch
    can be appended whole; the leader's log start then comes with the answer (Kafka's
    UnexpectedAppendOffsetException case in ``appendRecordsToFollowerOrFutureReplica``)."""
    end = partition_log.log_end_offset
    if (
        end == partition_log.log_start_offset
        and first.base_offset < end <= first.base_offset + first.last_offset_delta
    ):
        partition_log.truncate_fully_and_start_at(first.base_offset)


class LeaderFetcher:
    """Replicates every partition led by one broker."""

    def __init__(
        self,
        leader_id: int,
        settings: FetcherSettings,
        partitions: PartitionStore,
        ports: ClusterPorts,
        throttle: FollowerThrottle | None,
        readable: Callable[[PartitionKey], None],
    ) -> None:
        self.leader_id = leader_id
        # Wakes consumers' fetches parked on this replica (KIP-392: followers serve consumers)
        # once the high watermark lets them read more, as Kafka completes its delayed fetches.
        self._readable = readable
        self._throttle = throttle
        self._settings = settings
        self._logs = partitions
        self._ports = ports
        self.followed: dict[PartitionKey, FollowedPartition] = {}
        self._changed = trio.Event()

    def add(self, key: PartitionKey, leader_epoch: int) -> None:
        """Follow ``key`` at ``leader_epoch``; it is truncated against the leader first."""
        self.followed[key] = FollowedPartition(leader_epoch)
        self._wake()

    def remove(self, key: PartitionKey) -> None:
        self.followed.pop(key, None)

    def _wake(self) -> None:
        self._changed.set()
        self._changed = trio.Event()

    async def run(self) -> None:
        """Until cancelled: connect to the leader while there is something to follow."""
        while True:
            if not self.followed:
                await self._changed.wait()
                continue
            endpoint = self._ports.endpoint_of(self.leader_id)
            if endpoint is None:
                log.info("no address known for leader %d; retrying", self.leader_id)
                await trio.sleep(self._settings.backoff_s)
                continue
            try:
                connection = await PeerConnection.open(
                    *endpoint,
                    f"replica-fetcher-{self._settings.node_id}",
                    self._settings.max_response_frame,
                    self._settings.socket_timeout_s,
                )
            except (OSError, trio.TooSlowError) as exc:
                log.warning("cannot reach leader %d at %s:%d: %s", self.leader_id, *endpoint, exc)
                await trio.sleep(self._settings.backoff_s)
                continue
            try:
                await self._replicate(connection)
            except (OSError, ConnectionError, trio.BrokenResourceError, trio.ClosedResourceError) as exc:
                log.warning("lost leader %d: %s", self.leader_id, exc)
                await trio.sleep(self._settings.backoff_s)
            finally:
                await connection.aclose()

    async def _replicate(self, connection: PeerConnection) -> None:
        """Truncate and fetch over ``connection`` (in a fetch session of its own) until nothing
        is left to follow."""
        session = FollowerSession()
        while self.followed:
            now = trio.current_time()
            ready = {key: f for key, f in self.followed.items() if f.resume_at <= now}
            if not ready:
                wake_at = min(f.resume_at for f in self.followed.values())
                with trio.move_on_at(wake_at):
                    await self._changed.wait()
                continue
            untruncated = {key: f for key, f in ready.items() if not f.truncated}
            if untruncated:
                await self._truncation_round(connection, untruncated)
                continue
            await self._fetch(connection, session, ready)

    # --- truncation ----------------------------------------------------------------------

    async def _truncation_round(
        self, connection: PeerConnection, partitions: dict[PartitionKey, FollowedPartition]
    ) -> None:
        """One OffsetForLeaderEpoch round for ``partitions``; each is cut where it agrees."""
        asked: dict[PartitionKey, tuple[FollowedPartition, PartitionLog, int]] = {}
        for key, followed in partitions.items():
            partition_log = self._logs.get(*key)
            if partition_log is None:
                self.remove(key)
                continue
            latest = partition_log.leader_epochs.latest_epoch
            if latest < 0:  # nothing written under any epoch: nothing can diverge
                followed.truncated = True
                continue
            asked[key] = (followed, partition_log, latest)
        if not asked:
            return
        body = {
            "replica_id": self._settings.node_id,
            "topics": by_topic(
                (
                    key,
                    {
                        "partition": key[1],
                        "current_leader_epoch": followed.leader_epoch,
                        "leader_epoch": latest,
                    },
                )
                for key, (followed, _log, latest) in asked.items()
            ),
        }
        response = await connection.request(
            ApiKey.OFFSET_FOR_LEADER_EPOCH, OFFSET_FOR_LEADER_EPOCH_VERSION, body
        )
        for topic in response["topics"]:
            for answer in topic["partitions"]:
                key = (topic["topic"], answer["partition"])
                entry = asked.get(key)
                if entry is None or self.followed.get(key) is not entry[0]:
                    continue  # not asked, or re-assigned while the request was out
                followed, partition_log, _latest = entry
                if answer["error_code"] != ErrorCode.NONE:
                    self._back_off(key, followed, error_name(answer["error_code"]))
                    continue
                try:
                    self._truncate(key, followed, partition_log, answer["leader_epoch"], answer["end_offset"])
                except LogError as exc:  # the log went offline and said why
                    self._back_off(key, followed, f"cannot truncate: {exc}")

    def _truncate(
        self,
        key: PartitionKey,
        followed: FollowedPartition,
        partition_log: PartitionLog,
        leader_epoch: int,
        leader_end_offset: int,
    ) -> None:
        """Cut the log where it stops agreeing with the leader's ``leader_epoch`` ending at
        ``leader_end_offset``; fetching starts once no further round is needed."""
        cut = truncation_point(
            leader_epoch,
            leader_end_offset,
            partition_log.leader_epochs,
            partition_log.log_end_offset,
            partition_log.high_watermark,
        )
        if cut.offset < partition_log.log_end_offset:
            log.info("truncating %s-%d from %d to %d", *key, partition_log.log_end_offset, cut.offset)
            partition_log.truncate_to(cut.offset)
        followed.truncated = cut.complete

    # --- fetching ------------------------------------------------------------------------

    async def _fetch(
        self,
        connection: PeerConnection,
        session: FollowerSession,
        partitions: dict[PartitionKey, FollowedPartition],
    ) -> None:
        """One Fetch for ``partitions`` in ``session``; append what came back."""
        settings = self._settings
        wanted: dict[PartitionKey, Position] = {}
        fetched: dict[PartitionKey, FollowedPartition] = {}
        held_back = self._throttle.held_back(partitions) if self._throttle is not None else ()
        for key, followed in partitions.items():
            partition_log = self._logs.get(*key)
            if partition_log is None:
                self.remove(key)
                continue
            if key in held_back:
                continue  # a throttled reassignment copy over its rate: left out this round
            if not partition_log.is_online:
                # A disk error took the log offline: nothing fetched could be appended, and a
                # fetch at its log end would tell the leader this replica is in sync (left out,
                # it leaves the fetch session too) until the log is back.
                continue
            fetched[key] = followed
            wanted[key] = followed.position_in(partition_log, key[1], settings.max_bytes)
        if not wanted:
            # Everything ready was held back by the throttle, is offline or went away: let the rate fall,
            # as Kafka's fetcher backs off when it has nothing to fetch.
            await trio.sleep(settings.backoff_s)
            return
        named, forgotten = session.request(wanted)
        body = {
            "replica_id": settings.node_id,
            "max_wait_ms": settings.wait_max_ms,
            "min_bytes": settings.min_bytes,
            "max_bytes": settings.response_max_bytes,
            "isolation_level": 0,
            "session_id": session.id,
            "session_epoch": session.epoch,
            "topics": by_topic(named.items()),
            "forgotten_topics_data": by_topic((key, key[1]) for key in forgotten),
            "rack_id": "",
        }
        response = await connection.request(ApiKey.FETCH, FETCH_VERSION, body)
        error = response["error_code"]
        if error in SESSION_ERRORS:
            session.reset()  # the leader lost or moved on from the session: fetch in full again
            return
        if error != ErrorCode.NONE:
            raise ConnectionError(f"leader {self.leader_id} refused the fetch: {error_name(error)}")
        session.answered(response["session_id"], wanted)
        for topic in response["responses"]:
            for answer in topic["partitions"]:
                key = (topic["topic"], answer["partition_index"])
                followed = fetched.get(key)
                if followed is not None and self.followed.get(key) is followed:
                    if self._throttle is not None:
                        self._throttle.fetched(key, len(answer["records"] or b""))
                    self._apply(key, followed, answer)

    def _apply(self, key: PartitionKey, followed: FollowedPartition, answer: dict[str, Any]) -> None:
        """Append one partition's answer, or act on its error; a batch that cannot be appended
        or a log that fails puts the partition aside for a back-off."""
        partition_log = self._logs.get(*key)
        if partition_log is None:
            self.remove(key)
            return
        try:
            self._apply_to(key, followed, partition_log, answer)
        except (RecordBatchError, LogError) as exc:
            self._back_off(key, followed, f"cannot apply what the leader sent: {exc}")

    def _apply_to(
        self,
        key: PartitionKey,
        followed: FollowedPartition,
        partition_log: PartitionLog,
        answer: dict[str, Any],
    ) -> None:
        error = answer["error_code"]
        if error == ErrorCode.OFFSET_OUT_OF_RANGE:
            self._out_of_range(key, followed, partition_log, answer["log_start_offset"])
            return
        if error != ErrorCode.NONE:
            self._back_off(key, followed, error_name(error))
            return
        diverging = answer.get("diverging_epoch") or {}
        if diverging.get("epoch", -1) >= 0:
            self._truncate(key, followed, partition_log, diverging["epoch"], diverging["end_offset"])
            return
        records = answer["records"]
        if records:
            view = memoryview(records)
            batches = scan_batches(view, from_client=False)
            straddling_start(partition_log, batches[0])
            partition_log.append_as_follower(view, batches)
        leader_log_start = answer["log_start_offset"]
        if partition_log.log_start_offset < leader_log_start <= partition_log.log_end_offset:
            partition_log.delete_records(leader_log_start)  # retention or DeleteRecords on the leader
        readable_before = partition_log.high_watermark
        partition_log.set_replicated_high_watermark(
            min(answer["high_watermark"], partition_log.log_end_offset)
        )
        if partition_log.high_watermark > readable_before:
            self._readable(key)

    def _out_of_range(
        self,
        key: PartitionKey,
        followed: FollowedPartition,
        partition_log: PartitionLog,
        leader_log_start: int,
    ) -> None:
        """Kafka's ``handleOutOfRangeError``: behind the leader's log start, start over there;
        otherwise the logs disagree about the end, so truncate against the leader again."""
        if leader_log_start >= 0 and partition_log.log_end_offset < leader_log_start:
            log.info("%s-%d restarts at the leader's log start %d", *key, leader_log_start)
            partition_log.truncate_fully_and_start_at(leader_log_start)
        else:
            followed.truncated = False

    def _back_off(self, key: PartitionKey, followed: FollowedPartition, reason: str) -> None:
        """Leave ``key`` out for ``replica.fetch.backoff.ms``: the leader moved or fenced our
        epoch (new metadata, ``become_follower``, will say where to fetch it now), or sent
        something that could not be appended."""
        log.warning("%s-%d from leader %d: %s; retrying after a back-off", *key, self.leader_id, reason)
        followed.resume_at = trio.current_time() + self._settings.backoff_s

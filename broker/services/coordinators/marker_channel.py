"""Transaction markers: written here into partitions this broker leads, sent to the leaders of
the others with WriteTxnMarkers (Kafka's ``TransactionMarkerChannelManager``).

The transaction coordinator is sans-IO: it asks :meth:`MarkerChannel.write` for the markers of a
decided transaction and hears back which partitions are not marked yet; it asks again later
(and :meth:`MarkerChannel.write` wakes it as soon as the last one is written).  Meanwhile this
module delivers them:

- into a partition this broker leads, by appending the marker and waiting until the in-sync
  replicas have it (Kafka's leaders append markers with acks=all);
- into any other partition, by a WriteTxnMarkers request to its current leader over one
  inter-broker connection per broker (``broker.services.cluster.peer_requests``), one request in
  flight per broker, retried with back-off on NOT_LEADER_OR_FOLLOWER or a lost connection until
  the leader (wherever it is by then) has written it.

A partition whose topic is gone counts as marked, as in Kafka (nothing is left to read there).
Everything is bounded: the transactions awaiting markers, the markers per request, the
connections (one per broker) and the requests in flight (one per broker).
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable, Collection
from typing import TYPE_CHECKING, NamedTuple

import trio

from broker.services.coordinators.group_timers import announce_append
from broker.services.replication.acks import AckWait, ack_wait
from broker.services.storage import partition_writes
from coordinator.log_storage import COORDINATOR_EPOCH
from coordinator.offsets_topic import OFFSETS_TOPIC
from coordinator.txn_metadata import TopicPartition
from log.errors import LogError
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode

if TYPE_CHECKING:
    from broker.services.cluster.peer_requests import PeerRequests
    from broker.services.coordinators.host import CoordinatorHost, MarkedNode

log = logging.getLogger(__name__)

MAX_PENDING_TRANSACTIONS = 10_000  # decided transactions whose markers are under way
MAX_MARKERS_PER_REQUEST = 500  # partitions in one WriteTxnMarkers request
REQUEST_TIMEOUT_S = 30.0  # Kafka's request.timeout.ms for the channel
RETRY_BACKOFF_S = 0.1  # Kafka's retry back-off before a marker goes out again
RECONNECT_BACKOFF_S = 1.0  # after a broker could not be reached (as the replica fetchers wait)
IDLE_CHECK_S = 0.5  # how often markers waiting for a leader look again
WRITE_TXN_MARKERS_VERSION = 1


class TxnKey(NamedTuple):
    """One decided transaction: whose it is, how it ended, and the epoch of the coordinator that
    decided it (the leader epoch of its ``__transaction_state`` partition: a partition refuses
    markers of a coordinator older than the last it heard from, TRANSACTION_COORDINATOR_FENCED)."""

    producer_id: int
    producer_epoch: int
    commit: bool
    coordinator_epoch: int = COORDINATOR_EPOCH


def write_local_marker(broker: MarkedNode, txn: TxnKey, tp: TopicPartition) -> ErrorCode:
    """The marker of ``txn`` appended to ``tp`` here: NONE, UNKNOWN_TOPIC_OR_PARTITION (the
    topic is gone: nothing to mark), NOT_LEADER_OR_FOLLOWER (in a cluster, another broker leads
    it), or the log's refusal (KAFKA_STORAGE_ERROR, INVALID_PRODUCER_EPOCH, ...)."""
    topic, partition = tp
    partition_log, info = broker.partitions.get(topic, partition), broker.topics.get(topic)
    if info is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    in_cluster = broker.replicas is not None
    if partition_log is None:
        # In a cluster a partition of a live topic that has no replica here is led elsewhere: its
        # marker must go there (counting it as marked lost the markers of every partition this
        # broker holds no replica of, and left read_committed consumers stuck before them).
        return ErrorCode.NOT_LEADER_OR_FOLLOWER if in_cluster else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    if broker.replicas is not None and broker.replicas.leader(tp) is None:
        return ErrorCode.NOT_LEADER_OR_FOLLOWER
    leader_epoch = partition_writes.leader_epoch_of(broker, topic, partition)
    try:
        if topic == OFFSETS_TOPIC and broker.coordinator is not None:
            # The group coordinator writes it and applies or drops the transaction's offsets.
            broker.coordinator.complete_transaction(
                partition, (txn.producer_id, txn.producer_epoch), txn.commit
            )
            return ErrorCode.NONE
        partition_log.append_marker(
            txn.producer_id,
            txn.producer_epoch,
            txn.commit,
            txn.coordinator_epoch,
            broker.clock(),
            leader_epoch=leader_epoch,
        )
    except (OSError, LogError) as error:
        code = error.error_code if isinstance(error, LogError) else ErrorCode.KAFKA_STORAGE_ERROR
        (log.error if code is ErrorCode.KAFKA_STORAGE_ERROR else log.warning)(
            "transaction marker for producer %d to %s-%d refused: %s",
            txn.producer_id,
            topic,
            partition,
            error,
        )
        return code
    announce_append(broker, tp)
    return ErrorCode.NONE


MARKED = {
    ErrorCode.NONE,
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    ErrorCode.INVALID_PRODUCER_EPOCH,
    ErrorCode.TRANSACTION_COORDINATOR_FENCED,
}
"""Outcomes after which a partition needs no marker any more: written, its topic gone, or (as
Kafka's channel gives up then) a newer producer epoch or coordinator has taken over."""


class MarkerChannel:
    """Markers of decided transactions on their way to every partition (cluster mode)."""

    def __init__(
        self,
        broker: CoordinatorHost,
        peers: PeerRequests,
        on_written: Callable[[int], None],
        coordinator_epoch_of: Callable[[int], int],
    ) -> None:
        self._broker = broker
        self._peers = peers
        self._coordinator_epoch_of = coordinator_epoch_of  # of a producer id's coordinator
        self._on_written = on_written  # producer id whose transaction is now marked everywhere
        # Per transaction, the partitions not marked yet (an empty set: all marked, not yet told).
        self._remaining: dict[TxnKey, set[TopicPartition]] = {}
        self._queued: dict[tuple[TxnKey, TopicPartition], None] = {}  # to a remote leader, in order
        self._in_flight: set[tuple[TxnKey, TopicPartition]] = set()
        self._busy: set[int] = set()  # brokers with a request in flight
        self._work = trio.Event()
        self._nursery: trio.Nursery | None = None

    def write(
        self, producer_id: int, producer_epoch: int, commit: bool, partitions: Collection[TopicPartition]
    ) -> set[TopicPartition]:
        """Start (or check on) the markers of one decided transaction; the partitions not
        marked yet (the caller asks again; ``on_written`` says when it is worth it)."""
        txn = TxnKey(producer_id, producer_epoch, commit, self._coordinator_epoch_of(producer_id))
        remaining = self._remaining.get(txn)
        if remaining is None:
            if len(self._remaining) >= MAX_PENDING_TRANSACTIONS:
                # Finished ones whose coordinator never came back (it moved) make room first.
                for finished in [key for key, left in self._remaining.items() if not left]:
                    del self._remaining[finished]
                if len(self._remaining) >= MAX_PENDING_TRANSACTIONS:
                    return set(partitions)  # asked again later, when some have finished
            remaining = self._remaining[txn] = set(partitions)
            for tp in sorted(remaining):
                self._start(txn, tp)
            self._work.set()
        if not remaining:
            del self._remaining[txn]
            return set()
        return set(remaining)

    def forget(self, producer_ids: Collection[int]) -> None:
        """Stop the markers of these producers' transactions: their coordinator is another
        broker now, which sends them itself (and whose higher coordinator epoch makes the
        partitions refuse a late one from here)."""
        for txn in [txn for txn in self._remaining if txn.producer_id in producer_ids]:
            del self._remaining[txn]  # queued ones are dropped by the sender's next pass

    def _start(self, txn: TxnKey, tp: TopicPartition) -> None:
        """Write the marker here if this broker leads ``tp``, else queue it for the sender.
        (Before the channel runs, at start-up, a local marker counts once appended.)"""
        code = write_local_marker(self._broker, txn, tp)
        if code is ErrorCode.NONE and self._broker.replicas is not None and self._nursery is not None:
            partition_log = self._broker.partitions.get(*tp)
            if partition_log is not None and self._broker.replicas.leader(tp) is not None:
                self._in_flight.add((txn, tp))
                self._nursery.start_soon(self._await_replicas, txn, tp, ack_wait(tp, partition_log))
                return
        if code in MARKED:
            self._marked(txn, tp)
        else:  # led elsewhere, or the local write failed: the sender's next pass retries it
            self._queued[(txn, tp)] = None

    def _marked(self, txn: TxnKey, tp: TopicPartition) -> None:
        self._in_flight.discard((txn, tp))
        self._queued.pop((txn, tp), None)
        remaining = self._remaining.get(txn)
        if remaining is None:
            return
        remaining.discard(tp)
        if not remaining:
            self._on_written(txn.producer_id)

    async def _await_replicas(self, txn: TxnKey, tp: TopicPartition, wait: AckWait) -> None:
        """A marker appended here counts once the high watermark covers it: every in-sync
        replica, so every replica that may lead next, has it (an ISR shrunk below
        ``min.insync.replicas`` delays nothing here: appending the marker again would not help)."""
        replicas = self._broker.replicas
        if replicas is None:  # a single node: nothing to wait for
            self._marked(txn, tp)
            return
        with trio.move_on_after(REQUEST_TIMEOUT_S):
            if await replicas.replicated(wait.key, wait.required_offset, 1) is ErrorCode.NONE:
                self._marked(txn, tp)
                return
        # Leadership moved (or nothing replicated for a long time): write it again, wherever
        # the partition is led by then.
        await trio.sleep(RETRY_BACKOFF_S)
        self._in_flight.discard((txn, tp))
        if txn in self._remaining:
            self._queued[(txn, tp)] = None
            self._work.set()

    async def run(self) -> None:
        """Deliver queued markers to the current leaders, one request per broker at a time."""
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            while True:
                with trio.move_on_after(IDLE_CHECK_S):
                    await self._work.wait()
                self._work = trio.Event()
                for leader, batch in self._by_leader().items():
                    if leader == self._broker.node_id:
                        for txn, tp in batch:
                            del self._queued[(txn, tp)]
                            self._start(txn, tp)
                    elif leader not in self._busy:
                        self._busy.add(leader)
                        for item in batch:
                            del self._queued[item]
                            self._in_flight.add(item)
                        nursery.start_soon(self._send, leader, batch)

    def _by_leader(self) -> dict[int, list[tuple[TxnKey, TopicPartition]]]:
        """Queued markers by the current leader of their partition (none while it has none),
        at most one transaction per producer and ``MAX_MARKERS_PER_REQUEST`` per broker."""
        image = self._broker.cluster.metadata.image if self._broker.cluster is not None else None
        grouped: dict[int, list[tuple[TxnKey, TopicPartition]]] = defaultdict(list)
        producers: dict[int, dict[int, TxnKey]] = defaultdict(dict)
        for txn, tp in list(self._queued):
            if txn not in self._remaining:
                del self._queued[(txn, tp)]  # the coordinator gave the transaction up
                continue
            record = image.partition(*tp) if image is not None else None
            if record is None:
                if self._broker.topics.get(tp[0]) is None:
                    del self._queued[(txn, tp)]
                    self._marked(txn, tp)  # the topic was deleted
                continue
            leader = record.leader
            if leader < 0 or len(grouped[leader]) >= MAX_MARKERS_PER_REQUEST:
                continue
            if producers[leader].setdefault(txn.producer_id, txn) != txn:
                continue  # one transaction per producer id in a request (answers are by id)
            grouped[leader].append((txn, tp))
        return grouped

    async def _send(self, leader: int, batch: list[tuple[TxnKey, TopicPartition]]) -> None:
        """One WriteTxnMarkers request; what is not confirmed goes back in the queue."""
        unconfirmed, pause = set(batch), RETRY_BACKOFF_S
        try:
            response = await self._peers.request(
                leader,
                ApiKey.WRITE_TXN_MARKERS,
                WRITE_TXN_MARKERS_VERSION,
                _request_body(batch),
                REQUEST_TIMEOUT_S,
            )
            by_producer = {txn.producer_id: txn for txn, _ in batch}
            for marker in response["markers"]:
                txn = by_producer.get(marker["producer_id"])
                for topic in marker["topics"]:
                    for result in topic["partitions"]:
                        item = (txn, (topic["name"], result["partition_index"]))
                        if txn is not None and item in unconfirmed and result["error_code"] in MARKED:
                            unconfirmed.discard(item)
                            self._marked(*item)
        except ConnectionError as exc:
            log.warning("transaction markers to broker %d not sent: %s", leader, exc)
            pause = RECONNECT_BACKOFF_S
        finally:
            for item in unconfirmed:
                self._in_flight.discard(item)
                if item[0] in self._remaining:
                    self._queued[item] = None
            if unconfirmed:
                await trio.sleep(pause)
            self._busy.discard(leader)
            self._work.set()


def _request_body(batch: list[tuple[TxnKey, TopicPartition]]) -> dict:
    """WriteTxnMarkers: one entry per transaction, its partitions by topic."""
    partitions: dict[TxnKey, dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
    for txn, (topic, partition) in batch:
        partitions[txn][topic].append(partition)
    return {
        "markers": [
            {
                "producer_id": txn.producer_id,
                "producer_epoch": txn.producer_epoch,
                "transaction_result": txn.commit,
                "topics": [{"name": t, "partition_indexes": ps} for t, ps in topics.items()],
                "coordinator_epoch": txn.coordinator_epoch,
            }
            for txn, topics in partitions.items()
        ]
    }

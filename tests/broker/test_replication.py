"""Replication between real brokers in one process, over real sockets (issue 11).

Two or three ``Broker`` objects are served on ephemeral ports; the test plays the cluster layer
by calling ``become_leader``/``become_follower``/``stop_replica`` itself, and the only stand-in
is :class:`IsrRecorder`, the two ports the cluster layer would implement on etcd: it accepts
every ISR proposal and writes it on a timeline that the test's own observations share, so
orderings ("the ISR shrank before the producer was answered") are asserted without timing.
Producers are stock clients (kafka-python); exact error codes and KIP-951 hints are read with
single raw requests.
"""

from __future__ import annotations

import errno
import os
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Any

import kafka
import kafka.errors
import pytest
import trio

from broker.client.admin_client import KafkaConnection, fetch_body
from broker.config.config import BrokerConfig, ConfigError
from broker.node.server import Broker
from broker.services.replication.fetcher import FETCH_VERSION
from broker.services.replication.peer_connection import PeerConnection
from compat_tests.kit.in_process import running_broker
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode
from wire.record_batch import Record, encode_batch, scan_batches

TOPIC = "replicated"
DEADLINE_S = 60


class IsrRecorder:
    """The cluster layer's ports: accepts every ISR proposal and records it on ``timeline``."""

    def __init__(self) -> None:
        self.endpoints: dict[int, tuple[str, int]] = {}
        self.timeline: list[tuple[str, Any]] = []
        self._changed = trio.Event()

    async def propose_isr(
        self, topic: str, partition: int, leader_epoch: int, partition_epoch: int, new_isr: list[int]
    ) -> tuple[bool, int]:
        self.note("isr", list(new_isr))
        return True, partition_epoch + 1

    async def hand_over(self, topic: str, partition: int, leader_epoch: int, partition_epoch: int) -> int:
        """Recorded; no other replica takes over (the test plays the cluster layer's part)."""
        self.note("hand over", leader_epoch)
        return -1

    def endpoint_of(self, node_id: int, listener_name: str | None = None) -> tuple[str, int] | None:
        return self.endpoints.get(node_id)

    def in_sync_replicas(self, topic: str, partition: int) -> list[int] | None:
        return None  # no metadata: every replica counts as in sync, so none is throttled

    def note(self, what: str, value: Any) -> None:
        self.timeline.append((what, value))
        self._changed.set()
        self._changed = trio.Event()

    async def wait_for(self, entry: tuple[str, Any], after: int) -> None:
        """Until ``entry`` is on the timeline at or after position ``after``."""
        while entry not in self.timeline[after:]:
            await self._changed.wait()


class Cluster:
    """Served brokers by node id (1..n), their ports, and the recorder; a node can be stopped
    and started again on its data directory."""

    def __init__(self, tmp_path: Path, recorder: IsrRecorder, settings: dict[str, str]) -> None:
        self.tmp_path = tmp_path
        self.recorder = recorder
        self.settings = settings
        self.brokers: dict[int, Broker] = {}
        self.ports: dict[int, int] = {}
        self.running: dict[int, AsyncExitStack] = {}

    async def start(self, node: int) -> None:
        """Serve ``node`` (its topic is created the first time; a restart finds it on disk)."""
        stack = AsyncExitStack()
        broker, port = await stack.enter_async_context(
            running_broker(
                self.tmp_path / f"node{node}",
                prepare=lambda b: b.start_replication(self.recorder),
                **{"node.id": str(node)},
                **self.settings,
            )
        )
        if broker.topics.get(TOPIC) is None:
            info = broker.topics.create(
                TOPIC, 1, {"min.insync.replicas": self.settings["min.insync.replicas"]}
            )
            broker.partitions.create_partitions_now(info, 0, 1)
        self.brokers[node], self.ports[node], self.running[node] = broker, port, stack
        self.recorder.endpoints[node] = ("127.0.0.1", port)

    async def stop(self, node: int) -> None:
        """Stop serving ``node`` and close its logs, as a broker shutting down (the node
        started last: each runs in a nursery, and nurseries close in reverse order)."""
        await self.running.pop(node).aclose()

    async def lead(self, leader: int, followers: list[int], epoch: int, isr: list[int] | None = None) -> None:
        """Make ``leader`` lead the topic's partition 0 at ``epoch`` and ``followers`` follow it."""
        replicas = [leader, *followers]
        await self.brokers[leader].replicas.become_leader(TOPIC, 0, epoch, epoch, replicas, isr or replicas)
        for follower in followers:
            await self.brokers[follower].replicas.become_follower(TOPIC, 0, epoch, leader)

    def log_bytes(self, node: int) -> bytes:
        """Every segment file of the partition, concatenated: what must be equal across replicas."""
        partition_log = self.brokers[node].partitions.get(TOPIC, 0)
        return b"".join(Path(segment.log_path).read_bytes() for segment in partition_log.segments)


@asynccontextmanager
async def cluster(tmp_path: Path, size: int, **overrides: str) -> AsyncIterator[Cluster]:
    settings = {
        "replica.fetch.wait.max.ms": "200",
        "replica.fetch.backoff.ms": "100",
        "min.insync.replicas": "2",
    } | overrides
    found = Cluster(tmp_path, IsrRecorder(), settings)
    try:
        for node in range(1, size + 1):
            await found.start(node)
        yield found
    finally:
        for node in reversed(list(found.running)):  # nurseries close in reverse order
            await found.stop(node)


def produce(port: int, values: list[bytes], acks: int | str = "all") -> list[int]:
    """Send ``values`` to partition 0 with kafka-python (no retries); their offsets."""
    producer = kafka.KafkaProducer(
        bootstrap_servers=f"127.0.0.1:{port}", acks=acks, retries=0, linger_ms=0, request_timeout_ms=20_000
    )
    try:
        futures = [producer.send(TOPIC, value, partition=0) for value in values]
        producer.flush()
        return [future.get(timeout=20).offset for future in futures]
    finally:
        producer.close()


async def produce_in_thread(port: int, values: list[bytes], acks: int | str = "all") -> list[int]:
    return await trio.to_thread.run_sync(lambda: produce(port, values, acks))


async def raw_request(port: int, api_key: ApiKey, version: int, body: dict[str, Any]) -> dict[str, Any]:
    connection = await PeerConnection.open("127.0.0.1", port, "test-client", 1 << 24, DEADLINE_S)
    try:
        return await connection.request(api_key, version, body)
    finally:
        await connection.aclose()


def produce_body(acks: int, value: bytes = b"raw") -> dict[str, Any]:
    batch = bytes(encode_batch([Record(0, 0, None, value)]))
    return {
        "transactional_id": None,
        "acks": acks,
        "timeout_ms": 30_000,
        "topic_data": [{"name": TOPIC, "partition_data": [{"index": 0, "records": batch}]}],
    }


async def produce_raw(port: int, acks: int = -1, version: int = 10) -> dict[str, Any]:
    """One Produce of one record; the whole response."""
    return await raw_request(port, ApiKey.PRODUCE, version, produce_body(acks))


def partition_answer(response: dict[str, Any]) -> dict[str, Any]:
    return response["responses"][0]["partition_responses"][0]


def consumer_fetch(port: int, offset: int, max_wait_ms: int = 0) -> dict[str, Any]:
    """A consumer's Fetch v12 of partition 0 (blocking; run it in a thread)."""
    with KafkaConnection(f"127.0.0.1:{port}", timeout=30) as connection:
        return connection.fetch(TOPIC, {0: offset}, max_wait_ms)[0]


def fetched_offsets(records: bytes | None) -> list[int]:
    """The offsets of the batches in a fetched record set, each batch's first to last."""
    offsets: list[int] = []
    for batch in scan_batches(memoryview(records or b""), from_client=False):
        offsets.extend(range(batch.base_offset, batch.base_offset + batch.last_offset_delta + 1))
    return offsets


async def wait_until_appended(c: Cluster, log_end: int, node: int = 1) -> None:
    """Until ``node``'s log of the partition reaches ``log_end`` (woken by its appends)."""
    broker = c.brokers[node]
    while broker.partitions.get(TOPIC, 0).log_end_offset < log_end:
        await broker.appends.wait_any([(TOPIC, 0)], 1.0)


async def test_followers_hold_the_leaders_bytes_once_acks_all_is_answered(tmp_path: Path) -> None:
    with trio.fail_after(DEADLINE_S):
        async with cluster(tmp_path, 3) as c:
            await c.lead(1, [2, 3], epoch=1)
            offsets = await produce_in_thread(c.ports[1], [b"value-%d" % i for i in range(40)])
            assert offsets == list(range(40))
            leader_bytes = c.log_bytes(1)
            assert leader_bytes
            assert c.log_bytes(2) == leader_bytes
            assert c.log_bytes(3) == leader_bytes


async def test_a_one_record_produce_costs_each_follower_one_fetch(tmp_path: Path) -> None:
    """As Kafka: a follower's parked fetch is answered when data arrives, and the high
    watermark that data moves goes out with the next answer, not in an extra empty one."""
    with trio.fail_after(DEADLINE_S):
        async with cluster(tmp_path, 3, **{"replica.fetch.wait.max.ms": "10000"}) as c:
            await c.lead(1, [2, 3], epoch=1)
            await produce_in_thread(c.ports[1], [b"first"])
            await trio.sleep(0.5)  # the followers' fetches are parked again
            fetches = c.brokers[1].metrics.requests.by_version[ApiKey.FETCH, FETCH_VERSION].counts
            before = sum(fetches)
            for _ in range(10):
                assert partition_answer(await produce_raw(c.ports[1]))["error_code"] == ErrorCode.NONE
            assert sum(fetches) - before <= 2 * 10


async def test_consumers_never_read_past_the_high_watermark(tmp_path: Path) -> None:
    with trio.fail_after(DEADLINE_S):
        async with cluster(tmp_path, 2) as c:
            await c.lead(1, [2], epoch=1)
            assert await produce_in_thread(c.ports[1], [b"a", b"b", b"c"]) == [0, 1, 2]
            await c.brokers[2].replicas.stop_replica(TOPIC, 0, delete=False)
            # acks=1 is answered after the leader's own append, but the follower has not got it.
            assert await produce_in_thread(c.ports[1], [b"d", b"e"], acks=1) == [3, 4]
            answer = await trio.to_thread.run_sync(consumer_fetch, c.ports[1], 0)
            assert answer["high_watermark"] == 3
            assert fetched_offsets(answer["records"]) == [0, 1, 2]
            empty = await trio.to_thread.run_sync(consumer_fetch, c.ports[1], 3)
            assert (empty["error_code"], empty["records"] or b"") == (ErrorCode.NONE, b"")
            # A consumer long-polling at the high watermark is woken when the follower catches up.
            waiting = trio.Event()
            result: dict[str, Any] = {}

            async def poll() -> None:
                waiting.set()
                result.update(await trio.to_thread.run_sync(consumer_fetch, c.ports[1], 3, 20_000))

            async with trio.open_nursery() as nursery:
                nursery.start_soon(poll)
                await waiting.wait()
                await c.brokers[2].replicas.become_follower(TOPIC, 0, 1, 1)
            assert result["high_watermark"] == 5
            assert fetched_offsets(result["records"]) == [3, 4]


async def acks_all_held_until_the_isr_shrinks(c: Cluster) -> None:
    """With node 2 gone, an acks=all Produce to node 1 is not answered until node 2 has left
    the ISR (replica.lag.time.max.ms), and then refused as Kafka does."""
    mark = len(c.recorder.timeline)
    answer = partition_answer(await produce_raw(c.ports[1], acks=-1))
    c.recorder.note("answered", answer["error_code"])
    assert c.recorder.timeline[mark:] == [
        ("isr", [1]),
        ("answered", ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND),
    ]


async def test_acks_all_waits_for_the_isr_then_refuses_below_min_insync(tmp_path: Path) -> None:
    with trio.fail_after(DEADLINE_S):
        async with cluster(tmp_path, 2, **{"replica.lag.time.max.ms": "1000"}) as c:
            await c.lead(1, [2], epoch=1)
            assert await produce_in_thread(c.ports[1], [b"first"]) == [0]
            await c.brokers[2].replicas.stop_replica(TOPIC, 0, delete=False)
            await acks_all_held_until_the_isr_shrinks(c)
            assert c.brokers[1].replicas.under_replicated() == 1
            with pytest.raises(kafka.errors.NotEnoughReplicasError):
                await produce_in_thread(c.ports[1], [b"refused"])
            assert partition_answer(await produce_raw(c.ports[1], acks=1))["error_code"] == ErrorCode.NONE
            # The follower comes back, catches up, rejoins; acks=all works again.
            mark = len(c.recorder.timeline)
            await c.brokers[2].replicas.become_follower(TOPIC, 0, 1, 1)
            await c.recorder.wait_for(("isr", [1, 2]), after=mark)
            assert c.brokers[1].replicas.under_replicated() == 0
            assert await produce_in_thread(c.ports[1], [b"again"]) == [3]
            assert c.log_bytes(2) == c.log_bytes(1)


async def test_a_leader_whose_log_goes_offline_hands_over_instead_of_shrinking_the_isr(
    tmp_path: Path,
) -> None:
    """A disk error takes the leader's log offline: its followers can no longer fetch, so their
    lag says nothing, and dropping them would leave the acknowledged records to a log that may
    come back without them (a nemesis run lost 2,544 that way). The leader keeps its ISR and asks
    the cluster layer to hand its leadership to an in-sync follower, as Kafka's controller moves
    the leaderships of a failed log directory."""
    with trio.fail_after(DEADLINE_S):
        async with cluster(tmp_path, 3, **{"replica.lag.time.max.ms": "400"}) as c:
            await c.lead(1, [2, 3], epoch=1)
            assert await produce_in_thread(c.ports[1], [b"a", b"b"]) == [0, 1]
            before = len(c.recorder.timeline)
            c.brokers[1].partitions.get(TOPIC, 0).went_offline(
                OSError(errno.ENOSPC, "No space left on device")
            )
            await c.recorder.wait_for(("hand over", 1), after=before)
            await trio.sleep(1.0)  # past two more lag checks: still no ISR change
            assert ("isr", [1]) not in c.recorder.timeline[before:]
            assert all(what == "hand over" for what, _ in c.recorder.timeline[before:])


async def test_a_follower_whose_log_is_offline_does_not_rejoin_the_isr(tmp_path: Path) -> None:
    """A follower whose log a disk error took offline stops fetching it: its fetches at a log end
    that reached the high watermark would otherwise make the leader add it to the ISR, where it
    holds back the high watermark it cannot help move (a nemesis round saw a new leader re-add
    the previous one, offline, a quarter second after it took over)."""
    with trio.fail_after(DEADLINE_S):
        async with cluster(tmp_path, 3, **{"replica.lag.time.max.ms": "400"}) as c:
            await c.lead(1, [2, 3], epoch=1)
            assert await produce_in_thread(c.ports[1], [b"a", b"b"]) == [0, 1]
            await wait_until_appended(c, 2, node=3)
            c.brokers[3].partitions.get(TOPIC, 0).went_offline(OSError(errno.EIO, "Input/output error"))
            before = len(c.recorder.timeline)
            await c.lead(1, [2, 3], epoch=2, isr=[1, 2])  # the controller dropped it meanwhile
            await trio.sleep(1.5)  # several fetch rounds and ISR checks
            assert ("isr", [1, 2, 3]) not in c.recorder.timeline[before:]


async def test_acks_all_times_out_while_the_isr_waits_for_a_stopped_follower(tmp_path: Path) -> None:
    with trio.fail_after(DEADLINE_S):
        async with cluster(tmp_path, 2) as c:
            await c.lead(1, [2], epoch=1)
            await c.brokers[2].replicas.stop_replica(TOPIC, 0, delete=False)
            body = produce_body(-1) | {"timeout_ms": 300}
            answer = partition_answer(await raw_request(c.ports[1], ApiKey.PRODUCE, 9, body))
            assert answer["error_code"] == ErrorCode.REQUEST_TIMED_OUT
            assert c.recorder.timeline == []  # the ISR never changed (replica.lag.time.max.ms 30 s)


async def test_a_follower_drops_the_tail_it_wrote_alone_as_leader(tmp_path: Path) -> None:
    with trio.fail_after(DEADLINE_S):
        async with cluster(tmp_path, 2, **{"min.insync.replicas": "1"}) as c:
            await c.lead(2, [1], epoch=1)
            assert await produce_in_thread(c.ports[2], [b"a", b"b", b"c"]) == [0, 1, 2]
            await c.brokers[1].replicas.stop_replica(TOPIC, 0, delete=False)
            # Node 2 goes on alone in epoch 1: records node 1 never gets.
            assert await produce_in_thread(c.ports[2], [b"x", b"y", b"z", b"w"], acks=1) == [3, 4, 5, 6]
            # Epoch 2: node 1 leads with what it has and takes new records.
            await c.brokers[1].replicas.become_leader(TOPIC, 0, 2, 2, [1, 2], [1])
            assert await produce_in_thread(c.ports[1], [b"d", b"e"], acks=1) == [3, 4]
            mark = len(c.recorder.timeline)
            await c.brokers[2].replicas.become_follower(TOPIC, 0, 2, 1)
            await c.recorder.wait_for(("isr", [1, 2]), after=mark)
            assert c.brokers[2].partitions.get(TOPIC, 0).log_end_offset == 5
            assert c.log_bytes(2) == c.log_bytes(1)


async def test_a_follower_refuses_clients_and_names_the_leader(tmp_path: Path) -> None:
    with trio.fail_after(DEADLINE_S):
        async with cluster(tmp_path, 2) as c:
            await c.lead(1, [2], epoch=3)
            leader_endpoint = [{"node_id": 1, "host": "127.0.0.1", "port": c.ports[1], "rack": None}]
            produced = await produce_raw(c.ports[2], acks=-1, version=10)
            answer = partition_answer(produced)
            assert answer["error_code"] == ErrorCode.NOT_LEADER_OR_FOLLOWER
            assert answer["current_leader"] == {"leader_id": 1, "leader_epoch": 3}
            assert produced["node_endpoints"] == leader_endpoint
            with pytest.raises(kafka.errors.NotLeaderForPartitionError):
                await produce_in_thread(c.ports[2], [b"refused"])

            def fetch_v16(node: int, current_leader_epoch: int) -> dict[str, Any]:
                topic_id = c.brokers[node].topics.get(TOPIC).topic_id
                partition = {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}
                return {
                    "replica_state": {"replica_id": -1, "replica_epoch": -1},
                    "max_wait_ms": 0,
                    "min_bytes": 0,
                    "max_bytes": 1 << 20,
                    "isolation_level": 0,
                    "session_id": 0,
                    "session_epoch": -1,
                    "topics": [
                        {
                            "topic_id": topic_id,
                            "partitions": [partition | {"current_leader_epoch": current_leader_epoch}],
                        }
                    ],
                    "forgotten_topics_data": [],
                    "rack_id": "",
                }

            async def fetch_error(node: int, epoch: int) -> tuple[int, dict[str, Any], list[Any]]:
                response = await raw_request(c.ports[node], ApiKey.FETCH, 16, fetch_v16(node, epoch))
                partition = response["responses"][0]["partitions"][0]
                return (
                    partition["error_code"],
                    partition.get("current_leader"),
                    response.get("node_endpoints"),
                )

            # A consumer's Fetch v11+ may be served by a follower (KIP-392, as Kafka's
            # fetchOnlyLeader); an older one is refused.
            assert (await fetch_error(2, 3))[0] == ErrorCode.NONE
            fetch_v10 = {
                "replica_id": -1,
                "max_wait_ms": 0,
                "min_bytes": 0,
                "max_bytes": 1 << 20,
                "isolation_level": 0,
                "session_id": 0,
                "session_epoch": -1,
                "topics": [
                    {
                        "topic": TOPIC,
                        "partitions": [{"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}],
                    }
                ],
                "forgotten_topics_data": [],
            }
            old_fetch = await raw_request(c.ports[2], ApiKey.FETCH, 10, fetch_v10)
            assert (
                old_fetch["responses"][0]["partitions"][0]["error_code"] == ErrorCode.NOT_LEADER_OR_FOLLOWER
            )
            deleted = await raw_request(
                c.ports[2],
                ApiKey.DELETE_RECORDS,
                2,
                {
                    "topics": [{"name": TOPIC, "partitions": [{"partition_index": 0, "offset": 0}]}],
                    "timeout_ms": 5000,
                },
            )
            assert deleted["topics"][0]["partitions"][0]["error_code"] == ErrorCode.NOT_LEADER_OR_FOLLOWER
            listed = await raw_request(
                c.ports[2],
                ApiKey.LIST_OFFSETS,
                7,
                {
                    "replica_id": -1,
                    "isolation_level": 0,
                    "topics": [{"name": TOPIC, "partitions": [{"partition_index": 0, "timestamp": -1}]}],
                },
            )
            assert listed["topics"][0]["partitions"][0]["error_code"] == ErrorCode.NOT_LEADER_OR_FOLLOWER
            assert (await fetch_error(1, 2))[0] == ErrorCode.FENCED_LEADER_EPOCH
            assert (await fetch_error(1, 4))[0] == ErrorCode.UNKNOWN_LEADER_EPOCH
            assert (await fetch_error(1, 3))[0] == ErrorCode.NONE


def replica_bytes(broker: Broker, start: int) -> bytes:
    """The partition's batches from ``start`` to its log end, as a follower's fetch reads them."""
    partition_log = broker.partitions.get(TOPIC, 0)
    data = b""
    offset = start
    while offset < partition_log.log_end_offset:
        (found,) = partition_log.read_slices(offset, 1 << 20, upto=partition_log.log_end_offset)
        chunk = os.pread(found.fd, found.length, found.position)
        data += chunk
        offset = fetched_offsets(chunk)[-1] + 1
    return data


async def test_a_follower_behind_the_leaders_log_start_starts_over_there(tmp_path: Path) -> None:
    with trio.fail_after(DEADLINE_S):
        async with cluster(tmp_path, 2, **{"min.insync.replicas": "1"}) as c:
            await c.brokers[1].replicas.become_leader(TOPIC, 0, 1, 1, [1, 2], [1])
            assert await produce_in_thread(c.ports[1], [b"%d" % i for i in range(5)]) == [0, 1, 2, 3, 4]
            leader_log = c.brokers[1].partitions.get(TOPIC, 0)
            leader_log.delete_records(3)
            mark = len(c.recorder.timeline)
            await c.brokers[2].replicas.become_follower(TOPIC, 0, 1, 1)
            await c.recorder.wait_for(("isr", [1, 2]), after=mark)
            follower_log = c.brokers[2].partitions.get(TOPIC, 0)
            assert (follower_log.log_start_offset, follower_log.log_end_offset) == (3, 5)
            assert replica_bytes(c.brokers[2], 3) == replica_bytes(c.brokers[1], 3)
            # The leader's log start moves on (DeleteRecords): the follower's follows it.
            leader_log.delete_records(4)
            assert await produce_in_thread(c.ports[1], [b"5"]) == [5]
            assert follower_log.log_start_offset == 4


async def test_only_the_partitions_replicas_read_past_the_high_watermark(tmp_path: Path) -> None:
    with trio.fail_after(DEADLINE_S):
        async with cluster(tmp_path, 2) as c:
            await c.lead(1, [2], epoch=1)
            await c.brokers[2].replicas.stop_replica(TOPIC, 0, delete=False)
            assert await produce_in_thread(c.ports[1], [b"unreplicated"], acks=1) == [0]

            def replica_fetch(replica_id: int, current_leader_epoch: int) -> dict[str, Any]:
                body = fetch_body(TOPIC, {0: 0}) | {"replica_id": replica_id}
                body["topics"][0]["partitions"][0]["current_leader_epoch"] = current_leader_epoch
                return body

            async def answer(replica_id: int, epoch: int) -> dict[str, Any]:
                response = await raw_request(c.ports[1], ApiKey.FETCH, 12, replica_fetch(replica_id, epoch))
                return response["responses"][0]["partitions"][0]

            stranger = await answer(7, 1)
            assert (stranger["error_code"], stranger["records"] or b"") == (
                ErrorCode.UNKNOWN_LEADER_EPOCH,
                b"",
            )
            assert (await answer(7, -1))["error_code"] == ErrorCode.NOT_LEADER_OR_FOLLOWER
            replica = await answer(2, 1)
            assert (replica["error_code"], replica["high_watermark"]) == (ErrorCode.NONE, 0)
            assert fetched_offsets(replica["records"]) == [0]


async def test_a_restarted_follower_truncates_catches_up_and_rejoins(tmp_path: Path) -> None:
    with trio.fail_after(DEADLINE_S):
        async with cluster(tmp_path, 2, **{"replica.lag.time.max.ms": "1000"}) as c:
            await c.lead(1, [2], epoch=1)
            assert await produce_in_thread(c.ports[1], [b"a", b"b"]) == [0, 1]
            await c.stop(2)
            await acks_all_held_until_the_isr_shrinks(c)
            await c.start(2)
            mark = len(c.recorder.timeline)
            await c.brokers[2].replicas.become_follower(TOPIC, 0, 1, 1)
            await c.recorder.wait_for(("isr", [1, 2]), after=mark)
            assert await produce_in_thread(c.ports[1], [b"c"]) == [3]
            assert c.log_bytes(2) == c.log_bytes(1)


async def test_a_follower_survives_a_leader_that_answers_garbage(tmp_path: Path) -> None:
    """A leader announcing a 2 GiB response, or one that is not Kafka at all, costs the
    follower a reconnect after replica.fetch.backoff.ms, never its memory or its broker."""
    connections: list[int] = []
    thrice = trio.Event()  # reconnected after both kinds of garbage

    async def hostile_leader(stream: trio.SocketStream) -> None:
        connections.append(1)
        if len(connections) >= 3:
            thrice.set()
        await stream.receive_some(65536)
        reply = b"\\x7f\\xff\\xff\\xff" if len(connections) == 1 else b"\\x00\\x00\\x00\\x08garbage!"
        await stream.send_all(reply)
        await stream.aclose()

    with trio.fail_after(DEADLINE_S):
        async with trio.open_nursery() as nursery:
            (listener,) = await nursery.start(partial(trio.serve_tcp, hostile_leader, 0, host="127.0.0.1"))
            async with cluster(tmp_path, 1) as c:
                c.recorder.endpoints[9] = ("127.0.0.1", listener.socket.getsockname()[1])
                await c.brokers[1].replicas.become_follower(TOPIC, 0, 1, 9)
                await thrice.wait()
                # Still serving: it answers a client, refusing what it does not lead.
                answer = partition_answer(await produce_raw(c.ports[1], acks=1))
                assert answer["error_code"] == ErrorCode.NOT_LEADER_OR_FOLLOWER
            nursery.cancel_scope.cancel()


async def test_a_fenced_leader_refuses_producers_until_it_leads_again(tmp_path: Path) -> None:
    with trio.fail_after(DEADLINE_S):
        async with cluster(tmp_path, 2) as c:
            await c.lead(1, [2], epoch=1)
            await c.brokers[2].replicas.stop_replica(TOPIC, 0, delete=False)
            async with trio.open_nursery() as nursery:
                waiting: dict[str, Any] = {}

                async def held() -> None:
                    waiting.update(partition_answer(await produce_raw(c.ports[1], acks=-1)))

                nursery.start_soon(held)
                await wait_until_appended(c, 1)
                c.brokers[1].replicas.fence_all()
            # The acks=all producer waiting on the lost leadership is told so.
            assert waiting["error_code"] == ErrorCode.NOT_LEADER_OR_FOLLOWER
            assert partition_answer(await produce_raw(c.ports[1], acks=1))["error_code"] == (
                ErrorCode.NOT_LEADER_OR_FOLLOWER
            )
            await c.lead(1, [2], epoch=1)
            assert partition_answer(await produce_raw(c.ports[1], acks=1))["error_code"] == ErrorCode.NONE


def test_a_socket_timeout_shorter_than_the_fetch_wait_is_refused(tmp_path: Path) -> None:
    settings = {
        "log.dirs": str(tmp_path),
        "listeners": "PLAINTEXT://127.0.0.1:0",
        "replica.fetch.wait.max.ms": "2000",
        "replica.socket.timeout.ms": "1000",
    }
    broker = Broker(BrokerConfig.load(overrides=settings, environ={}))
    try:
        with pytest.raises(ConfigError, match="at least replica.fetch.wait.max.ms"):
            broker.start_replication(IsrRecorder())
    finally:
        broker.close()

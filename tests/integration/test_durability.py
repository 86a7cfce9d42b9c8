"""What an acknowledgement means: written to the OS by default, fsynced with a flush policy.

The broker runs in-process (so the test can count the log's fsyncs); clients are blocking raw
clients in worker threads.  No test asserts on timing: group commit is made deterministic by
holding the first fsync until every producer's first append has landed.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable
from functools import partial
from pathlib import Path

import trio

from broker.client.admin_client import PRODUCE_VERSION, produce_body
from broker.node.server import Broker
from compat_tests.kit.drivers.base import ConsumerSettings
from compat_tests.kit.drivers.kafka_python import KafkaPythonDriver
from compat_tests.kit.in_process import running_broker
from compat_tests.kit.raw_protocol import RawClient, in_thread, make_batch
from log.checkpoint import CHECKPOINT_FILE, PartitionCheckpoint
from log.partition_log import PartitionLog
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode

DEADLINE_S = 60
PRODUCERS = 12
REQUESTS_EACH = 5


async def create_topic(port: int, topic: str) -> None:
    await in_thread(port, lambda client: client.create_topic(topic, 1))


async def produce(port: int, topic: str, requests: int) -> list[int]:
    """Send ``requests`` one-record produce requests (acks=1) in turn; return their error codes."""

    def send(client: RawClient) -> list[int]:
        return [client.produce(topic, 0, make_batch([b"v"]), acks=1)["error_code"] for _ in range(requests)]

    return await in_thread(port, send, trio.CapacityLimiter(1))


def partition_log(broker: Broker, topic: str) -> PartitionLog:
    found = broker.partitions.get(topic, 0)
    assert found is not None
    return found


async def test_fsync_per_message_is_shared_by_concurrent_producers(tmp_path: Path) -> None:
    with trio.fail_after(DEADLINE_S):
        async with running_broker(tmp_path, **{"log.flush.interval.messages": "1"}) as (broker, port):
            await create_topic(port, "durable")
            log = partition_log(broker, "durable")
            first_round_may_finish = hold_syncs(broker)
            results: list[list[int]] = []

            async def producer() -> None:
                results.append(await produce(port, "durable", REQUESTS_EACH))

            async with trio.open_nursery() as nursery:
                for _ in range(PRODUCERS):
                    nursery.start_soon(producer)
                while log.log_end_offset < PRODUCERS:  # every producer has one append waiting
                    await trio.sleep(0.01)
                first_round_may_finish()
            assert results == [[ErrorCode.NONE] * REQUESTS_EACH] * PRODUCERS
            appends = PRODUCERS * REQUESTS_EACH
            assert log.log_end_offset == appends
            assert log.synced_offset == appends, "every acknowledged record was fdatasynced"
            assert 1 <= log.fsyncs < appends, f"{log.fsyncs} fsyncs for {appends} acknowledged appends"


async def test_default_acknowledgement_does_not_wait_for_fsync(tmp_path: Path) -> None:
    with trio.fail_after(DEADLINE_S):
        async with running_broker(tmp_path) as (broker, port):
            await create_topic(port, "fast")
            assert await produce(port, "fast", 10) == [ErrorCode.NONE] * 10
            log = partition_log(broker, "fast")
            assert (log.log_end_offset, log.synced_offset, log.recovery_point, log.fsyncs) == (10, 0, 0, 0)


async def test_flush_interval_ms_fsyncs_in_the_background(tmp_path: Path) -> None:
    with trio.fail_after(DEADLINE_S):
        async with running_broker(tmp_path, **{"log.flush.interval.ms": "100"}) as (broker, port):
            await create_topic(port, "periodic")
            assert await produce(port, "periodic", 3) == [ErrorCode.NONE] * 3
            log = partition_log(broker, "periodic")
            while log.recovery_point < 3:  # no client waits: the periodic task does it
                await trio.sleep(0.05)
            assert log.fsyncs >= 1


async def test_the_periodic_flush_outlives_a_topic_deleted_while_unflushed(tmp_path: Path) -> None:
    """The periodic flush visits only partitions with unsynced appends; one whose topic was
    deleted before its flush is dropped, and the partitions appended to afterwards still flush."""
    settings = {"log.flush.interval.ms": "100"}
    with trio.fail_after(DEADLINE_S):
        async with running_broker(tmp_path, **settings) as (broker, port):
            for topic in ("doomed", "kept"):
                await create_topic(port, topic)
            assert await produce(port, "doomed", 2) == [ErrorCode.NONE] * 2
            deleted = await in_thread(port, lambda client: client.delete_topic("doomed"))
            assert deleted["error_code"] == ErrorCode.NONE
            assert await produce(port, "kept", 3) == [ErrorCode.NONE] * 3
            log = partition_log(broker, "kept")
            while log.recovery_point < 3:
                await trio.sleep(0.05)
            assert log.fsyncs >= 1


async def test_first_appends_to_many_partitions_mark_them_unclean_off_the_event_loop(
    tmp_path: Path, monkeypatch
) -> None:
    """Each fresh partition's checkpoint says "unclean", durably, before its first append, and
    a request to many such partitions has those fsyncs done in worker threads."""
    checkpoint_syncs: list[str] = []
    real_fsync = os.fsync

    def recording_fsync(descriptor: int) -> None:
        if os.readlink(f"/proc/self/fd/{descriptor}").endswith(CHECKPOINT_FILE + ".tmp"):
            checkpoint_syncs.append(threading.current_thread().name)
        real_fsync(descriptor)

    with trio.fail_after(DEADLINE_S):
        async with running_broker(tmp_path) as (broker, port):
            await in_thread(port, lambda client: client.create_topic("fresh", 8))
            logs = [broker.partitions.get("fresh", p) for p in range(8)]
            assert all(log is not None and log.needs_unclean_mark for log in logs)
            monkeypatch.setattr(os, "fsync", recording_fsync)
            body = produce_body("fresh", {p: bytes(make_batch([b"v"])) for p in range(8)}, acks=1)
            response = await in_thread(
                port, lambda client: client.request(ApiKey.PRODUCE, PRODUCE_VERSION, body)
            )
            codes = [p["error_code"] for t in response["responses"] for p in t["partition_responses"]]
            assert codes == [ErrorCode.NONE] * 8
            for log in logs:
                assert log is not None and not log.needs_unclean_mark
                checkpoint = PartitionCheckpoint.read(log.directory)
                assert checkpoint is not None and not checkpoint.clean_shutdown
    assert len(checkpoint_syncs) >= 8
    assert threading.main_thread().name not in checkpoint_syncs[:8]


def hold_syncs(broker: Broker) -> Callable[[], None]:
    """Stop the broker's sync process (``SIGSTOP``) so that no sync completes until the
    returned function lets it go on: a disk that takes its time, for real."""
    pid = broker.durability.sync_process.ensure_started()
    os.kill(pid, signal.SIGSTOP)
    return partial(os.kill, pid, signal.SIGCONT)


async def test_pipelined_requests_append_while_earlier_ones_wait_and_are_answered_in_order(
    tmp_path: Path,
) -> None:
    """One connection, 20 produce requests and a Metadata request sent without waiting: all are
    appended while the first sync is held, and the answers come back in request order."""
    with trio.fail_after(DEADLINE_S):
        async with running_broker(tmp_path, **{"log.flush.interval.messages": "1"}) as (broker, port):
            await create_topic(port, "pipelined")
            log = partition_log(broker, "pipelined")
            release = hold_syncs(broker)
            client = RawClient(f"127.0.0.1:{port}")
            sent = [
                client.send_request(
                    ApiKey.PRODUCE, PRODUCE_VERSION, produce_body("pipelined", {0: make_batch([b"a"])})
                )
            ]
            sent += [client.send_request(ApiKey.METADATA, 1, {"topics": None})]
            sent += [
                client.send_request(
                    ApiKey.PRODUCE, PRODUCE_VERSION, produce_body("pipelined", {0: make_batch([b"v"])})
                )
                for _ in range(19)
            ]
            while log.log_end_offset < 20:  # appended while the first answer still waits for its sync
                await trio.sleep(0.01)
            assert log.synced_offset == 0
            release()

            def receive_all() -> list[dict]:
                with client:
                    answers = [client.receive_response(ApiKey.PRODUCE, PRODUCE_VERSION, sent[0])]
                    answers.append(client.receive_response(ApiKey.METADATA, 1, sent[1]))
                    answers += [client.receive_response(ApiKey.PRODUCE, PRODUCE_VERSION, c) for c in sent[2:]]
                    return answers

            answers = await trio.to_thread.run_sync(receive_all)
            produced = [answers[0], *answers[2:]]
            offsets = [a["responses"][0]["partition_responses"][0]["base_offset"] for a in produced]
            assert offsets == list(range(20))
            assert [t["name"] for t in answers[1]["topics"]] == ["pipelined"]
            assert log.synced_offset == 20
            assert broker.durability.rounds <= 2, "the 19 queued appends share one round"


async def test_one_round_syncs_every_partition_of_a_request(tmp_path: Path) -> None:
    with trio.fail_after(DEADLINE_S):
        async with running_broker(tmp_path, **{"log.flush.interval.messages": "1"}) as (broker, port):

            def produce_to_four(client: RawClient) -> dict:
                client.create_topic("wide", 4)
                batches = {p: make_batch([b"x", b"y"]) for p in range(4)}
                return client.request(ApiKey.PRODUCE, PRODUCE_VERSION, produce_body("wide", batches))

            answer = await in_thread(port, produce_to_four)
            errors = [p["error_code"] for p in answer["responses"][0]["partition_responses"]]
            assert errors == [ErrorCode.NONE] * 4
            logs = [broker.partitions.get("wide", p) for p in range(4)]
            assert [log.synced_offset for log in logs] == [2, 2, 2, 2]
            assert broker.durability.rounds == 1
            assert [log.recovery_point for log in logs] == [0, 0, 0, 0], (
                "indexes wait for the checkpoint flush"
            )


async def test_consumers_do_not_see_an_append_before_its_sync(tmp_path: Path) -> None:
    """As in Kafka, whose high watermark moves only after the flush an append triggered: a record
    read before its sync could vanish in a power cut while its offset is reused."""
    with trio.fail_after(DEADLINE_S):
        async with running_broker(tmp_path, **{"log.flush.interval.messages": "1"}) as (broker, port):
            await create_topic(port, "hidden")
            assert await produce(port, "hidden", 1) == [ErrorCode.NONE]
            log = partition_log(broker, "hidden")
            release = hold_syncs(broker)
            async with trio.open_nursery() as nursery:
                nursery.start_soon(produce, port, "hidden", 1)
                while log.log_end_offset < 2:
                    await trio.sleep(0.01)

                def look(client: RawClient) -> tuple[dict, int]:
                    return client.fetch_partition("hidden", 0, 1), client.list_offset("hidden", 0, -1)

                waiting, latest = await in_thread(port, look)
                assert (waiting["error_code"], waiting["high_watermark"], latest) == (ErrorCode.NONE, 1, 1)
                assert not waiting["records"]
                release()
            synced, latest = await in_thread(port, look)
            assert (synced["high_watermark"], latest) == (2, 2)
            assert synced["records"]


async def test_an_offset_commit_is_answered_once_synced(tmp_path: Path) -> None:
    """Kafka flushes ``__consumer_offsets`` appends like any other under ``flush.messages``."""
    with trio.fail_after(DEADLINE_S):
        async with running_broker(tmp_path, **{"log.flush.interval.messages": "1"}) as (broker, port):
            await create_topic(port, "committed")

            def commit(client: RawClient) -> dict:
                topics = [
                    {"name": "committed", "partitions": [{"partition_index": 0, "committed_offset": 7}]}
                ]
                body = {
                    "group_id": "g",
                    "generation_id_or_member_epoch": -1,
                    "member_id": "",
                    "topics": topics,
                }
                return client.request(ApiKey.OFFSET_COMMIT, 8, {"group_instance_id": None, **body})

            answer = await in_thread(port, commit)
            assert answer["topics"][0]["partitions"][0]["error_code"] == ErrorCode.NONE
            offsets_logs = [
                log for topic, _, log in broker.partitions.all_logs() if topic == "__consumer_offsets"
            ]
            written = [log for log in offsets_logs if log.log_end_offset > 0]
            assert len(written) == 1, "the commit went to the group's partition"
            assert written[0].synced_offset == written[0].log_end_offset, "synced before it was answered"


async def test_the_coordinators_unawaited_writes_become_visible(tmp_path: Path) -> None:
    """A group's metadata record (written when a member joins) has no request waiting for its
    sync; a round still covers it, so ``__consumer_offsets`` readers and its cleaner see it."""
    with trio.fail_after(DEADLINE_S):
        async with running_broker(tmp_path, **{"log.flush.interval.messages": "1"}) as (broker, port):
            await create_topic(port, "joined")

            def join_and_leave() -> None:
                # No auto-commit: no OffsetCommit, so nothing waits for a round.
                settings = ConsumerSettings(group="members")
                with KafkaPythonDriver(f"127.0.0.1:{port}").consumer(settings) as consumer:
                    consumer.subscribe(["joined"])
                    while not consumer.assignment():
                        consumer.poll(500, 0.1)

            await trio.to_thread.run_sync(join_and_leave)
            written = [
                log
                for topic, _, log in broker.partitions.all_logs()
                if topic == "__consumer_offsets" and log.log_end_offset > 0
            ]
            assert written, "joining wrote the group's metadata"
            while any(log.high_watermark < log.log_end_offset for log in written):
                await trio.sleep(0.01)
            assert all(log.synced_offset == log.log_end_offset for log in written)


async def test_a_sync_process_killed_mid_round_is_replaced_and_the_round_completes(tmp_path: Path) -> None:
    """The sync process dies (SIGKILL) while a round waits for it: the broker starts another,
    which syncs the round again, and the produce is acknowledged with its data on disk."""
    with trio.fail_after(DEADLINE_S):
        async with running_broker(tmp_path, **{"log.flush.interval.messages": "1"}) as (broker, port):
            await create_topic(port, "survivor")
            log = partition_log(broker, "survivor")
            sync_process = broker.durability.sync_process
            first = sync_process.ensure_started()
            hold_syncs(broker)
            async with trio.open_nursery() as nursery:
                results: list[list[int]] = []

                async def producer() -> None:
                    results.append(await produce(port, "survivor", 1))

                nursery.start_soon(producer)
                while log.log_end_offset < 1:  # appended, its round is with the stopped process
                    await trio.sleep(0.01)
                os.kill(first, signal.SIGKILL)
            assert results == [[ErrorCode.NONE]]
            assert log.synced_offset == 1
            assert sync_process.ensure_started() != first
            assert await produce(port, "survivor", 2) == [ErrorCode.NONE] * 2
            assert log.synced_offset == 3


async def test_a_sync_process_that_died_while_idle_is_replaced(tmp_path: Path) -> None:
    with trio.fail_after(DEADLINE_S):
        async with running_broker(tmp_path, **{"log.flush.interval.messages": "1"}) as (broker, port):
            await create_topic(port, "again")
            assert await produce(port, "again", 1) == [ErrorCode.NONE]
            first = broker.durability.sync_process.ensure_started()
            os.kill(first, signal.SIGKILL)
            assert await produce(port, "again", 3) == [ErrorCode.NONE] * 3
            assert partition_log(broker, "again").synced_offset == 4
            assert broker.durability.sync_process.ensure_started() != first

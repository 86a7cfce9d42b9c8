"""The etcd client against real etcd: one member for the API, three for failover and watch resumes.

Every test works under its own key prefix, as the clusters are shared by the module.
"""

from __future__ import annotations

import uuid

import pytest
import trio

from broker.services.cluster.etcd_client import (
    Compare,
    Delete,
    EtcdClient,
    EtcdOutcomeUnknown,
    EtcdUnavailable,
    Get,
    KeyValue,
    Put,
    WatchCompacted,
    WatchEvent,
    WatchStream,
    parse_endpoints,
    prefix_end,
)
from compat_tests.kit.brokers import free_ports
from compat_tests.kit.etcd_cluster import EtcdCluster

TIMEOUT_S = 30
# Short, so that hung members are left quickly, but no shorter: an etcd write waits for fsyncs,
# which take a while on a busy machine.
REQUEST_TIMEOUT_S = 2.0
# For the clients that only write the keys a failover test watches: their answers are not under
# test, and on a busy machine an election after a member is killed or resumed holds writes longer.
WRITER_TIMEOUT_S = 15.0


def fresh_prefix() -> bytes:
    return f"/odradek-test/{uuid.uuid4().hex}/".encode()


def client_for(
    cluster: EtcdCluster, *members: int, request_timeout_s: float = REQUEST_TIMEOUT_S
) -> EtcdClient:
    """A client of the given members (all of them by default), in that order."""
    endpoints = cluster.endpoints
    chosen = [endpoints[i] for i in members] if members else endpoints
    return EtcdClient(chosen, request_timeout_s=request_timeout_s)


async def collect(events: WatchStream, count: int) -> list[WatchEvent]:
    """The next ``count`` events of a watch stream, whatever their batching."""
    seen: list[WatchEvent] = []
    async for batch in events:
        seen.extend(batch)
        if len(seen) >= count:
            return seen
    raise AssertionError(f"the watch ended after {len(seen)} of {count} events")


def test_parse_endpoints() -> None:
    assert parse_endpoints("etcd://h1:2379,h2:2379") == ["http://h1:2379", "http://h2:2379"]
    assert parse_endpoints("etcd://127.0.0.1:2379") == ["http://127.0.0.1:2379"]
    for bad in ("http://h1:2379", "etcd://", "etcd://h1", "etcd://h1:2379,", "etcd://h1:2379/path"):
        with pytest.raises(ValueError, match="etcd://host:port"):
            parse_endpoints(bad)


def test_prefix_end() -> None:
    assert prefix_end(b"/a/") == b"/a0"
    assert prefix_end(b"a\xff") == b"b"
    assert prefix_end(b"\xff\xff") == b"\0"
    assert prefix_end(b"") == b"\0"


async def test_put_get_prefix_delete(etcd_cluster: EtcdCluster) -> None:
    prefix = fresh_prefix()
    with trio.fail_after(TIMEOUT_S):
        async with client_for(etcd_cluster) as client:
            assert await client.get(prefix + b"missing") is None
            binary = bytes(range(256))
            first = await client.put(prefix + b"b", binary)
            second = await client.put(prefix + b"a", b"1")
            third = await client.put(prefix + b"a", b"2")
            await client.put(prefix[:-1] + b"0", b"just past the prefix")
            assert first < second < third

            kv = await client.get(prefix + b"a")
            assert kv == KeyValue(prefix + b"a", b"2", second, third, 2, 0)
            kvs, revision = await client.get_prefix(prefix)
            assert [(kv.key, kv.value) for kv in kvs] == [(prefix + b"a", b"2"), (prefix + b"b", binary)]
            assert revision > third

            deleted_at = await client.delete(prefix + b"a")
            assert deleted_at > revision
            assert await client.get(prefix + b"a") is None
            assert await client.delete(prefix + b"a") == deleted_at  # absent: nothing changes


async def test_create_if_absent_race_has_one_winner(etcd_cluster: EtcdCluster) -> None:
    key = fresh_prefix() + b"controller"
    results: dict[bytes, tuple[bool, list[list[KeyValue]]]] = {}

    async def contend(client: EtcdClient, me: bytes) -> None:
        result = await client.txn([Compare.create_revision(key, 0)], [Put(key, me)], [Get(key)])
        results[me] = (result.succeeded, result.gets)

    with trio.fail_after(TIMEOUT_S):
        async with client_for(etcd_cluster) as one, client_for(etcd_cluster) as two:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(contend, one, b"one")
                nursery.start_soon(contend, two, b"two")
            stored = await one.get(key)
    assert stored is not None
    winners = [me for me, (succeeded, _) in results.items() if succeeded]
    assert winners == [stored.value]
    loser = b"two" if winners == [b"one"] else b"one"
    succeeded, gets = results[loser]
    assert not succeeded
    assert gets == [[stored]]  # the failure branch read what the winner wrote
    assert results[stored.value][1] == []  # the success branch had no Get


async def test_compare_and_swap(etcd_cluster: EtcdCluster) -> None:
    key = fresh_prefix() + b"partition"
    with trio.fail_after(TIMEOUT_S):
        async with client_for(etcd_cluster) as client:
            await client.put(key, b"epoch 1")
            read = await client.get(key)
            assert read is not None
            await client.put(key, b"epoch 2 by someone else")

            stale = await client.txn([Compare.mod_revision(key, read.mod_revision)], [Put(key, b"stale")])
            assert not stale.succeeded
            current = await client.get(key)
            assert current is not None and current.value == b"epoch 2 by someone else"

            swapped = await client.txn(
                [Compare.mod_revision(key, current.mod_revision)],
                [Put(key, b"epoch 3"), Get(key)],
            )
            assert swapped.succeeded
            assert [[kv.value for kv in kvs] for kvs in swapped.gets] == [[b"epoch 3"]]
            assert swapped.gets[0][0].mod_revision == swapped.revision

            assert not (await client.txn([Compare.create_revision(key, 0)], [Delete(key)])).succeeded
            created = Compare.create_revision(key, read.create_revision)
            assert (await client.txn([created], [Delete(key)])).succeeded
            assert await client.get(key) is None


async def put_leased(client: EtcdClient, key: bytes, ttl_s: int) -> int:
    """Puts ``key`` under a new lease of ``ttl_s`` seconds; returns the lease."""
    lease = await client.lease_grant(ttl_s)
    await client.put(key, b"alive", lease=lease)
    stored = await client.get(key)
    assert stored is not None and stored.lease == lease
    return lease


async def test_lease_expiry_removes_its_keys(etcd_cluster: EtcdCluster) -> None:
    key = fresh_prefix() + b"broker"
    with trio.fail_after(TIMEOUT_S):
        async with client_for(etcd_cluster) as client:
            lease = await put_leased(client, key, ttl_s=1)
            assert await client.lease_keepalive(lease) >= 1
            while await client.get(key) is not None:  # no more keep-alives: the lease expires
                await trio.sleep(0.1)
            assert await client.lease_keepalive(lease) == 0


async def test_lease_revoke_deletes_its_keys_at_once(etcd_cluster: EtcdCluster) -> None:
    key = fresh_prefix() + b"broker"
    with trio.fail_after(TIMEOUT_S):
        async with client_for(etcd_cluster) as client:
            lease = await put_leased(client, key, ttl_s=60)
            await client.lease_revoke(lease)
            assert await client.get(key) is None
            assert await client.lease_keepalive(lease) == 0
            await client.lease_revoke(lease)  # already gone: no error


async def test_watch_delivers_changes_in_order_from_a_revision(etcd_cluster: EtcdCluster) -> None:
    prefix = fresh_prefix()
    with trio.fail_after(TIMEOUT_S):
        async with client_for(etcd_cluster) as client:
            await client.put(prefix + b"before", b"not watched")
            start = await client.put(prefix + b"a", b"1")
            await client.put(prefix + b"a", b"2")
            await client.delete(prefix + b"a")
            await client.put(prefix[:-1] + b"0", b"outside the prefix")
            async with client.watch_prefix(prefix, start) as events:
                history = await collect(events, 3)
                await client.put(prefix + b"b", b"live")
                live = await collect(events, 1)
    assert [(e.kind, e.kv.key, e.kv.value) for e in history] == [
        ("PUT", prefix + b"a", b"1"),
        ("PUT", prefix + b"a", b"2"),
        ("DELETE", prefix + b"a", b""),
    ]
    assert [e.kv.mod_revision for e in history] == [start, start + 1, start + 2]
    assert [(e.kind, e.kv.key, e.kv.value, e.kv.version) for e in live] == [
        ("PUT", prefix + b"b", b"live", 1)
    ]


async def test_watch_from_a_compacted_revision_raises(etcd_cluster: EtcdCluster) -> None:
    key = fresh_prefix() + b"k"
    with trio.fail_after(TIMEOUT_S):
        async with client_for(etcd_cluster) as client:
            old = await client.put(key, b"1")
            latest = await client.put(key, b"2")
            await client.compact(latest)
            with pytest.raises(WatchCompacted) as raised:
                async with client.watch_prefix(key, old) as events:
                    await collect(events, 1)
    assert raised.value.compact_revision == latest


async def test_unavailable_when_nothing_listens() -> None:
    endpoints = [f"http://127.0.0.1:{port}" for port in free_ports(2)]
    with trio.fail_after(5):
        client = EtcdClient(endpoints, request_timeout_s=REQUEST_TIMEOUT_S)
        with pytest.raises(EtcdUnavailable) as raised:
            await client.connect()
    for endpoint in endpoints:
        assert endpoint in str(raised.value)
    assert "Check that etcd runs" in str(raised.value)


async def test_failover_past_a_dead_member(etcd_cluster3: EtcdCluster) -> None:
    key = fresh_prefix() + b"k"
    with trio.fail_after(TIMEOUT_S):
        await trio.to_thread.run_sync(etcd_cluster3.kill, 0)
        try:
            await trio.to_thread.run_sync(etcd_cluster3.wait_healthy, 1)
            async with client_for(etcd_cluster3) as client:  # member 0, the dead one, comes first
                revision = await client.put(key, b"written")
                stored = await client.get(key)
                assert stored is not None and stored.mod_revision == revision
        finally:
            await trio.to_thread.run_sync(etcd_cluster3.restart, 0)


async def test_hung_member_reads_fail_over_and_writes_report_unknown_outcome(
    etcd_cluster3: EtcdCluster,
) -> None:
    key = fresh_prefix() + b"k"
    with trio.fail_after(TIMEOUT_S):
        async with client_for(etcd_cluster3) as client:
            hung = etcd_cluster3.endpoints.index(client.current_endpoint)
            etcd_cluster3.pause(hung)
            try:
                await trio.to_thread.run_sync(etcd_cluster3.wait_healthy, (hung + 1) % 3)
                with pytest.raises(EtcdOutcomeUnknown, match=etcd_cluster3.endpoints[hung]):
                    await client.put(key, b"maybe")  # sent to the hung member, which never answers
                await client.put(key, b"surely")  # the next write starts at the next member
                stored = await client.get(key)
            finally:
                await trio.to_thread.run_sync(etcd_cluster3.resume, hung)
    assert stored is not None and stored.value == b"surely"


async def test_watch_resumes_without_loss_when_its_member_dies(etcd_cluster3: EtcdCluster) -> None:
    prefix = fresh_prefix()
    keys = [prefix + b"%d" % i for i in range(6)]
    with trio.fail_after(TIMEOUT_S):
        async with (
            client_for(etcd_cluster3, 0, 1, 2) as watcher,
            client_for(etcd_cluster3, 1, 2, request_timeout_s=WRITER_TIMEOUT_S) as writer,
        ):
            start = await writer.put(keys[0], b"v")
            async with watcher.watch_prefix(prefix, start) as events:
                assert [e.kv.key for e in await collect(events, 1)] == keys[:1]
                await trio.to_thread.run_sync(etcd_cluster3.kill, 0)  # the member streaming the watch
                try:
                    await trio.to_thread.run_sync(etcd_cluster3.wait_healthy, 1)
                    for key in keys[1:]:
                        await writer.put(key, b"v")
                    resumed = await collect(events, len(keys) - 1)
                finally:
                    await trio.to_thread.run_sync(etcd_cluster3.restart, 0)
    assert [e.kv.key for e in resumed] == keys[1:]
    assert [e.kv.mod_revision for e in resumed] == list(range(start + 1, start + len(keys)))


async def test_watch_leaves_a_hung_member(etcd_cluster3: EtcdCluster) -> None:
    """A member that stops answering keeps its socket open: only the probe of the silent stream notices."""
    prefix = fresh_prefix()
    with trio.fail_after(TIMEOUT_S):
        async with (
            client_for(etcd_cluster3, 0, 1, 2) as watcher,
            client_for(etcd_cluster3, 1, 2, request_timeout_s=WRITER_TIMEOUT_S) as writer,
        ):
            start = await writer.put(prefix + b"a", b"1")
            async with watcher.watch_prefix(prefix, start) as events:
                assert len(await collect(events, 1)) == 1
                etcd_cluster3.pause(0)
                try:
                    await trio.to_thread.run_sync(etcd_cluster3.wait_healthy, 1)
                    written = await writer.put(prefix + b"b", b"2")
                    resumed = await collect(events, 1)
                finally:
                    await trio.to_thread.run_sync(etcd_cluster3.resume, 0)
    assert [(e.kv.key, e.kv.mod_revision) for e in resumed] == [(prefix + b"b", written)]

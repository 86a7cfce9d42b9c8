"""A broker's registration: its record under an etcd lease, kept alive by heartbeats.

Liveness is the lease: if the broker stops heartbeating (dead, paused, cut off), etcd expires the
lease after ``broker.session.timeout.ms`` and its record vanishes; the controller then moves its
leaderships away.  A broker whose heartbeat is answered "lease expired" fences itself at once
(``on_fenced``: it leads nothing) and registers anew, as a new incarnation (Kafka's broker epoch);
its roles are then applied again from the metadata.

While etcd cannot be reached at all (lost quorum, or this broker cut off) the broker keeps
serving, as Kafka's brokers do without a controller: nothing that needs a metadata change can
happen, and that is what keeps acks=all safe -- a leader cut off from etcd cannot shrink the ISR
to itself, and the followers that moved to a new leader no longer advance its high watermark, so
it acknowledges no acks=all write a new leader could lose.
"""

from __future__ import annotations

import logging
import math
import uuid
from collections.abc import Callable

import trio

from broker.services.cluster.cluster_metadata import ClusterMetadata
from broker.services.cluster.etcd_client import EtcdError
from broker.services.cluster.layout import BrokerRecord, encode

log = logging.getLogger(__name__)


class Membership:
    """Registers ``record_of()`` under a lease and heartbeats it."""

    def __init__(
        self,
        metadata: ClusterMetadata,
        record_of: Callable[[str], BrokerRecord],
        session_timeout_ms: int,
        heartbeat_interval_ms: int,
        on_fenced: Callable[[], None],
        on_registered: Callable[[], None],
    ) -> None:
        self._metadata = metadata
        self._record_of = record_of
        self._ttl_s = max(1, math.ceil(session_timeout_ms / 1000))
        self._heartbeat_s = max(0.05, heartbeat_interval_ms / 1000)
        self._on_fenced = on_fenced
        self._on_registered = on_registered
        self.lease_id = 0
        self.incarnation = ""
        self.registered = trio.Event()

    async def register(self) -> None:
        """Take a new lease and write this broker's record under it, replacing the record a
        previous run left (its lease is revoked so it cannot expire the new record)."""
        client, key = self._metadata.client, self._metadata.layout.broker(self._record_of("").node_id)
        lease = await client.lease_grant(self._ttl_s)
        previous = await client.get(key)
        if previous is not None and previous.lease and previous.lease != lease:
            try:
                await client.lease_revoke(previous.lease)
            except EtcdError as exc:
                log.info("the previous registration's lease is already gone (%s)", exc)
        self.incarnation = uuid.uuid4().hex
        revision = await client.put(key, encode(self._record_of(self.incarnation)), lease=lease)
        self.lease_id = lease
        await self._metadata.caught_up(revision)
        self.registered.set()
        self._on_registered()
        log.info(
            "registered in the cluster as incarnation %s (lease ttl %d s)", self.incarnation, self._ttl_s
        )

    async def reannounce(self) -> None:
        """Write this broker's record again under its lease (it changed: a controlled shutdown)."""
        if not self.lease_id:
            return
        client, key = self._metadata.client, self._metadata.layout.broker(self._record_of("").node_id)
        revision = await client.put(key, encode(self._record_of(self.incarnation)), lease=self.lease_id)
        await self._metadata.caught_up(revision)

    async def leave(self) -> None:
        """Revoke the lease, so the record vanishes now rather than a session timeout later
        (call once heartbeats have stopped, or they would register the broker again)."""
        if self.lease_id:
            await self._metadata.client.lease_revoke(self.lease_id)
            self.lease_id = 0

    async def run(self) -> None:
        """Heartbeat until cancelled; fence and re-register when the lease is lost."""
        unreachable_since: float | None = None
        while True:
            await trio.sleep(self._heartbeat_s)
            try:
                if not self.lease_id or await self._metadata.client.lease_keepalive(self.lease_id) <= 0:
                    log.error("this broker's cluster lease expired; fencing and registering again")
                    self._fence()
                    await self.register()
                if unreachable_since is not None:
                    log.warning("etcd answers again after %.1f s", trio.current_time() - unreachable_since)
                    unreachable_since = None
            except EtcdError as exc:
                if unreachable_since is None:
                    unreachable_since = trio.current_time()
                    log.error(
                        "etcd unreachable (%s): serving on without metadata changes, enforcing the "
                        "ACLs, credentials, quotas and configs last seen",
                        exc,
                    )

    def _fence(self) -> None:
        if self.registered.is_set():
            self.registered = trio.Event()
            self.lease_id = 0
            self._on_fenced()

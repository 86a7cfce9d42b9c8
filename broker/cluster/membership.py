"""A broker's registration: its record under an etcd lease, kept alive by heartbeats.

Liveness is the lease: if the broker stops heartbeating (dead, paused, cut off), etcd expires the
lease after ``broker.session.timeout.ms`` and its record vanishes; the controller then moves its
leaderships away.  The broker fences itself first: when no heartbeat has succeeded for the session
timeout less one heartbeat interval, it stops acting as a leader (``on_fenced``), because by the
time etcd expires the lease another broker may lead its partitions.  When etcd answers again it
registers anew, as a new incarnation (Kafka's broker epoch).
"""

from __future__ import annotations

import logging
import math
import uuid
from collections.abc import Callable

import trio

from broker.cluster.etcd_client import EtcdError
from broker.cluster.layout import BrokerRecord, encode
from broker.cluster.metadata import ClusterMetadata

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
        # Fence before etcd could expire the lease: the last heartbeat etcd saw was sent no
        # earlier than the last one answered, so its expiry is at least ttl after that.
        self._fence_after_s = max(self._heartbeat_s, self._ttl_s - self._heartbeat_s)
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

    async def run(self) -> None:
        """Heartbeat until cancelled; fence and re-register when the lease is lost."""
        last_ok = trio.current_time()
        while True:
            await trio.sleep(self._heartbeat_s)
            try:
                if self.lease_id and await self._metadata.client.lease_keepalive(self.lease_id) > 0:
                    last_ok = trio.current_time()
                    continue
                log.error("this broker's cluster lease expired; fencing and registering again")
                self._fence()
                await self.register()
                last_ok = trio.current_time()
            except EtcdError as exc:
                if self.registered.is_set() and trio.current_time() - last_ok > self._fence_after_s:
                    log.error(
                        "no heartbeat reached etcd for %.1f s (%s): fencing",
                        trio.current_time() - last_ok,
                        exc,
                    )
                    self._fence()

    def _fence(self) -> None:
        if self.registered.is_set():
            self.registered = trio.Event()
            self.lease_id = 0
            self._on_fenced()

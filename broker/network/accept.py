"""Accepting connections without letting descriptor exhaustion or floods take the broker down.

``accept()`` fails with EMFILE/ENFILE when the process or system runs out of descriptors and
with ENOBUFS/ENOMEM under memory pressure.  Before, that exception tore down the listener's
nursery and the whole broker exited.  Like trio's own ``serve_listeners``, the loop now logs,
sleeps (starting at 0.1 s, doubling up to 1 s while the condition lasts) and tries again:
connections that already exist keep being served, and as soon as some close new ones are
accepted.  Errors about a single aborted connection (ECONNABORTED, EPROTO, ...) are skipped.

Connections over ``max.connections.per.ip`` are accepted and closed at once, so a refused
client learns promptly instead of waiting in the backlog; so are those over
``max.connections``, unless another address holds more than its share
(:class:`ConnectionLimits`).
"""

from __future__ import annotations

import errno
import logging
import resource
from collections.abc import Awaitable, Callable

import trio

from broker.network.stall_watch import StallWatch
from broker.services.rate_limited_log import RateLimitedLog

log = logging.getLogger(__name__)

OUT_OF_RESOURCES = {errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM}
CONNECTION_ABORTED = {errno.ECONNABORTED, errno.EPROTO, errno.EPERM, errno.ENETDOWN, errno.EHOSTUNREACH}
FIRST_BACKOFF_S = 0.1
MAX_BACKOFF_S = 1.0
# Descriptors kept aside from connections when max.connections is derived from the limit:
# the listeners, the log's directory handles, temporary files, the interpreter's own.
RESERVED_DESCRIPTORS = 64


def default_max_connections(open_files_max: int) -> int:
    """``max.connections`` when not configured: what the descriptor limit leaves for sockets.

    ``log.open.files.max`` takes its share (by default half the soft RLIMIT_NOFILE) and a
    margin is kept, so that running out of descriptors is met by refusing connections, not
    by failing to open a segment file.
    """
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        soft = 1 << 20
    for_logs = open_files_max if open_files_max > 0 else soft // 2
    return max(16, soft - for_logs - RESERVED_DESCRIPTORS)


class ConnectionSlot:
    """An admitted connection as the limits see it: its address, the cancel scope that ends it
    (whoever decides: the connection itself, or an eviction), and its stall watch once it reads
    requests, whose ``reading_since`` says when it was last active."""

    __slots__ = ("evicted", "ip", "scope", "stalls")

    def __init__(self, ip: str) -> None:
        self.ip = ip
        self.scope = trio.CancelScope()
        self.stalls: StallWatch | None = None
        self.evicted = False

    def last_active(self) -> float:
        """Trio time of its last request (or of the start of its wait for one); a connection
        still in its TLS handshake counts as the least recently active."""
        stalls = self.stalls
        if stalls is None or stalls.reading_since is None:
            return float("-inf")
        return stalls.reading_since


class ConnectionLimits:
    """Counts open connections in total and per client address.

    At ``max.connections``, a newcomer from an address that holds fewer connections than the
    most crowded one takes the place of that address's least recently active connection,
    instead of being refused: one address flooding the broker with idle connections cannot
    lock every other client out (Kafka closes the least recently used connection at its limit
    only for the inter-broker listener, KIP-402, and otherwise stops accepting).  A newcomer
    from the most crowded address itself is refused, as before.
    """

    def __init__(self, max_connections: int, max_per_ip: int) -> None:
        self.max_connections = max_connections
        self.max_per_ip = max_per_ip
        self.total = 0
        self._slots: dict[str, dict[ConnectionSlot, None]] = {}  # per address, in admission order
        self._evicting = RateLimitedLog(logging.WARNING, log)

    def connections_from(self, ip: str) -> int:
        return len(self._slots.get(ip, ()))

    def admit(self, ip: str) -> ConnectionSlot | None:
        """A slot for a new connection from ``ip``, or None if it must be refused."""
        if self.connections_from(ip) >= self.max_per_ip:
            return None
        if self.total >= self.max_connections and not self._make_room(ip):
            return None
        slot = ConnectionSlot(ip)
        self._slots.setdefault(ip, {})[slot] = None
        self.total += 1
        return slot

    def leave(self, slot: ConnectionSlot) -> None:
        if not slot.evicted:
            self._forget(slot)

    def _forget(self, slot: ConnectionSlot) -> None:
        self.total -= 1
        slots = self._slots[slot.ip]
        del slots[slot]
        if not slots:
            del self._slots[slot.ip]

    def _make_room(self, ip: str) -> bool:
        """Evict the least recently active connection of the most crowded address, if that is
        not ``ip`` and holds at least two more than ``ip`` (so the eviction evens things)."""
        crowded = max(self._slots, key=self.connections_from)
        if self.connections_from(crowded) < self.connections_from(ip) + 2:
            return False
        victim = min(self._slots[crowded], key=ConnectionSlot.last_active)
        victim.evicted = True
        self._forget(victim)
        victim.scope.cancel()
        self._evicting(
            "max.connections=%d reached: closing the least recently active of the %d connections "
            "from %s to admit one from %s",
            self.max_connections,
            self.connections_from(crowded) + 1,
            crowded,
            ip,
        )
        return True


ConnectionServer = Callable[[trio.socket.SocketType, str, str, ConnectionSlot], Awaitable[None]]
"""Serves one admitted connection: (socket, "ip:port" for logs, ip for ACL host matching, its
slot, whose cancel scope it must run in and whose stall watch it sets)."""


async def accept_loop(
    listen_sock: trio.socket.SocketType,
    limits: ConnectionLimits,
    nursery: trio.Nursery,
    serve: ConnectionServer,
    creation_throttle: Callable[[str], int],
) -> None:
    """Accept connections forever, admitting them within the limits; never raise on EMFILE.

    ``creation_throttle(ip)`` counts the connection against its address's
    ``connection_creation_rate`` quota: a connection over it is never served and, as Kafka
    does, closed only after the throttle time (ms; at most one quota window).
    """
    warn_exhausted = RateLimitedLog(logging.ERROR, log)
    warn_refused = RateLimitedLog(logging.WARNING, log)
    backoff = FIRST_BACKOFF_S
    while True:
        try:
            conn, address = await listen_sock.accept()
        except OSError as exc:
            if exc.errno in CONNECTION_ABORTED:
                continue
            if exc.errno not in OUT_OF_RESOURCES:
                raise
            warn_exhausted(
                "cannot accept connections: %s; raise ulimit -n or lower max.connections "
                "(retrying, existing connections are still served)",
                exc.strerror,
            )
            await trio.sleep(backoff)
            backoff = min(MAX_BACKOFF_S, backoff * 2)
            continue
        backoff = FIRST_BACKOFF_S
        ip = address[0]
        throttle_ms = creation_throttle(ip)
        if throttle_ms:
            nursery.start_soon(_close_after, conn, throttle_ms / 1000)
            continue
        slot = limits.admit(ip)
        if slot is None:
            warn_refused(
                "refusing connection from %s: %d connections open (max.connections=%d, "
                "max.connections.per.ip=%d)",
                ip,
                limits.total,
                limits.max_connections,
                limits.max_per_ip,
            )
            conn.close()
            continue
        nursery.start_soon(_run_admitted, conn, f"{ip}:{address[1]}", slot, limits, serve)


async def _run_admitted(
    conn: trio.socket.SocketType,
    peer: str,
    slot: ConnectionSlot,
    limits: ConnectionLimits,
    serve: ConnectionServer,
) -> None:
    try:
        await serve(conn, peer, slot.ip, slot)
    finally:
        limits.leave(slot)


async def _close_after(conn: trio.socket.SocketType, seconds: float) -> None:
    try:
        await trio.sleep(seconds)
    finally:
        conn.close()

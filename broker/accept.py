"""Accepting connections without letting descriptor exhaustion or floods take the broker down.

``accept()`` fails with EMFILE/ENFILE when the process or system runs out of descriptors and
with ENOBUFS/ENOMEM under memory pressure.  Before, that exception tore down the listener's
nursery and the whole broker exited.  Like trio's own ``serve_listeners``, the loop now logs,
sleeps (starting at 0.1 s, doubling up to 1 s while the condition lasts) and tries again:
connections that already exist keep being served, and as soon as some close new ones are
accepted.  Errors about a single aborted connection (ECONNABORTED, EPROTO, ...) are skipped.

Connections over ``max.connections`` or ``max.connections.per.ip`` are accepted and closed at
once, so a refused client learns promptly instead of waiting in the backlog.
"""

from __future__ import annotations

import errno
import logging
import resource
import time
from collections import Counter
from collections.abc import Awaitable, Callable

import trio

log = logging.getLogger(__name__)

OUT_OF_RESOURCES = {errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM}
CONNECTION_ABORTED = {errno.ECONNABORTED, errno.EPROTO, errno.EPERM, errno.ENETDOWN, errno.EHOSTUNREACH}
FIRST_BACKOFF_S = 0.1
MAX_BACKOFF_S = 1.0
LOG_EVERY_S = 10.0
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


class RateLimitedLog:
    """Log a recurring condition at most once per LOG_EVERY_S, counting what was suppressed."""

    def __init__(self, level: int, logger: logging.Logger = log) -> None:
        self._level = level
        self._log = logger
        self._last = -LOG_EVERY_S
        self._suppressed = 0

    def __call__(self, message: str, *args: object) -> None:
        now = time.monotonic()
        if now - self._last < LOG_EVERY_S:
            self._suppressed += 1
            return
        suffix = f" ({self._suppressed} similar messages suppressed)" if self._suppressed else ""
        self._log.log(self._level, message + suffix, *args)
        self._last, self._suppressed = now, 0


class ConnectionLimits:
    """Counts open connections in total and per client address."""

    def __init__(self, max_connections: int, max_per_ip: int) -> None:
        self.max_connections = max_connections
        self.max_per_ip = max_per_ip
        self.total = 0
        self.per_ip: Counter[str] = Counter()

    def admit(self, ip: str) -> bool:
        if self.total >= self.max_connections or self.per_ip[ip] >= self.max_per_ip:
            return False
        self.total += 1
        self.per_ip[ip] += 1
        return True

    def leave(self, ip: str) -> None:
        self.total -= 1
        self.per_ip[ip] -= 1
        if not self.per_ip[ip]:
            del self.per_ip[ip]


ConnectionServer = Callable[[trio.socket.SocketType, str, str], Awaitable[None]]
"""Serves one admitted connection: (socket, "ip:port" for logs, ip for ACL host matching)."""


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
    warn_exhausted = RateLimitedLog(logging.ERROR)
    warn_refused = RateLimitedLog(logging.WARNING)
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
        if not limits.admit(ip):
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
        nursery.start_soon(_run_admitted, conn, f"{ip}:{address[1]}", ip, limits, serve)


async def _run_admitted(
    conn: trio.socket.SocketType, peer: str, ip: str, limits: ConnectionLimits, serve: ConnectionServer
) -> None:
    try:
        await serve(conn, peer, ip)
    finally:
        limits.leave(ip)


async def _close_after(conn: trio.socket.SocketType, seconds: float) -> None:
    try:
        await trio.sleep(seconds)
    finally:
        conn.close()

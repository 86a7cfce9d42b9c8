"""Cancelling requests whose client has gone away while the broker was still working on them.

A Fetch with a large ``max_wait_ms`` (or a JoinGroup waiting for a rebalance) parks its
connection's task; if the client disconnects meanwhile, nothing reads the socket, so before
this module the descriptor stayed open until the wait ended: 200 abandoned long polls held
200 descriptors, and a fuzz run left hundreds behind.

Watching every request would cost a system call per request on the produce/fetch hot path,
so instead one broker-wide task looks, every ``CHECK_INTERVAL_S``, only at requests that have
been in flight for at least that long, and asks the kernel about all their sockets with a
single ``poll``.  ``POLLRDHUP`` reports the peer's shutdown even when unread pipelined bytes
are pending (a ``recv(MSG_PEEK)`` would see those bytes instead of the end of the stream);
``POLLHUP``/``POLLERR`` cover resets.  A closed peer's request is cancelled and its
connection closed, which also releases any file descriptors its response held.  A client
that only shuts down its sending side counts as gone too: Kafka's selector closes a
connection on end of stream as well, so no Kafka client expects an answer after that.

Cancelling is safe for every handler: the coordinator answers through callbacks (a
cancelled waiter just leaves its answer unread), Fetch attaches its file regions after its
last ``await``, and fsyncs run in threads that trio does not abandon.
"""

from __future__ import annotations

import logging
import select

import trio

log = logging.getLogger(__name__)
CHECK_INTERVAL_S = 0.5
_PEER_GONE = select.POLLRDHUP | select.POLLHUP | select.POLLERR


class PeerWatch:
    """Registry of in-flight requests: each connection's socket, the cancel scope that ends the
    connection, and when its request began."""

    def __init__(self) -> None:
        self._in_flight: dict[int, tuple[trio.CancelScope, float, str]] = {}

    def begin(self, fd: int, connection: trio.CancelScope, peer: str) -> None:
        """A request of the connection on socket ``fd`` is being handled and answered; if its
        peer closes meanwhile, ``connection`` is cancelled (the connection ends: nobody is left
        to answer).  A dictionary insert, no system call and no cancel scope of its own: the
        connection's scope serves every request."""
        self._in_flight[fd] = (connection, trio.current_time(), peer)

    def end(self, fd: int) -> None:
        """The request of ``fd`` was answered (or failed)."""
        del self._in_flight[fd]

    def cancel_abandoned(self, older_than: float) -> int:
        """Cancel the connections whose request began before ``older_than`` and whose peer has
        closed; returns how many."""
        poller = select.poll()
        long_running = {fd: entry for fd, entry in self._in_flight.items() if entry[1] <= older_than}
        for fd in long_running:
            poller.register(fd, _PEER_GONE)
        cancelled = 0
        for fd, events in poller.poll(0):
            if events & _PEER_GONE:
                connection, _started, peer = long_running[fd]
                log.debug("%s closed its connection while its request was in flight; cancelled it", peer)
                connection.cancel()
                cancelled += 1
        return cancelled

    async def run(self) -> None:
        """The broker-wide watcher: a poll of long-running requests every CHECK_INTERVAL_S."""
        while True:
            await trio.sleep(CHECK_INTERVAL_S)
            if self._in_flight:
                self.cancel_abandoned(trio.current_time() - CHECK_INTERVAL_S)

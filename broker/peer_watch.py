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

import select
from types import TracebackType

import trio

CHECK_INTERVAL_S = 0.5
_PEER_GONE = select.POLLRDHUP | select.POLLHUP | select.POLLERR


class PeerWatch:
    """Registry of in-flight requests, each with the cancel scope that abandons it."""

    def __init__(self) -> None:
        self._in_flight: dict[int, tuple[trio.CancelScope, float]] = {}

    def request_in_flight(self, sock: trio.socket.SocketType) -> InFlight:
        """Run the body (handling and answering one request) cancellable by a peer close.

        Costs a dictionary insert and delete per request; no system call.
        """
        return InFlight(self._in_flight, sock.fileno())

    def cancel_abandoned(self, older_than: float) -> int:
        """Cancel requests started before ``older_than`` whose peer has closed; returns how many."""
        poller = select.poll()
        long_running = {
            fd: scope for fd, (scope, started) in self._in_flight.items() if started <= older_than
        }
        for fd in long_running:
            poller.register(fd, _PEER_GONE)
        cancelled = 0
        for fd, events in poller.poll(0):
            if events & _PEER_GONE:
                long_running[fd].cancel()
                cancelled += 1
        return cancelled

    async def run(self) -> None:
        """The broker-wide watcher: a poll of long-running requests every CHECK_INTERVAL_S."""
        while True:
            await trio.sleep(CHECK_INTERVAL_S)
            if self._in_flight:
                self.cancel_abandoned(trio.current_time() - CHECK_INTERVAL_S)


class InFlight:
    """One request's entry in the registry while its body runs in the scope that abandons it
    (a class, not a generator context manager: it is entered for every request)."""

    __slots__ = ("_registry", "_fd", "_scope")

    def __init__(self, registry: dict[int, tuple[trio.CancelScope, float]], fd: int) -> None:
        self._registry, self._fd, self._scope = registry, fd, trio.CancelScope()

    def __enter__(self) -> trio.CancelScope:
        self._registry[self._fd] = (self._scope, trio.current_time())
        return self._scope.__enter__()

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> bool:
        try:
            return self._scope.__exit__(kind, error, trace)
        finally:
            del self._registry[self._fd]

"""One client connection: read a request, handle it, answer it — in request order, as Kafka does.

Kafka mutes a connection while one of its requests is in flight, so responses come back in
request order and a client may pipeline freely.  Odradek handles requests one at a time too,
but does not wait for an answer that is only waiting on the disk: a Produce whose appends are
done and that waits for its fsync round (``flush.messages``) lets the connection handle the
client's next requests meanwhile, so a pipelining producer's requests share one round instead
of paying one each.  Answers still leave in request order.  Whatever a client sends, the
worst outcome is its own connection being closed: errors are contained here and never reach
the listener or other connections.
"""

from __future__ import annotations

import errno
import logging
import os
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import trio

from broker.dispatch import Answer, CloseConnection, DeferredAnswer, HandlerFailed, describe_request, dispatch
from broker.file_region import FileRegion
from broker.frames import FrameError, FrameReader
from broker.memory_budget import RequestTooLarge
from wire.errors import WireError
from wire.header import RequestHeader

if TYPE_CHECKING:
    from broker.server import Broker

log = logging.getLogger(__name__)


async def send_all(sock: trio.socket.SocketType, parts: list[Any]) -> None:
    """Write a response: in-memory parts coalesced into few sends, file regions by sendfile.

    Encoders produce many small parts; joining runs of them keeps the system call count low
    (and within the kernel's iovec limit), while record batches on disk never pass through
    Python.
    """
    pending: list[Any] = []
    for part in parts:
        if isinstance(part, FileRegion):
            if pending:
                await _send_buffer(sock, b"".join(pending))
                pending = []
            await _send_file(sock, part)
        else:
            pending.append(part)
    if pending:
        await _send_buffer(sock, b"".join(pending))


async def _send_buffer(sock: trio.socket.SocketType, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[await sock.send(view) :]


async def _send_file(sock: trio.socket.SocketType, region: FileRegion) -> None:
    offset, remaining = region.offset, region.length
    while remaining:
        try:
            sent = os.sendfile(sock.fileno(), region.fd, offset, remaining)
        except BlockingIOError:
            await trio.lowlevel.wait_writable(sock)
            continue
        if sent == 0:
            raise OSError(f"segment file ended {remaining} bytes before the fetched range")
        offset += sent
        remaining -= sent
        await trio.lowlevel.checkpoint_if_cancelled()


def close_regions(parts: list[Any]) -> None:
    """Release the file descriptors a response held (sent or not)."""
    for part in parts:
        if isinstance(part, FileRegion):
            part.close()


# The peer went away or reset the connection: routine, logged at DEBUG only.
PEER_GONE_ERRNOS = frozenset(
    {errno.ECONNRESET, errno.EPIPE, errno.ENOTCONN, errno.ETIMEDOUT, errno.ECONNABORTED, errno.EHOSTUNREACH}
)


def _is_peer_gone(exc: BaseException) -> bool:
    if isinstance(exc, (trio.BrokenResourceError, trio.ClosedResourceError)):
        return True
    return isinstance(exc, OSError) and exc.errno in PEER_GONE_ERRNOS


# Answers a connection may hold that wait for a durability round while its next requests are
# handled; past this the connection stops reading until the oldest is sent.  Clients pipeline
# at most 5 (librdkafka, Java) by default, so this only bounds what a hostile one can queue.
MAX_WAITING_ANSWERS = 32


class _Connection:
    """One client's requests, handled one at a time, answered in order.

    The reader handles a request and, while no earlier answer is still waiting, sends its
    answer itself: the common case costs no task switch.  An answer that must wait
    (``DeferredAnswer``, a Produce waiting for its fsync round) goes to the writer task, and
    every later answer queues behind it, so responses stay in request order while the reader
    goes on appending the next requests.
    """

    def __init__(self, broker: Broker, sock: trio.socket.SocketType, peer: str) -> None:
        config = broker.config
        self.broker, self.sock, self.peer = broker, sock, peer
        self.reader = FrameReader(
            sock,
            config.get_int("socket.request.max.bytes"),
            broker.request_memory,
            config.get_int("socket.request.read.timeout.ms") / 1000,
        )
        self.idle_seconds = config.get_int("connections.max.idle.ms") / 1000
        self.sending: RequestHeader | None = None  # whose response is being written, for the error log
        self.queued = 0  # answers handed to the writer and not yet sent
        self.to_writer, self.from_reader = trio.open_memory_channel[tuple[RequestHeader, Answer]](
            MAX_WAITING_ANSWERS
        )

    async def read_requests(self) -> None:
        broker, reader = self.broker, self.reader
        self.sock.setsockopt(trio.socket.IPPROTO_TCP, trio.socket.TCP_NODELAY, 1)
        while True:
            with trio.move_on_after(self.idle_seconds) as idle:
                size = await reader.next_size()
            if idle.cancelled_caught:
                log.info("closing idle connection from %s", self.peer)
                return
            if size is None:
                return
            frame = await reader.read_body(size)
            with broker.peer_watch.request_in_flight(self.sock) as abandoned:
                try:
                    header, answer = await dispatch(broker, frame, self.peer)
                finally:
                    broker.request_memory.release(size)
                    del frame
                if self.queued or isinstance(answer, DeferredAnswer):
                    self.queued += 1
                    await self.to_writer.send((header, answer))
                elif answer is not None and not await self.send(header, answer):
                    return
            if abandoned.cancelled_caught:
                log.debug("%s closed its connection while its request was in flight; cancelled it", self.peer)
                return

    async def write_answers(self) -> None:
        async for header, answer in self.from_reader:
            parts = await answer.parts() if isinstance(answer, DeferredAnswer) else answer
            if parts is not None and not await self.send(header, parts):
                return
            self.queued -= 1

    async def send(self, header: RequestHeader, parts: list[Any]) -> bool:
        """Write one response; False if the client stopped reading (the connection must close)."""
        self.sending = header
        try:
            with trio.move_on_after(self.idle_seconds) as stuck:
                await send_all(self.sock, parts)
        finally:
            close_regions(parts)
        self.sending = None
        if stuck.cancelled_caught:
            log.info("closing connection from %s: it stopped reading its responses", self.peer)
        return not stuck.cancelled_caught

    async def guarded(self, work: Callable[[], Awaitable[None]], scope: trio.CancelScope) -> None:
        """Run the reader or the writer; whichever ends (or fails) ends the connection.

        A failure is logged here, where it is caught, and never kept: a stored exception would
        keep its traceback's frames alive, and with them the buffers of a half-received frame.
        """
        try:
            await work()
        except HandlerFailed:
            pass  # dispatch logged it at ERROR with the request's details
        except (FrameError, CloseConnection, WireError, RequestTooLarge) as exc:
            log.warning("closing connection from %s: %s", self.peer, exc)
        except Exception as exc:
            if _is_peer_gone(exc):
                log.debug("connection from %s lost: %s", self.peer, exc)
            else:
                sending = self.sending
                answering = (
                    f"the response to {describe_request(sending, self.peer)}" if sending else "no response"
                )
                log.error(
                    "closing connection from %s after %r while sending %s",
                    self.peer,
                    exc,
                    answering,
                    exc_info=exc,
                )
        finally:
            scope.cancel()


async def serve_connection(broker: Broker, sock: trio.socket.SocketType, peer: str) -> None:
    """Serve one connection until the peer leaves, misbehaves or idles out.

    Time bounds: waiting for a request is limited by ``connections.max.idle.ms``, receiving
    one by ``socket.request.read.timeout.ms``, and writing a response to a client that stops
    reading by ``connections.max.idle.ms`` again.  A request whose client closes while it is
    handled or answered is cancelled (:mod:`broker.peer_watch`).

    Logging: expected disconnects are DEBUG; a client breaking the protocol is WARNING; any
    other failure is ERROR exactly once — handler failures are logged by ``dispatch`` with the
    request they belong to, socket failures by ``_Connection.guarded`` with the request being
    answered.
    """
    connection = _Connection(broker, sock, peer)
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(connection.guarded, connection.write_answers, nursery.cancel_scope)
            await connection.guarded(connection.read_requests, nursery.cancel_scope)
    finally:
        sock.close()

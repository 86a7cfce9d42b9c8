"""One client connection: read a request, answer it, repeat — in order, as Kafka does.

Kafka mutes a connection while one of its requests is in flight, so responses come back in
request order and a client may pipeline freely; a single task per connection gives exactly
that.  Whatever a client sends, the worst outcome is its own connection being closed:
errors are contained here and never reach the listener or other connections.
"""

from __future__ import annotations

import errno
import logging
import os
from typing import TYPE_CHECKING, Any

import trio

from broker.dispatch import CloseConnection, HandlerFailed, describe_request, dispatch
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


async def serve_connection(broker: Broker, sock: trio.socket.SocketType, peer: str) -> None:
    """Serve one connection until the peer leaves, misbehaves or idles out.

    Time bounds: waiting for a request is limited by ``connections.max.idle.ms``, receiving
    one by ``socket.request.read.timeout.ms``, and writing a response to a client that stops
    reading by ``connections.max.idle.ms`` again.  A request whose client closes while it is
    handled or answered is cancelled (:mod:`broker.peer_watch`).

    Logging: expected disconnects are DEBUG; a client breaking the protocol is WARNING; any
    other failure is ERROR exactly once — handler failures are logged by ``dispatch`` with the
    request they belong to, socket failures here with the request being answered.
    """
    config = broker.config
    reader = FrameReader(
        sock,
        config.get_int("socket.request.max.bytes"),
        broker.request_memory,
        config.get_int("socket.request.read.timeout.ms") / 1000,
    )
    idle_seconds = config.get_int("connections.max.idle.ms") / 1000
    sending: RequestHeader | None = None  # whose response is being written, for the error log
    try:
        sock.setsockopt(trio.socket.IPPROTO_TCP, trio.socket.TCP_NODELAY, 1)
        while True:
            with trio.move_on_after(idle_seconds) as idle:
                size = await reader.next_size()
            if idle.cancelled_caught:
                log.info("closing idle connection from %s", peer)
                return
            if size is None:
                return
            frame = await reader.read_body(size)
            with broker.peer_watch.request_in_flight(sock) as abandoned:
                try:
                    header, response = await dispatch(broker, frame, peer)
                finally:
                    broker.request_memory.release(size)
                    del frame
                if response is not None:
                    sending = header
                    try:
                        with trio.move_on_after(idle_seconds) as stuck:
                            await send_all(sock, response)
                    finally:
                        close_regions(response)
                    sending = None
                    if stuck.cancelled_caught:
                        log.info("closing connection from %s: it stopped reading its responses", peer)
                        return
            if abandoned.cancelled_caught:
                log.debug("%s closed its connection while its request was in flight; cancelled it", peer)
                return
    except HandlerFailed:
        pass  # dispatch logged it at ERROR with the request's details
    except (FrameError, CloseConnection, WireError, RequestTooLarge) as exc:
        log.warning("closing connection from %s: %s", peer, exc)
    except Exception as exc:
        if _is_peer_gone(exc):
            log.debug("connection from %s lost: %s", peer, exc)
        else:
            answering = f"the response to {describe_request(sending, peer)}" if sending else "no response"
            log.error(
                "closing connection from %s after %r while sending %s", peer, exc, answering, exc_info=exc
            )
    finally:
        sock.close()

"""One client connection: read a request, answer it, repeat — in order, as Kafka does.

Kafka mutes a connection while one of its requests is in flight, so responses come back in
request order and a client may pipeline freely; a single task per connection gives exactly
that.  Whatever a client sends, the worst outcome is its own connection being closed:
errors are contained here and never reach the listener or other connections.
"""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING, Any

import trio

from broker.dispatch import CloseConnection, dispatch
from broker.file_region import FileRegion
from broker.frames import FrameError, FrameReader
from wire.errors import WireError

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


async def serve_connection(broker: Broker, sock: trio.socket.SocketType, peer: str) -> None:
    """Serve one connection until the peer leaves, misbehaves or idles out."""
    reader = FrameReader(sock, broker.config.get_int("socket.request.max.bytes"))
    idle_seconds = broker.config.get_int("connections.max.idle.ms") / 1000
    try:
        while True:
            with trio.move_on_after(idle_seconds) as idle:
                frame = await reader.read_frame()
            if idle.cancelled_caught:
                log.info("closing idle connection from %s", peer)
                return
            if frame is None:
                return
            response = await dispatch(broker, frame, peer)
            if response is not None:
                try:
                    await send_all(sock, response)
                finally:
                    close_regions(response)
    except (FrameError, CloseConnection, WireError) as exc:
        log.warning("closing connection from %s: %s", peer, exc)
    except (OSError, trio.BrokenResourceError, trio.ClosedResourceError) as exc:
        log.debug("connection from %s lost: %s", peer, exc)
    except Exception:
        log.exception("internal error serving %s; closing its connection", peer)
    finally:
        sock.close()

"""One client connection: read a request, answer it, repeat — in order, as Kafka does.

Kafka mutes a connection while one of its requests is in flight, so responses come back in
request order and a client may pipeline freely; a single task per connection gives exactly
that.  Whatever a client sends, the worst outcome is its own connection being closed:
errors are contained here and never reach the listener or other connections.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import trio

from broker.dispatch import CloseConnection, dispatch
from broker.frames import FrameError, FrameReader
from wire.errors import WireError

if TYPE_CHECKING:
    from broker.server import Broker

log = logging.getLogger(__name__)


async def send_all(sock: trio.socket.SocketType, buffers: list[bytes]) -> None:
    """Write every buffer with scatter-gather sends (no concatenation of large bodies)."""
    views = [memoryview(b) for b in buffers if len(b)]
    while views:
        sent = await sock.sendmsg(views)
        while views and sent >= len(views[0]):
            sent -= len(views[0])
            views.pop(0)
        if sent:
            views[0] = views[0][sent:]


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
                await send_all(sock, response)
    except (FrameError, CloseConnection, WireError) as exc:
        log.warning("closing connection from %s: %s", peer, exc)
    except (OSError, trio.BrokenResourceError, trio.ClosedResourceError) as exc:
        log.debug("connection from %s lost: %s", peer, exc)
    except Exception:
        log.exception("internal error serving %s; closing its connection", peer)
    finally:
        sock.close()

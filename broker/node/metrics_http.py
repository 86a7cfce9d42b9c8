"""``GET /metrics`` over HTTP on the broker's own event loop (``metrics.listener``).

``prometheus_client`` brings a threaded HTTP server, but a scrape reads broker state (log
offsets, committed offsets) that only the event loop may touch, and a thread beside the loop
would contend for the interpreter with every request. So this is a minimal HTTP/1.1 responder in
trio: one request per connection, then close (Prometheus is fine with that).

Its clients are as hostile as Kafka clients: the request head is read within
``HEAD_LIMIT`` bytes and ``READ_TIMEOUT_S``, at most ``MAX_CONNECTIONS`` are served at once
(more are closed at once), and a client that stops reading its response is dropped after
``WRITE_TIMEOUT_S``. Anything but ``GET``/``HEAD`` of ``/metrics`` gets a 4xx.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import trio
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.core import Metric

from broker.config.config import parse_metrics_listener
from broker.network.bind_failure import bind_failure

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry

log = logging.getLogger(__name__)

HEAD_LIMIT = 8192
SAMPLES_PER_SLICE = 500
READ_TIMEOUT_S = 10.0
WRITE_TIMEOUT_S = 30.0
MAX_CONNECTIONS = 16


async def serve_metrics(
    listener: str,
    registry: CollectorRegistry,
    refresh: Callable[[], Awaitable[None]],
    *,
    task_status: trio.TaskStatus[tuple[str, int]] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve ``registry`` at ``listener`` (``http://HOST:PORT``; an empty host means every
    interface) until cancelled; reports the bound (host, port) once listening. ``refresh``
    runs before each scrape (the state walk of :mod:`broker.node.metrics_state`)."""
    host, port = parse_metrics_listener(listener)
    try:
        listeners = await trio.open_tcp_listeners(port, host=host or None)
    except OSError as exc:
        option = "--override metrics.listener=http://HOST:PORT"
        raise bind_failure("Metrics endpoint", host, port, exc, option) from exc
    bound_port = listeners[0].socket.getsockname()[1]
    active = 0

    async def answer(stream: trio.SocketStream) -> None:
        nonlocal active
        if active >= MAX_CONNECTIONS:
            await stream.aclose()
            return
        active += 1
        try:
            await respond(stream, registry, refresh)
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
            log.debug("metrics connection lost: %s", exc)
        finally:
            active -= 1
            await stream.aclose()

    task_status.started((host, bound_port))
    await trio.serve_listeners(answer, listeners)


async def respond(
    stream: trio.SocketStream, registry: CollectorRegistry, refresh: Callable[[], Awaitable[None]]
) -> None:
    """Read one request head and answer it."""
    head = b""
    with trio.move_on_after(READ_TIMEOUT_S):
        while b"\r\n\r\n" not in head and len(head) < HEAD_LIMIT:
            chunk = await stream.receive_some(HEAD_LIMIT - len(head))
            if not chunk:
                return
            head += chunk
    if b"\r\n\r\n" in head:
        status = route(head.split(b"\r\n", 1)[0])
    elif len(head) >= HEAD_LIMIT:
        status = "431 Request Header Fields Too Large"
    else:
        return  # timed out or hung up halfway: nobody to answer
    body, content_type = b"", "text/plain"
    if status.startswith("200"):
        try:
            await refresh()
            body, content_type = await render(registry), CONTENT_TYPE_LATEST
        except Exception:
            # a collector's bug must cost one scrape, never the listener (or the broker)
            log.exception("collecting metrics failed")
            status = "500 Internal Server Error"
    method = head.split(b" ", 1)[0]
    response = (
        f"HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {len(body)}\r\n"
        "Connection: close\r\n\r\n"
    ).encode()
    with trio.move_on_after(WRITE_TIMEOUT_S):
        await stream.send_all(response if method == b"HEAD" else response + body)


def route(request_line: bytes) -> str:
    """The status for a request line such as ``GET /metrics HTTP/1.1``."""
    parts = request_line.split(b" ")
    if len(parts) != 3 or not parts[2].startswith(b"HTTP/1."):
        return "400 Bad Request"
    method, target, _ = parts
    if target.split(b"?", 1)[0] != b"/metrics":
        return "404 Not Found"
    if method not in (b"GET", b"HEAD"):
        return "405 Method Not Allowed"
    return "200 OK"


class _Only:
    """A registry of one family, for ``generate_latest``."""

    def __init__(self, family: Metric) -> None:
        self._family = family

    def collect(self) -> list[Metric]:
        return [self._family]


async def render(registry: CollectorRegistry) -> bytes:
    """``generate_latest(registry)``, a slice of ``SAMPLES_PER_SLICE`` samples at a time with the
    event loop running in between (rendering costs ~4 µs a sample here: 40,000 partition
    gauges in one go would hold every connection for 160 ms). A family's later slices drop
    the HELP and TYPE lines its first slice wrote."""
    parts = []
    for family in registry.collect():
        for first in range(0, max(1, len(family.samples)), SAMPLES_PER_SLICE):
            piece = Metric(family.name, family.documentation, family.type)
            piece.samples = family.samples[first : first + SAMPLES_PER_SLICE]
            text = generate_latest(_Only(piece))
            parts.append(text if first == 0 else text.split(b"\n", 2)[2])
            await trio.lowlevel.checkpoint()
    return b"".join(parts)

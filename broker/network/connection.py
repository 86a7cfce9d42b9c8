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
import struct
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol

import trio

from broker.network.accept import ConnectionSlot
from broker.network.frames import FrameError, FrameReader, FrameTimeout
from broker.network.handshake import open_transport
from broker.network.memory_budget import MemoryBudget, RequestTooLarge
from broker.network.stall_watch import StallWatch
from broker.network.transport import Transport
from broker.requests.dispatch import (
    Answer,
    CloseConnection,
    DeferredAnswer,
    DispatchingNode,
    HandlerFailed,
    describe_request,
    dispatch,
)
from broker.requests.throttling import ChannelMute
from broker.services.rate_limited_log import RateLimitedLog
from broker.services.security.authentication import ConnectionAuth
from broker.services.security.listener_security import ListenerSecurity
from broker.services.security.mechanism import AuthenticationFailed
from broker.services.storage.file_region import FileRegion
from wire.errors import WireError
from wire.header import RequestHeader

if TYPE_CHECKING:
    from broker.network.peer_watch import PeerWatch

log = logging.getLogger(__name__)


class ServedNode(DispatchingNode, Protocol):
    """The node as a connection sees it: the request path's services, the request memory
    budget its frames are charged to, and the watch that cancels work for vanished peers."""

    request_memory: MemoryBudget
    peer_watch: PeerWatch


# Slow or oversized frames come in floods when someone attacks the broker: one line per 10 s.
_refused_frames = RateLimitedLog(logging.WARNING, log)
_SIZE = struct.Struct(">i")


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


async def _parts_of(answer: Answer) -> list[Any]:
    """An answer's response buffers (none for an acks=0 Produce), waiting for it if need be."""
    parts = await answer.parts() if isinstance(answer, DeferredAnswer) else answer
    return parts or []


class _Connection:
    """One client's requests, handled one at a time, answered in order.

    The reader handles a request and, while no earlier answer is still waiting, sends its
    answer itself: the common case costs no task switch.  An answer that must wait
    (``DeferredAnswer``, a Produce waiting for its fsync round) goes to the writer task, and
    every later answer queues behind it, so responses stay in request order while the reader
    goes on appending the next requests.
    """

    def __init__(
        self,
        broker: ServedNode,
        sock: trio.socket.SocketType,
        transport: Transport,
        auth: ConnectionAuth,
        scope: trio.CancelScope,
    ) -> None:
        config = broker.config
        self.broker, self.sock, self.transport, self.auth = broker, sock, transport, auth
        self.fd = sock.fileno()
        self.scope = scope  # the connection's: its end, whoever decides it
        self.peer = auth.peer
        self.max_frame = config.get_int("socket.request.max.bytes")
        self.reader = FrameReader(
            transport,
            self.max_frame,
            broker.request_memory,
            config.get_int("socket.request.read.timeout.ms") / 1000,
        )
        self.idle_seconds = config.get_int("connections.max.idle.ms") / 1000
        self.stalls = StallWatch(self.idle_seconds)
        self.mute = ChannelMute()  # held while a quota throttles this client (Kafka mutes the channel)
        self.sending: RequestHeader | None = None  # whose response is being written, for the error log
        self.queued = 0  # answers handed to the writer and not yet sent
        self.to_writer, self.from_reader = trio.open_memory_channel[tuple[RequestHeader, Answer]](
            MAX_WAITING_ANSWERS
        )

    async def read_requests(self) -> None:
        broker, reader, auth, stalls = self.broker, self.reader, self.auth, self.stalls
        while True:
            if auth.gated:
                self.limit_frames()
            stalls.reading_since = trio.current_time()
            size = await reader.next_size()
            if size is None:
                return
            frame = await reader.read_body(size)
            stalls.reading_since = trio.current_time()  # its handling counts from its arrival
            if auth.raw_tokens:
                await self.answer_raw_token(frame)
                continue
            broker.peer_watch.begin(self.fd, self.scope, self.peer)
            try:
                try:
                    header, answer = await dispatch(broker, frame, self.peer, auth, self.mute)
                finally:
                    reader.release()
                    del frame
                if self.queued or isinstance(answer, DeferredAnswer):
                    await self.queue(header, answer)
                elif answer is not None:
                    await self.send(header, answer)
            finally:
                broker.peer_watch.end(self.fd)
            if auth.failed and not self.queued:
                return  # a refused authentication was answered; Kafka closes the connection
            if self.mute.until:  # a quota throttled this client: read nothing more until it is over
                await self.mute.wait()

    def limit_frames(self) -> None:
        """Until the client has authenticated, frames are bounded by sasl.server.max.receive.size."""
        if self.auth.authenticated:
            self.reader.limit(self.max_frame, "socket.request.max.bytes")
        else:
            self.reader.limit(
                min(self.max_frame, self.auth.security.max_token_bytes), "sasl.server.max.receive.size"
            )

    async def answer_raw_token(self, frame: memoryview) -> None:
        """After SaslHandshake v0 a frame is a bare SASL token, answered by a bare token."""
        try:
            answer, _ = self.auth.authenticate(bytes(frame))
        except AuthenticationFailed as exc:
            await trio.sleep(self.auth.security.failed_auth_delay_s)  # as SaslAuthenticate's refusal
            raise CloseConnection(f"SASL authentication failed: {exc}") from None
        finally:
            self.reader.release()
        with trio.move_on_after(self.idle_seconds) as stuck:
            await self.transport.send_parts([_SIZE.pack(len(answer)), answer])
        if stuck.cancelled_caught:
            raise CloseConnection("it stopped reading its SASL answers")

    async def queue(self, header: RequestHeader, answer: Answer) -> None:
        """Hand an answer to the writer, behind those waiting; one the connection ends before
        handing over gives its file descriptors back."""
        self.queued += 1
        try:
            await self.to_writer.send((header, answer))
        except BaseException:
            if isinstance(answer, list):
                close_regions(answer)
            raise

    async def write_answers(self) -> None:
        """Send the queued answers in order; when the connection ends, release what the unsent
        ones hold (a Fetch answer queued behind a Produce waiting for its round holds file
        descriptors in its regions)."""
        try:
            await self._write_queued()
        finally:
            while True:
                try:
                    _header, answer = self.from_reader.receive_nowait()
                except (trio.WouldBlock, trio.EndOfChannel, trio.ClosedResourceError):
                    break
                if isinstance(answer, list):
                    close_regions(answer)

    async def _write_queued(self) -> None:
        """The answers behind one that are ready by then go with it in one write: a durability
        round completes many at once, and a write each would cost each a turn of the event
        loop, so the writer fell behind the reader."""
        held: tuple[RequestHeader, Answer] | None = None
        while True:
            if held is None:
                try:
                    held = await self.from_reader.receive()
                except trio.EndOfChannel:
                    return
            (header, answer), held = held, None
            sent, parts = 1, await _parts_of(answer)
            while sent < MAX_WAITING_ANSWERS:
                try:
                    held = self.from_reader.receive_nowait()
                except (trio.WouldBlock, trio.EndOfChannel):
                    break
                if isinstance(held[1], DeferredAnswer) and not held[1].ready():
                    break
                (header, answer), held = held, None
                sent, parts = sent + 1, parts + await _parts_of(answer)
            if parts:
                await self.send(header, parts)
            self.queued -= sent
            if self.auth.failed and not self.queued:
                return

    async def send(self, header: RequestHeader, parts: list[Any]) -> None:
        """Write one or more responses (``header`` is the last one's, named if the write fails);
        a client that stops taking them is closed by the stall watch."""
        self.sending = header
        self.stalls.sending_since = trio.current_time()
        try:
            await self.transport.send_parts(parts)
        finally:
            close_regions(parts)
            self.stalls.sending_since = None
        self.sending = None

    async def guarded(self, work: Callable[[], Awaitable[None]]) -> None:
        """Run the reader or the writer; whichever ends (or fails) ends the connection.

        A failure is logged here, where it is caught, and never kept: a stored exception would
        keep its traceback's frames alive, and with them the buffers of a half-received frame.
        """
        try:
            await work()
        except HandlerFailed:
            pass  # dispatch logged it at ERROR with the request's details
        except (FrameTimeout, RequestTooLarge) as exc:
            _refused_frames("closing connection from %s: %s", self.peer, exc)
        except (FrameError, CloseConnection, WireError) as exc:
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
            self.scope.cancel()


async def serve_connection(
    broker: ServedNode,
    security: ListenerSecurity,
    sock: trio.socket.SocketType,
    peer: str,
    host: str,
    slot: ConnectionSlot,
) -> None:
    """Serve one connection until the peer leaves, misbehaves or idles out.

    Time bounds: a TLS handshake and a SASL exchange must finish within
    ``authentication.timeout.ms``; receiving a request, waiting for request memory included,
    by ``socket.request.read.timeout.ms`` (:mod:`broker.network.frames`); and by
    ``connections.max.idle.ms``, as Kafka's idle expiry, whatever the connection is doing: a
    connection none of whose requests arrived for that long (idle, or parked on a request
    that never ends) or whose client stops reading a response for that long is closed (one
    watch per connection, :mod:`broker.network.stall_watch`).
    A request whose client closes while it is handled or answered is cancelled
    (:mod:`broker.network.peer_watch`).  Everything runs in ``slot``'s cancel scope, so the listener can
    close the connection to make room for another address's (:mod:`broker.network.accept`).

    Logging: expected disconnects are DEBUG; a client breaking the protocol is WARNING; any
    other failure is ERROR exactly once — handler failures are logged by ``dispatch`` with the
    request they belong to, socket failures by ``_Connection.guarded`` with the request being
    answered.
    """
    try:
        with slot.scope:
            sock.setsockopt(trio.socket.IPPROTO_TCP, trio.socket.TCP_NODELAY, 1)
            opened = await open_transport(sock, security, peer, host)
            if opened is None:
                return
            connection = _Connection(broker, sock, *opened, slot.scope)
            slot.stalls = connection.stalls
            async with trio.open_nursery() as nursery:
                if connection.auth.gated:
                    nursery.start_soon(_authentication_deadline, connection.auth, connection.scope)
                nursery.start_soon(connection.guarded, connection.write_answers)
                nursery.start_soon(connection.stalls.run, peer, connection.scope)
                try:
                    await connection.guarded(connection.read_requests)
                finally:
                    _end_share_sessions(broker, connection.auth)
    finally:
        sock.close()


def _end_share_sessions(broker: ServedNode, auth: ConnectionAuth) -> None:
    """The share sessions opened on a closing connection end with it, and the records their
    members acquired become available at once (Kafka 4.1's behaviour) rather than when their
    locks run out."""
    sessions, share = broker.share_sessions, broker.share
    if sessions is None or share is None:
        return
    for session in sessions.of_connection(auth):
        keys = [
            (session.group_id, info.name, index)
            for topic_id, index in session.partitions
            if (info := broker.topics.by_id(topic_id)) is not None
        ]
        share.release_soon(session.group_id, session.member_id, keys)


async def _authentication_deadline(auth: ConnectionAuth, scope: trio.CancelScope) -> None:
    """Close a SASL connection that has not authenticated within ``authentication.timeout.ms``."""
    await trio.sleep(auth.security.authentication_timeout_s)
    if not auth.authenticated:
        log.info(
            "closing connection from %s: no SASL authentication within authentication.timeout.ms", auth.peer
        )
        scope.cancel()

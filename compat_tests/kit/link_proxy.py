"""TCP links between the nodes of a test cluster that a test can cut and heal, without privileges.

Partitioning real processes on one machine usually takes network namespaces or iptables, which
CI may not grant. Here every link a fault may cut goes through a :class:`Link` instead: a
listening address on loopback that forwards each connection to its upstream address. The nodes
are configured to reach each other through the links, and a test switches each link, for all of
its connections or for those of one source, between three modes:

- ``PASS``: bytes flow both ways;
- ``HOLD``: a black hole, as a partition is to TCP: connections stay open but no byte moves
  either way (what was read is kept, the rest waits in the kernel's buffers until the sender
  blocks), and a new connection is accepted but not connected onwards; when the link passes
  again, everything held is delivered, as TCP retransmits once a partition heals;
- ``CLOSE``: every connection is closed and new ones are closed at once (a refused port).

Who connects is told by a link's ``source_of``, a function of the connection's addresses (the
nodes cannot be made to connect from addresses of their own: see
:mod:`compat_tests.kit.socket_owner`).

One :class:`Switchboard` thread serves every link with a selector, so a cluster's two dozen
links cost one thread; each connection buffers at most :data:`BUFFER_BYTES` per direction.
"""

from __future__ import annotations

import contextlib
import enum
import errno
import selectors
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

BUFFER_BYTES = 256 * 1024
"""What a connection holds in each direction before it stops reading (the sender then waits)."""
CHUNK_BYTES = 64 * 1024
STOP_TIMEOUT_S = 10.0

Address = tuple[str, int]
SourceOf = Callable[[Address, Address], int | None]
"""Which node a connection comes from, given the address it connects from and the one it
connected to (None: unknown)."""


class Mode(enum.Enum):
    PASS = "pass"
    HOLD = "hold"
    CLOSE = "close"


class Link:
    """One listening address forwarding to ``upstream``; made by :meth:`Switchboard.link`."""

    def __init__(
        self,
        board: Switchboard,
        name: str,
        listener: socket.socket,
        upstream: Address,
        source_of: SourceOf | None,
    ) -> None:
        self.name = name
        self.upstream = upstream
        self.listener = listener
        self.source_of = source_of
        self._board = board
        self._mode = Mode.PASS
        self._by_source: dict[int, Mode] = {}

    @property
    def address(self) -> str:
        """``host:port`` to give the nodes instead of the upstream's."""
        host, port = self.listener.getsockname()[:2]
        return f"{host}:{port}"

    def set(self, mode: Mode, source: int | None = None) -> None:
        """Switch the link for every connection, or for those from node ``source`` only."""
        with self._board.lock:
            if source is None:
                self._mode = mode
                self._by_source.clear()
            else:
                self._by_source[source] = mode
        self._board.changed()

    def mode_for(self, source: int | None) -> Mode:
        """The mode of a connection from ``source`` (call with the board's lock held)."""
        return self._by_source.get(source, self._mode) if source is not None else self._mode


@dataclass(eq=False)
class _Connection:
    """One proxied connection: the accepted socket, the upstream one, and what each side sent
    that the other has not taken yet."""

    link: Link
    source: int | None
    down: socket.socket
    up: socket.socket | None = None
    connected: bool = False
    to_up: bytearray = field(default_factory=bytearray)
    to_down: bytearray = field(default_factory=bytearray)

    def sockets(self) -> list[socket.socket]:
        return [self.down] if self.up is None else [self.down, self.up]


class Switchboard:
    """Every link of a cluster, served by one thread; ``with`` or :meth:`stop` ends it."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self._selector = selectors.DefaultSelector()
        self._wake_read, self._wake_write = socket.socketpair()
        self._wake_read.setblocking(False)
        self._wake_write.setblocking(False)
        self._selector.register(self._wake_read, selectors.EVENT_READ, None)
        self._links: list[Link] = []
        self._connections: set[_Connection] = set()
        self._stopping = False
        self.crash: BaseException | None = None
        """What ended the thread early, re-raised by :meth:`stop`: links that stopped forwarding
        would otherwise show only as a cluster behaving strangely."""
        self._thread = threading.Thread(target=self._serve, name="link-proxy", daemon=True)
        self._thread.start()

    def link(self, name: str, upstream: Address, source_of: SourceOf | None = None) -> Link:
        """A new link listening on a free loopback port, forwarding to ``upstream``; with
        ``source_of``, its connections can be switched by the node they come from."""
        listener = socket.create_server(("127.0.0.1", 0), backlog=128)
        listener.setblocking(False)
        link = Link(self, name, listener, upstream, source_of)
        with self.lock:
            self._links.append(link)
            self._selector.register(listener, selectors.EVENT_READ, link)
        self.changed()
        return link

    def heal(self) -> None:
        """Every link passes again, for every source."""
        for link in list(self._links):
            link.set(Mode.PASS)

    def changed(self) -> None:
        """Wake the thread to apply new modes."""
        # BlockingIOError: a wake-up is pending already; others: the thread has stopped
        with contextlib.suppress(OSError):
            self._wake_write.send(b"!")

    def stop(self) -> None:
        """Close every link and connection and end the thread."""
        if self._stopping:
            return
        self._stopping = True
        self.changed()
        self._thread.join(STOP_TIMEOUT_S)
        self._wake_write.close()
        if self.crash is not None:
            raise RuntimeError("the link proxy's thread failed") from self.crash

    def __enter__(self) -> Switchboard:
        return self

    def __exit__(self, *_: object) -> None:
        self.stop()

    def _serve(self) -> None:
        try:
            while not self._stopping:
                for key, events in self._selector.select():
                    self._handle(key.fileobj, key.data, events)  # type: ignore[arg-type]
                self._apply_modes()
        except BaseException as exc:  # noqa: BLE001 - re-raised by stop()
            self.crash = exc
        finally:
            for connection in list(self._connections):
                self._close(connection)
            for link in self._links:
                self._selector.unregister(link.listener)
                link.listener.close()
            self._selector.close()
            self._wake_read.close()

    def _handle(self, sock: socket.socket, data: Link | _Connection | None, events: int) -> None:
        if data is None:
            while True:
                try:
                    if not self._wake_read.recv(4096):
                        return
                except BlockingIOError:
                    return
        elif isinstance(data, Link):
            self._accept(data)
        elif data in self._connections:
            self._move(data, sock, events)

    def _accept(self, link: Link) -> None:
        while True:
            try:
                down, peer = link.listener.accept()
            except OSError:  # none left to accept, or one that gave up meanwhile
                return
            down.setblocking(False)
            source = link.source_of(peer[:2], down.getsockname()[:2]) if link.source_of else None
            self._connections.add(_Connection(link, source, down))

    def _apply_modes(self) -> None:
        """Bring every connection in line with its link's mode, and each socket's interest in
        line with what its connection can do now."""
        with self.lock:
            modes = {c: c.link.mode_for(c.source) for c in self._connections}
        for connection, mode in modes.items():
            if mode is Mode.CLOSE:
                self._close(connection)
            elif mode is Mode.PASS and connection.up is None:
                self._connect(connection)
            if connection in self._connections:
                self._watch(connection, mode)

    def _connect(self, connection: _Connection) -> None:
        up = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        up.setblocking(False)
        connection.up = up
        if up.connect_ex(connection.link.upstream) not in (0, errno.EINPROGRESS):
            self._close(connection)

    def _watch(self, connection: _Connection, mode: Mode) -> None:
        wanted = dict.fromkeys(connection.sockets(), 0)
        if connection.up is not None and not connection.connected:
            wanted[connection.up] = selectors.EVENT_WRITE
        elif connection.up is not None and mode is Mode.PASS:
            wanted[connection.down] = _events(len(connection.to_up), len(connection.to_down))
            wanted[connection.up] = _events(len(connection.to_down), len(connection.to_up))
        for sock, events in wanted.items():
            try:
                registered = self._selector.get_key(sock).events
            except KeyError:
                registered = 0
            if events == registered:
                continue
            if not events:
                self._selector.unregister(sock)
            elif not registered:
                self._selector.register(sock, events, connection)
            else:
                self._selector.modify(sock, events, connection)

    def _move(self, connection: _Connection, sock: socket.socket, events: int) -> None:
        """Bytes one step along: read what there is room for, write what is buffered."""
        if sock is connection.up and not connection.connected:
            if sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR):
                self._close(connection)
            else:
                connection.connected = True
            return
        inbound, outbound = (
            (connection.to_up, connection.to_down)
            if sock is connection.down
            else (connection.to_down, connection.to_up)
        )
        try:
            if events & selectors.EVENT_READ and len(inbound) < BUFFER_BYTES:
                data = sock.recv(min(CHUNK_BYTES, BUFFER_BYTES - len(inbound)))
                if not data:
                    self._close(connection)  # the protocols here never half-close
                    return
                inbound += data
            if events & selectors.EVENT_WRITE and outbound:
                del outbound[: sock.send(outbound)]
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            self._close(connection)

    def _close(self, connection: _Connection) -> None:
        self._connections.discard(connection)
        for sock in connection.sockets():
            with contextlib.suppress(KeyError):
                self._selector.unregister(sock)
            sock.close()


def _events(room_used: int, pending: int) -> int:
    """A socket's interest: read while its direction has room, write while the other has bytes."""
    events = selectors.EVENT_READ if room_used < BUFFER_BYTES else 0
    return events | (selectors.EVENT_WRITE if pending else 0)

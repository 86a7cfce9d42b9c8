"""The nemesis suite's link proxy: bytes pass, are held while a link is cut and delivered once
it heals, connections close when it closes, and a link can be cut for one source only; the
connecting process is found through /proc."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator

import pytest

from compat_tests.kit.link_proxy import Link, Mode, Switchboard
from compat_tests.kit.socket_owner import connecting_process

TIMEOUT_S = 5.0


@pytest.fixture
def echo() -> Iterator[tuple[str, int]]:
    """A server echoing every connection's bytes back, in threads."""
    server = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            threading.Thread(target=_echo, args=(conn,), daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()
    yield server.getsockname()
    server.close()


def _echo(conn: socket.socket) -> None:
    with conn:
        while data := conn.recv(65536):
            conn.sendall(data)


@pytest.fixture
def board() -> Iterator[Switchboard]:
    with Switchboard() as switchboard:
        yield switchboard


def connect(link: Link, sources: dict[int, int] | None = None, source: int = 0) -> socket.socket:
    """A connection through ``link``; with ``sources``, its local port is entered there as
    ``source``'s before it connects (the link tells its source at once)."""
    host, port = link.address.rsplit(":", 1)
    sock = socket.socket()
    sock.settimeout(TIMEOUT_S)
    sock.bind(("127.0.0.1", 0))
    if sources is not None:
        sources[sock.getsockname()[1]] = source
    sock.connect((host, int(port)))
    return sock


def round_trip(sock: socket.socket, data: bytes) -> bytes:
    sock.sendall(data)
    received = b""
    while len(received) < len(data):
        chunk = sock.recv(65536)
        if not chunk:
            break
        received += chunk
    return received


def test_bytes_pass_both_ways_beyond_the_buffer(board: Switchboard, echo: tuple[str, int]) -> None:
    link = board.link("echo", echo)
    with connect(link) as sock:
        payload = os.urandom(3 * 1024 * 1024)
        sender = threading.Thread(target=sock.sendall, args=(payload,))
        sender.start()
        received = b""
        while len(received) < len(payload):
            received += sock.recv(1 << 20)
        sender.join()
        assert received == payload


def test_held_bytes_are_delivered_once_the_link_heals(board: Switchboard, echo: tuple[str, int]) -> None:
    link = board.link("echo", echo)
    with connect(link) as sock:
        assert round_trip(sock, b"before") == b"before"
        link.set(Mode.HOLD)
        sock.sendall(b"held")
        sock.settimeout(0.5)
        with pytest.raises(TimeoutError):
            sock.recv(10)
        with connect(link) as new:  # accepted, but not connected onwards while held
            new.sendall(b"new")
            link.set(Mode.PASS)
            sock.settimeout(TIMEOUT_S)
            assert sock.recv(10) == b"held"
            assert new.recv(10) == b"new"


def test_closed_link_closes_connections_and_refuses_new_ones(
    board: Switchboard, echo: tuple[str, int]
) -> None:
    link = board.link("echo", echo)
    with connect(link) as sock:
        assert round_trip(sock, b"x") == b"x"
        link.set(Mode.CLOSE)
        assert sock.recv(10) == b""
    with connect(link) as again:
        assert again.recv(10) == b""
    board.heal()
    with connect(link) as healed:
        assert round_trip(healed, b"y") == b"y"


def test_a_link_is_cut_for_one_source_only(board: Switchboard, echo: tuple[str, int]) -> None:
    sources: dict[int, int] = {}
    link = board.link("echo", echo, source_of=lambda peer, local: sources.get(peer[1]))
    with connect(link, sources, 1) as first, connect(link, sources, 2) as second:
        link.set(Mode.CLOSE, source=1)
        assert first.recv(10) == b""
        assert round_trip(second, b"still") == b"still"


def test_the_connecting_process_is_found(echo: tuple[str, int]) -> None:
    """A child process connects to a listener of ours; /proc names it by its key."""
    server = socket.create_server(("127.0.0.1", 0))
    host, port = server.getsockname()
    script = f"import socket,sys; s=socket.create_connection(('{host}',{port})); sys.stdin.read()"
    child = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE)
    try:
        server.settimeout(TIMEOUT_S)
        conn, peer = server.accept()
        with conn:
            assert connecting_process(peer, conn.getsockname(), {7: child.pid, 8: os.getpid()}) == 7
            assert connecting_process(peer, conn.getsockname(), {8: os.getpid()}) is None
    finally:
        child.kill()
        child.wait()
        server.close()

"""TlsTransport.send_parts over a real TLS connection: whatever mix of in-memory parts and file
regions a response is made of, the peer decrypts exactly their concatenation, in order.

The cases cross the gathering buffer's edges: regions longer than one TLS write, parts that no
longer fit behind gathered bytes, an in-memory part larger than a whole write, empty parts.
"""

from __future__ import annotations

import os
import ssl
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio
import trustme

from broker.network.transport import TLS_CHUNK, TlsTransport
from broker.services.storage.file_region import FileRegion

DEADLINE_S = 30
FILE_BYTES = 3 * TLS_CHUNK + 12345


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture
def segment(tmp_path: Path) -> Iterator[tuple[int, bytes]]:
    data = os.urandom(FILE_BYTES)
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(data)
    fd = os.open(path, os.O_RDONLY)
    yield fd, data
    os.close(fd)


CASES = {
    "header-and-one-long-region": [b"\x00\x00\x10\x00", (0, FILE_BYTES)],
    "regions-around-small-parts": [b"head", (100, TLS_CHUNK + 7), b"mid", (5, 10), b"", (0, 0), b"tail"],
    "part-that-does-not-fit-behind-gathered-bytes": [(0, TLS_CHUNK - 10), b"x" * 100, (7, 50)],
    "part-larger-than-a-write": [b"a", b"b" * (TLS_CHUNK + 1), (3, 1000)],
    "memory-only": [b"size", b"answer" * 1000],
}


async def _send_and_receive(ca: trustme.CA, parts: list[object], expected: bytes) -> bytes:
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(server_context)
    client_context = ssl.create_default_context()
    ca.configure_trust(client_context)
    server_sock, client_sock = trio.socket.socketpair()
    server = trio.SSLStream(trio.SocketStream(server_sock), server_context, server_side=True)
    client = trio.SSLStream(trio.SocketStream(client_sock), client_context, server_hostname="127.0.0.1")
    received = bytearray()

    async def receive() -> None:
        while len(received) < len(expected):
            chunk = await client.receive_some()
            assert chunk, "the sender closed early"
            received.extend(chunk)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(client.do_handshake)
        await server.do_handshake()
        nursery.start_soon(receive)
        await TlsTransport(server_sock, server).send_parts(parts)
    await server.aclose()
    await client.aclose()
    return bytes(received)


@pytest.mark.parametrize("case", list(CASES))
async def test_the_peer_receives_the_parts_in_order(
    ca: trustme.CA, segment: tuple[int, bytes], case: str
) -> None:
    fd, data = segment
    parts: list[object] = []
    expected = b""
    for part in CASES[case]:
        if isinstance(part, tuple):
            offset, length = part
            parts.append(FileRegion(fd, offset, length))
            expected += data[offset : offset + length]
        else:
            parts.append(part)
            expected += part
    try:
        with trio.fail_after(DEADLINE_S):
            assert await _send_and_receive(ca, parts, expected) == expected
    finally:
        for part in parts:
            if isinstance(part, FileRegion):
                part.close()


async def test_a_region_beyond_the_end_of_the_file_is_an_error(
    ca: trustme.CA, segment: tuple[int, bytes]
) -> None:
    fd, _ = segment
    region = FileRegion(fd, FILE_BYTES - 50, 150)
    try:
        with trio.fail_after(DEADLINE_S), pytest.raises(ExceptionGroup) as failed:
            await _send_and_receive(ca, [region], b"\x00" * 150)
    finally:
        region.close()
    (error,) = failed.value.exceptions
    assert isinstance(error, OSError) and "segment file ended 100 bytes before" in str(error)

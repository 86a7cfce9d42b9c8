"""The sync process (``broker.services.storage.sync_worker``) run as the broker runs it, with this test holding the
broker's end of its channel: it answers, and it ends quietly however the broker's end goes away,
including the two ways a killed broker leaves it (issue 25: tracebacks on ``kill -9``)."""

from __future__ import annotations

import os
import select
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from broker.services.storage import sync_worker
from broker.services.storage.sync_worker import COUNT
from tests.integration.waiting import wait_until

BOUND_S = 60  # how long a broken worker may keep the test waiting; nothing is timed


@pytest.fixture
def worker() -> Iterator[tuple[subprocess.Popen[bytes], socket.socket]]:
    """A sync process and the broker's end of its channel."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    with theirs:
        process = subprocess.Popen(
            [sys.executable, "-I", sync_worker.__file__], stdin=theirs, stderr=subprocess.PIPE
        )
    yield process, ours
    ours.close()
    if process.poll() is None:
        process.kill()
    process.communicate()


def ask_to_sync(channel: socket.socket, path: Path) -> None:
    """Send one request to fdatasync ``path``."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        socket.send_fds(channel, [COUNT.pack(1)], [fd])
    finally:
        os.close(fd)


def assert_quiet_exit(process: subprocess.Popen[bytes]) -> None:
    _, stderr = process.communicate(timeout=BOUND_S)
    assert process.returncode == 0 and stderr == b"", stderr.decode()


def test_it_answers_and_exits_quietly_when_the_broker_closes_its_end(worker, tmp_path: Path) -> None:
    process, channel = worker
    ask_to_sync(channel, tmp_path / "segment")
    assert channel.recv(64) == b"\0\0\0\0"
    channel.close()
    assert_quiet_exit(process)


def test_a_broker_dead_with_the_answer_unread_is_no_traceback(worker, tmp_path: Path) -> None:
    """Closing a socket with unread data resets the peer: its next receive is ECONNRESET."""
    process, channel = worker
    ask_to_sync(channel, tmp_path / "segment")
    readable = select.poll()  # not select(): an xdist worker's descriptors may be past 1024
    readable.register(channel, select.POLLIN)
    assert readable.poll(BOUND_S * 1000), "the answer arrived (left unread)"
    channel.close()
    assert_quiet_exit(process)


def test_a_broker_dead_while_it_synced_is_no_traceback(worker, tmp_path: Path) -> None:
    """The request was sent and the broker died before the answer: sending it is EPIPE."""
    process, channel = worker
    os.kill(process.pid, signal.SIGSTOP)
    try:
        wait_until(lambda: process_state(process.pid) == "T", "the sync process stopped")
        ask_to_sync(channel, tmp_path / "segment")
        channel.close()
    finally:
        os.kill(process.pid, signal.SIGCONT)
    assert_quiet_exit(process)


def process_state(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]

"""The event loop's side of the sync process (``broker.services.storage.sync_worker``): start it when first needed,
send it descriptors to fdatasync, await its answer like any socket's, replace it if it dies."""

from __future__ import annotations

import array
import errno
import logging
import socket
import struct
import subprocess
import sys

import trio

from broker.services.storage import sync_worker
from broker.services.storage.sync_worker import COUNT, MAX_DESCRIPTORS

log = logging.getLogger(__name__)

STOP_TIMEOUT_S = 5.0
"""How long ``aclose`` waits for the process to exit on its own before killing it."""


class SyncProcess:
    """One sync process, started on the first ``fdatasync``; one request in flight at a time
    (the caller, ``Durability``'s round task, runs one round after another)."""

    def __init__(self) -> None:
        self._process: subprocess.Popen[bytes] | None = None
        self._channel: socket.socket | None = None

    async def fdatasync(self, descriptors: list[int]) -> list[int]:
        """fdatasync each descriptor (which stays the caller's to close); per descriptor 0, or
        the ``errno`` its sync failed with.  If the process dies it is replaced and asked again
        (a sync repeated is harmless); if the new one fails too, every sync counts as failed
        (``EIO``), so nothing is acknowledged as durable that may not be."""
        results: list[int] = []
        for start in range(0, len(descriptors), MAX_DESCRIPTORS):
            results += await self._request(descriptors[start : start + MAX_DESCRIPTORS])
        return results

    async def _request(self, descriptors: list[int]) -> list[int]:
        for _ in range(2):
            channel = self._channel if self._channel is not None else self._start()[1]
            answered = False
            try:
                answer = await _exchange(channel, descriptors)
                if len(answer) != 4 * len(descriptors):
                    raise ConnectionError(f"it answered {len(answer)} bytes for {len(descriptors)} syncs")
                answered = True
                return list(struct.unpack(f">{len(descriptors)}i", answer))
            except OSError as exc:
                log.error("the sync process failed (%s); starting another", exc)
            finally:
                if not answered:  # failed, or cancelled with an answer still to come
                    self._discard()
        return [errno.EIO] * len(descriptors)

    def ensure_started(self) -> int:
        """Start the process unless it runs; its pid (tests hold every sync by stopping it with
        ``SIGSTOP``)."""
        process = self._process if self._process is not None else self._start()[0]
        return process.pid

    def _start(self) -> tuple[subprocess.Popen[bytes], socket.socket]:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            # -I: no user site-packages, environment or script directory on its path.
            process = subprocess.Popen([sys.executable, "-I", sync_worker.__file__], stdin=theirs)
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        ours.setblocking(False)
        self._process, self._channel = process, ours
        log.info("sync process started (pid %d)", process.pid)
        return process, self._channel

    def _discard(self) -> None:
        """Close the channel (the process exits when it sees that) and forget the process."""
        self._close_channel()
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.kill()  # it may be stuck; a new one takes over
        if process is not None:
            process.wait()

    def _close_channel(self) -> None:
        if self._channel is not None:
            trio.lowlevel.notify_closing(self._channel)
            self._channel.close()
            self._channel = None

    async def aclose(self) -> None:
        """Stop the process: it exits once its channel closes (killed after ``STOP_TIMEOUT_S``)."""
        self._close_channel()
        process, self._process = self._process, None
        if process is None:
            return
        try:
            await trio.to_thread.run_sync(process.wait, STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            log.error("the sync process (pid %d) did not exit; killing it", process.pid)
            process.kill()
            await trio.to_thread.run_sync(process.wait)


async def _exchange(channel: socket.socket, descriptors: list[int]) -> bytes:
    """Send one request and await its answer.  The socket's own calls, not trio's wrappers:
    those add a turn of the event loop after a call that did not block, and a round already
    waits for several."""
    request = [COUNT.pack(len(descriptors))]
    passed = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", descriptors))]
    while True:
        try:
            channel.sendmsg(request, passed)
            break
        except BlockingIOError:
            await trio.lowlevel.wait_writable(channel)
    while True:
        await trio.lowlevel.wait_readable(channel)
        try:
            return channel.recv(4 * len(descriptors))
        except BlockingIOError:
            continue

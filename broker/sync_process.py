"""The event loop's side of the sync process (``broker.sync_worker``): start it when first needed,
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

from broker import sync_worker
from broker.sync_worker import COUNT, MAX_DESCRIPTORS

log = logging.getLogger(__name__)

STOP_TIMEOUT_S = 5.0
"""How long ``aclose`` waits for the process to exit on its own before killing it."""


class SyncProcess:
    """One sync process, started on the first ``fdatasync``; one request in flight at a time
    (the caller, ``Durability``'s round task, runs one round after another)."""

    def __init__(self) -> None:
        self._process: subprocess.Popen[bytes] | None = None
        self._channel: trio.socket.SocketType | None = None

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
                await channel.sendmsg(
                    [COUNT.pack(len(descriptors))],
                    [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", descriptors))],
                )
                answer = await channel.recv(4 * len(descriptors))
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

    def started_pid(self) -> int:
        """The process's pid, started now unless it runs (tests hold every sync by stopping
        it with ``SIGSTOP``)."""
        process = self._process if self._process is not None else self._start()[0]
        return process.pid

    def _start(self) -> tuple[subprocess.Popen[bytes], trio.socket.SocketType]:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            # -I: no user site-packages, environment or script directory on its path.
            process = subprocess.Popen([sys.executable, "-I", sync_worker.__file__], stdin=theirs)
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        self._process, self._channel = process, trio.socket.from_stdlib_socket(ours)
        log.info("sync process started (pid %d)", process.pid)
        return process, self._channel

    def _discard(self) -> None:
        """Close the channel (the process exits when it sees that) and forget the process."""
        if self._channel is not None:
            self._channel.close()
            self._channel = None
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.kill()  # it may be stuck; a new one takes over
        if process is not None:
            process.wait()

    async def aclose(self) -> None:
        """Stop the process: it exits once its channel closes (killed after ``STOP_TIMEOUT_S``)."""
        if self._channel is not None:
            self._channel.close()
            self._channel = None
        process, self._process = self._process, None
        if process is None:
            return
        try:
            await trio.to_thread.run_sync(process.wait, STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            log.error("the sync process (pid %d) did not exit; killing it", process.pid)
            process.kill()
            await trio.to_thread.run_sync(process.wait)

"""The broker's sync process: fdatasyncs the descriptors the broker sends it, and says how each went.

Why a process: a thread that fdatasyncs must take the interpreter lock back after every sync,
and CPython hands it over from a busy event loop only at the loop's blocking calls or after
``sys.getswitchinterval()`` (5 ms). Under load that wait, not the disk (0.1-0.2 ms a sync
here), was what a durable acknowledgement waited for. This process has an interpreter of its
own; the event loop only sends it a message and waits for the answer like for any socket.

Protocol, over a ``SOCK_SEQPACKET`` Unix socket on descriptor 0: a request is one packet whose
ancillary data carries up to ``MAX_DESCRIPTORS`` descriptors (``SCM_RIGHTS``) and whose body is
their count (4 bytes, big-endian); the answer is one packet of as many big-endian ``int32``s,
each 0 or the ``errno`` its descriptor's ``fdatasync`` failed with. Every received descriptor is
closed after its sync. The process exits when the broker closes its end (also when the broker
dies), and ignores ``SIGINT``: the broker, not a terminal's Ctrl-C, decides when it stops.
A broker that dies with a request or an answer in flight (``kill -9``) resets the channel
instead of closing it; that ends the process just as quietly.

Standard library only, so it starts in milliseconds.
"""

from __future__ import annotations

import errno
import os
import signal
import socket
import struct

MAX_DESCRIPTORS = 250
"""Descriptors per request: Linux passes at most 253 (``SCM_MAX_FD``) in one message."""

COUNT = struct.Struct(">I")


def sync_all(descriptors: list[int]) -> list[int]:
    """fdatasync and close each descriptor; its ``errno``, or 0 if the sync succeeded."""
    results = []
    for fd in descriptors:
        try:
            os.fdatasync(fd)
            results.append(0)
        except OSError as exc:
            results.append(exc.errno or errno.EIO)
        finally:
            os.close(fd)
    return results


def serve(channel: socket.socket) -> None:
    """Answer requests until the broker closes its end."""
    while True:
        body, descriptors, flags, _ = socket.recv_fds(channel, COUNT.size, MAX_DESCRIPTORS)
        if not body and not descriptors:
            return  # the broker closed its end
        if flags & socket.MSG_CTRUNC or len(body) != COUNT.size or COUNT.unpack(body)[0] != len(descriptors):
            # Descriptors lost on the way (this process ran out): the broker must not take
            # any of them as synced.
            for fd in descriptors:
                os.close(fd)
            results = [errno.EMFILE] * (COUNT.unpack(body)[0] if len(body) == COUNT.size else 0)
        else:
            results = sync_all(descriptors)
        channel.send(struct.pack(f">{len(results)}i", *results))


def main() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        serve(socket.socket(fileno=0))
    except ConnectionError:
        # ECONNRESET (the broker died with our answer unread) or EPIPE (it died while we
        # synced): nobody is left to take a result, and the broker's death is its own to
        # report. A traceback here only sent people looking for a bug in this process.
        return


if __name__ == "__main__":
    main()

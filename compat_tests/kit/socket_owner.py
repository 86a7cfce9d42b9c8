"""Which process opened a loopback TCP connection: how a link proxy tells its sources apart.

A broker reaches another broker at the address that broker advertises, one address for every
peer: Kafka and Odradek both take it from the cluster's metadata, and neither lets a broker
choose the address it connects from. So the proxy in front of a broker's inter-broker listener
cannot tell by address which broker is connecting; Linux can. The connecting socket is listed in
``/proc/net/tcp`` (``tcp6`` for a JVM's dual-stack sockets) with its ports and inode, and the
process holding it has a ``/proc/<pid>/fd`` link to ``socket:[inode]``. Both are readable
without privileges for one's own child processes. The processes are found by their working
directories, each node's own, so that connections made while a cluster starts (before the
harness knows its processes) are told apart too.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

PROC_NET = (Path("/proc/net/tcp"), Path("/proc/net/tcp6"))


def connection_inode(local_port: int, remote_port: int) -> int | None:
    """The inode of the loopback TCP socket whose own port is ``local_port`` and whose peer's is
    ``remote_port`` (loopback only: ports alone tell the tests' connections apart)."""
    for table in PROC_NET:
        try:
            lines = table.read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) > 9 and _port(fields[1]) == local_port and _port(fields[2]) == remote_port:
                return int(fields[9]) or None
    return None


def _port(address: str) -> int:
    """The port of a ``/proc/net/tcp`` address (``HEXADDR:HEXPORT``)."""
    return int(address.rsplit(":", 1)[1], 16)


def holder(inode: int, pids: Mapping[int, int]) -> int | None:
    """Which key of ``pids`` (key -> process id) names the process holding socket ``inode``."""
    wanted = f"socket:[{inode}]"
    for key, pid in pids.items():
        fds = Path(f"/proc/{pid}/fd")
        try:
            names = os.listdir(fds)
        except OSError:
            continue  # exited meanwhile
        for name in names:
            try:
                if os.readlink(fds / name) == wanted:
                    return key
            except OSError:
                continue
    return None


def connecting_process(peer: tuple[str, int], local: tuple[str, int], pids: Mapping[int, int]) -> int | None:
    """Which key of ``pids`` (key -> process id; a node id) names the process that connected
    from ``peer`` to ``local``, a listening address of this process; None if none of them."""
    inode = connection_inode(peer[1], local[1])
    return holder(inode, pids) if inode is not None else None


def processes_in(directories: Mapping[Path, int]) -> dict[int, int]:
    """The processes whose working directory is a key of ``directories``: value (a node id) ->
    process id. A restarted node is found under its new process id."""
    found = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cwd = Path(os.readlink(entry / "cwd"))
            except OSError:
                continue  # exited meanwhile, or not ours to read
            if cwd in directories:
                found[directories[cwd]] = int(entry.name)
    return found

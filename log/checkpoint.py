"""Small files that must be replaced atomically: the partition checkpoint and snapshots.

``partition.checkpoint`` (text, one ``key value`` per line) is this engine's per-partition
counterpart of Kafka's per-directory ``log-start-offset-checkpoint``,
``recovery-point-offset-checkpoint`` and ``.kafka_cleanshutdown`` files.  Keeping it per
partition lets ``PartitionLog`` open, recover and be deleted on its own::

    version 1
    log_start_offset 0
    recovery_point 1234
    clean_shutdown 1
    first_dirty_offset 1000
    high_watermark 1200

``clean_shutdown 1`` is written only by ``close()`` after everything was fsynced and is
rewritten to 0 as soon as the log is opened again, so a crash at any later point is detected.
``first_dirty_offset`` is where the cleaner stopped last time (Kafka's per-directory
``cleaner-offset-checkpoint``); files written before compaction existed lack it, which reads
as 0, "clean from the log start".

``high_watermark`` is the replicated high watermark of a clustered partition (Kafka's per-directory
``replication-offset-checkpoint``), -1 on a single node, where the high watermark is not
replicated.  Why here rather than in a per-directory file as Kafka does: a partition opens,
recovers, moves and is deleted on its own, so everything it restarts with lives in its own
directory; the cost is one small write per partition per checkpoint interval.  Recovery clamps
it to the recovered log end.
"""

from __future__ import annotations

import os
from typing import NamedTuple

from log.sync_ledger import replace, sync, sync_directory

CHECKPOINT_FILE = "partition.checkpoint"
_VERSION = 1


def write_atomically(path: str, data: bytes, *, durable: bool = True, mode: int = 0o644) -> None:
    """Replace ``path`` with ``data`` via a temporary file and rename.

    With ``durable`` the data and the directory entry are fsynced, so after a crash the file
    is either the old or the new version.  Without it (hot-path snapshots on segment roll) a
    crash may leave an empty or torn file, which readers detect and ignore.  ``mode`` gives
    the file's permission bits (0o600 for secrets such as SCRAM credentials).
    """
    temporary = path + ".tmp"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        os.write(fd, data)
        if durable:
            sync(fd)
    finally:
        os.close(fd)
    replace(temporary, path)
    if durable:
        sync_directory(os.path.dirname(path))


class PartitionCheckpoint(NamedTuple):
    log_start_offset: int = 0
    recovery_point: int = 0
    clean_shutdown: bool = False
    first_dirty_offset: int = 0
    high_watermark: int = -1

    @classmethod
    def read(cls, directory: str) -> PartitionCheckpoint | None:
        """The stored checkpoint, or None when missing or unreadable (treated as unclean)."""
        try:
            with open(os.path.join(directory, CHECKPOINT_FILE)) as file:
                fields = dict(line.split(None, 1) for line in file if line.strip())
            if int(fields["version"]) != _VERSION:
                return None
            return cls(
                int(fields["log_start_offset"]),
                int(fields["recovery_point"]),
                fields["clean_shutdown"].strip() == "1",
                int(fields.get("first_dirty_offset", 0)),
                int(fields.get("high_watermark", -1)),
            )
        except (OSError, ValueError, KeyError):
            return None

    def write(self, directory: str, *, durable: bool = True) -> None:
        text = (
            f"version {_VERSION}\n"
            f"log_start_offset {self.log_start_offset}\n"
            f"recovery_point {self.recovery_point}\n"
            f"clean_shutdown {int(self.clean_shutdown)}\n"
            f"first_dirty_offset {self.first_dirty_offset}\n"
            f"high_watermark {self.high_watermark}\n"
        )
        write_atomically(os.path.join(directory, CHECKPOINT_FILE), text.encode(), durable=durable)

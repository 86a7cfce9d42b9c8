"""Removing a partition directory the way Kafka does: rename it ``-delete``, then delete it.

The rename is the commit point of a deletion: once the directory no longer carries its
``<topic>-<partition>`` name, no start-up and no re-creation of the topic can mistake its files
for live data, and a crash before the files are gone leaves a ``-delete`` directory that the
next start-up removes.  The new name must therefore always be a legal file name: a topic name
may be 249 characters long, and ``<topic>-<partition>.<32 hex digits>-delete`` would then exceed
the 255 bytes most file systems allow, so the topic part is cut short, exactly as Kafka's
``LocalLog.logDeleteDirName`` does.
"""

from __future__ import annotations

import logging
import os
import shutil
import uuid

from log.sync_ledger import replace, sync_directory

logger = logging.getLogger(__name__)

DELETE_SUFFIX = "-delete"
# NAME_MAX of ext4, xfs, btrfs and tmpfs; Kafka hard-codes the same limit.
MAX_NAME_BYTES = 255


def deletion_name(partition_dir_name: str, suffix: str = DELETE_SUFFIX) -> str:
    """``"orders-3"`` -> ``"orders-3.<uuid hex>-delete"``, the topic cut so it fits 255 bytes.

    The partition number and the unique id are kept whole (they make the name unique); only
    the topic is truncated.  Topic names are ASCII, so characters and bytes agree.
    """
    topic, _, partition = partition_dir_name.rpartition("-")
    tail = f"-{partition}.{uuid.uuid4().hex}{suffix}"
    return topic[: MAX_NAME_BYTES - len(tail)] + tail


def is_deletion_leftover(name: str) -> bool:
    """A directory that a deletion renamed but did not finish removing."""
    return name.endswith(DELETE_SUFFIX)


def remove_tree(path: str) -> None:
    """Delete ``path`` and everything in it; a file that cannot go is logged, not fatal.

    The directory is already out of the way (renamed), so what is left behind is only wasted
    space: it is reported at ERROR so an operator can see it, and the next start-up retries.
    """

    def report(_function: object, failed_path: str, exc_info: tuple) -> None:
        logger.error("cannot delete %s while removing %s: %s", failed_path, path, exc_info[1])

    shutil.rmtree(path, onerror=report)  # onexc needs Python 3.12


def rename_aside(directory: str, suffix: str = DELETE_SUFFIX) -> str:
    """Rename ``directory`` (durably) to its ``<topic>-<p>.<uuid><suffix>`` name; the new path."""
    parent, name = os.path.split(os.path.abspath(directory))
    renamed = os.path.join(parent, deletion_name(name, suffix))
    replace(directory, renamed)
    sync_directory(parent)
    return renamed


def delete_partition_directory(directory: str) -> str:
    """Rename ``directory`` to its deletion name (durably), then remove it; return the new path."""
    doomed = rename_aside(directory)
    remove_tree(doomed)
    return doomed

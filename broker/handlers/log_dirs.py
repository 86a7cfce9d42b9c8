"""DescribeLogDirs: each log directory with the size of every partition it holds (``kafka-log-dirs``).

As Kafka answers it: every directory of ``log.dirs``, with its total and usable bytes (v4+),
the requested partitions it holds (all with a null topic list; unknown ones are left out), and
KAFKA_STORAGE_ERROR for a directory that cannot be read. A single node has no replica moving
between directories, so no partition is a "future" one and no offset lags.
"""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING

from broker.requests.acl_checks import cluster_authorized
from broker.requests.api_support import Served
from broker.requests.context import RequestContext
from log.disk_error_report import describe_os_error
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode

if TYPE_CHECKING:
    from wire.messages import (
        DescribeLogDirsRequest,
        DescribeLogDirsResponse,
        DescribeLogDirsResponsePartitions,
        DescribeLogDirsResponseResults,
    )

log = logging.getLogger(__name__)


def _disk_usage(log_dir: str) -> tuple[int, int] | None:
    """(total, usable) bytes of the file system holding ``log_dir``; None if it cannot be read."""
    try:
        stats = os.statvfs(log_dir)
    except OSError as exc:
        log.error("cannot read the file system of log directory %s: %s", log_dir, describe_os_error(exc))
        return None
    return stats.f_blocks * stats.f_frsize, stats.f_bavail * stats.f_frsize


async def handle_describe_log_dirs(
    ctx: RequestContext, request: DescribeLogDirsRequest
) -> DescribeLogDirsResponse:
    if not cluster_authorized(ctx):
        return {"error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "results": []}
    requested = request["topics"]
    wanted = None if requested is None else {(t["topic"], p) for t in requested for p in t["partitions"]}
    store = ctx.broker.partitions
    held: dict[str, dict[str, list[DescribeLogDirsResponsePartitions]]] = {
        log_dir: {} for log_dir in store.log_dirs
    }
    for (topic, partition), partition_log in store.logs():
        if wanted is not None and (topic, partition) not in wanted:
            continue
        topics = held.setdefault(os.path.dirname(partition_log.directory), {})
        topics.setdefault(topic, []).append(
            {
                "partition_index": partition,
                "partition_size": partition_log.size_in_bytes,
                "offset_lag": 0,
                "is_future_key": False,  # no replica moves between directories here
            }
        )
    results: list[DescribeLogDirsResponseResults] = []
    for log_dir, topics in held.items():
        usage = _disk_usage(log_dir)
        if usage is None:
            results.append({"error_code": ErrorCode.KAFKA_STORAGE_ERROR, "log_dir": log_dir, "topics": []})
            continue
        results.append(
            {
                "error_code": ErrorCode.NONE,
                "log_dir": log_dir,
                "topics": [
                    {"name": name, "partitions": partitions} for name, partitions in sorted(topics.items())
                ],
                "total_bytes": usage[0],
                "usable_bytes": usage[1],
            }
        )
    return {"error_code": ErrorCode.NONE, "results": results}


HANDLERS = {ApiKey.DESCRIBE_LOG_DIRS: Served(handle_describe_log_dirs)}

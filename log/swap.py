"""Kafka's file protocol for replacing segments, and finishing it after a crash.

Segments leave and enter a log through renames, so that a crash at any instant leaves files
that say unambiguously what to do (Kafka's LocalLog.replaceSegments and LogLoader):

- ``.cleaned``: a replacement the cleaner is still writing.  Not yet decided: deleted at start-up.
- ``.swap``: a complete, fsynced replacement.  Decided: at start-up every live segment whose
  base offset lies in the offset range the swap segments cover is deleted and the ``.swap``
  files are renamed to live names.
- ``.deleted``: a segment removed from the log (retention, DeleteRecords, replaced by the
  cleaner) whose files wait ``file.delete.delay.ms`` so that readers still holding its
  descriptor finish; deleted at start-up.

So a range of offsets is served by the old segments or by the new one, never by a mix.
"""

from __future__ import annotations

import logging
import os

from log.config import LogConfig
from log.segment import Segment
from log.sync_ledger import remove, replace, sync_directory

logger = logging.getLogger(__name__)

CLEANED = ".cleaned"
SWAP = ".swap"
DELETED = ".deleted"
_KINDS = (".log", ".index", ".timeindex", ".txnindex")


def parse_segment_file(name: str) -> tuple[int, str, str] | None:
    """``"00000000000000000042.index.swap"`` -> ``(42, ".index", ".swap")``; None for other files."""
    stem, _, tail = name.partition(".")
    kind, _, suffix = tail.partition(".")
    if len(stem) != 20 or not stem.isdigit() or "." + kind not in _KINDS:
        return None
    return int(stem), "." + kind, "." + suffix if suffix else ""


def finish_interrupted_replacements(directory: str, config: LogConfig, now_ms: int) -> None:
    """Before a log is opened: drop undecided and retired files, complete decided swaps."""
    swaps: list[int] = []
    for name in sorted(os.listdir(directory)):
        parsed = parse_segment_file(name)
        if parsed is None:
            continue
        base, kind, suffix = parsed
        if suffix in (CLEANED, DELETED):
            remove(os.path.join(directory, name))
        elif suffix == SWAP and kind == ".log":
            swaps.append(base)
    if not swaps:
        return
    low, high = min(swaps), min(swaps)
    for base in swaps:
        segment = Segment(directory, base, config, now_ms, SWAP)
        try:
            segment.load(config.index_interval_bytes)
            high = max(high, segment.next_offset)
        finally:
            segment.close()
    for name in os.listdir(directory):
        parsed = parse_segment_file(name)
        if parsed is not None and parsed[2] == "" and low <= parsed[0] < high:
            logger.info("%s: deleting %s, replaced by an interrupted swap", directory, name)
            remove(os.path.join(directory, name))
    for name in os.listdir(directory):
        parsed = parse_segment_file(name)
        if parsed is not None and parsed[2] == SWAP:
            logger.info("%s: completing the swap of %s", directory, name)
            replace(os.path.join(directory, name), os.path.join(directory, name[: -len(SWAP)]))
    sync_directory(directory)

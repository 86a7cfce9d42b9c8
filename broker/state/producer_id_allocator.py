"""Producer id allocation for InitProducerId.

Producer ids must never be reused, even across restarts: a reused id would make the
partition's idempotence state treat a new producer's batches as duplicates of an old one.
Ids are handed out from blocks whose upper bound is persisted *before* any id of the block
is used (as Kafka's controller does with ProducerIdsRecord), so a crash skips at most the
rest of one block.
"""

from __future__ import annotations

from pathlib import Path

from log.checkpoint import write_atomically

BLOCK_SIZE = 1000


class ProducerIdAllocator:
    """Monotonic producer ids backed by ``<log.dir>/odradek-producer-ids``."""

    FILE_NAME = "odradek-producer-ids"

    def __init__(self, directory: Path) -> None:
        self._path = directory / self.FILE_NAME
        self._next = int(self._path.read_text().strip()) if self._path.exists() else 0
        self._block_end = self._next

    def allocate(self) -> int:
        """A producer id never handed out before by this broker."""
        if self._next >= self._block_end:
            self._block_end = self._next + BLOCK_SIZE
            write_atomically(str(self._path), str(self._block_end).encode())
        producer_id = self._next
        self._next += 1
        return producer_id

"""State batches as the share-group state APIs carry them (``StateBatches`` entries)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from coordinator.share.model import RecordState, StateBatch


def batches_to_wire(batches: Iterable[StateBatch]) -> list[dict[str, int]]:
    return [
        {
            "first_offset": b.first_offset,
            "last_offset": b.last_offset,
            "delivery_state": int(b.delivery_state),
            "delivery_count": b.delivery_count,
        }
        for b in batches
    ]


def batches_from_wire(entries: Iterable[Mapping[str, Any]]) -> list[StateBatch]:
    """Batches a peer sent, checked: a state this broker does not know, a range ending before
    it starts or below offset 0, or a negative delivery count is refused with ValueError."""
    batches = []
    for e in entries:
        first, last, count = e["first_offset"], e["last_offset"], e["delivery_count"]
        if not 0 <= first <= last or count < 0:
            raise ValueError(f"state batch {first}-{last} with delivery count {count} is not valid")
        batches.append(StateBatch(first, last, RecordState(e["delivery_state"]), count))
    return batches

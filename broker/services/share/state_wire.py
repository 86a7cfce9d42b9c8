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
    """Batches a peer sent; a state this broker does not know is refused with ValueError."""
    return [
        StateBatch(e["first_offset"], e["last_offset"], RecordState(e["delivery_state"]), e["delivery_count"])
        for e in entries
    ]

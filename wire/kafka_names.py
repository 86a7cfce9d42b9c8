"""Enums whose member names are Kafka's names in upper snake case.

Kafka spells API keys (``InitProducerId``) and transaction states (``PrepareCommit``) in
Pascal case on the wire and in its tools; our enums name members in upper snake case, so one
rule turns a member name back into Kafka's spelling and every such enum shares it.
"""

from __future__ import annotations

from enum import IntEnum
from typing import Self


class KafkaNamedEnum(IntEnum):
    """An ``IntEnum`` whose members spell Kafka's names (``PREPARE_COMMIT`` -> ``PrepareCommit``)."""

    @property
    def kafka_name(self) -> str:
        """Kafka's spelling of this member's name."""
        return "".join(part.capitalize() for part in self.name.split("_"))

    @classmethod
    def by_kafka_name(cls, name: str) -> Self | None:
        """The member Kafka calls ``name``, or None when no member is spelled so."""
        return next((member for member in cls if member.kafka_name == name), None)

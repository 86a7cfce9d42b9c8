"""The topic registry: names, ids, partition counts and per-topic config overrides.

It is the broker's metadata (what KRaft's metadata log holds in Kafka) for a single node:
a small JSON document in the first log directory, replaced atomically on every change so a
crash leaves either the old or the new registry, never a mix.  Topic ids are random UUIDs
kept for the topic's lifetime, as Kafka's are.
"""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from log.checkpoint import write_atomically

MAX_TOPIC_NAME_LENGTH = 249
_LEGAL_TOPIC_NAME = re.compile(r"[a-zA-Z0-9._-]+")
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})


def topic_name_error(name: str | None) -> str | None:
    """Why ``name`` is not a legal topic name (Kafka's ``Topic.validate``), or None."""
    if not name:
        return "Topic name is illegal, it can't be empty"
    if name in (".", ".."):
        return 'Topic name cannot be "." or ".."'
    if len(name) > MAX_TOPIC_NAME_LENGTH:
        return f"Topic name is illegal, it can't be longer than {MAX_TOPIC_NAME_LENGTH} characters"
    if not _LEGAL_TOPIC_NAME.fullmatch(name):
        return (
            f'Topic name "{name}" is illegal, it contains a character other than '
            "ASCII alphanumerics, '.', '_' and '-'"
        )
    return None


def _collision_key(name: str) -> str:
    """Kafka forbids topics that differ only in '.' versus '_' (their metric names clash)."""
    return name.replace(".", "_")


@dataclass(slots=True)
class TopicInfo:
    """One topic as the broker knows it."""

    name: str
    topic_id: bytes
    partitions: int
    configs: dict[str, str] = field(default_factory=dict)
    leader_epoch: int = 0

    @property
    def internal(self) -> bool:
        return self.name in INTERNAL_TOPICS

    def to_json(self) -> dict[str, object]:
        return {
            "name": self.name,
            "id": str(uuid.UUID(bytes=self.topic_id)),
            "partitions": self.partitions,
            "configs": self.configs,
            "leader_epoch": self.leader_epoch,
        }

    @classmethod
    def from_json(cls, data: dict) -> TopicInfo:
        return cls(
            name=data["name"],
            topic_id=uuid.UUID(data["id"]).bytes,
            partitions=int(data["partitions"]),
            configs=dict(data.get("configs", {})),
            leader_epoch=int(data.get("leader_epoch", 0)),
        )


class TopicRegistry:
    """All topics of this broker, persisted in ``<log.dir>/odradek-topics.json``."""

    FILE_NAME = "odradek-topics.json"

    def __init__(self, directory: Path) -> None:
        self._path = directory / self.FILE_NAME
        self._topics: dict[str, TopicInfo] = {}
        self._by_id: dict[bytes, TopicInfo] = {}
        # Kept as topics come and go: the partition limits read it on every reservation.
        self.partition_count = 0
        if self._path.exists():
            document = json.loads(self._path.read_text(encoding="utf-8"))
            for entry in document.get("topics", []):
                self._index(TopicInfo.from_json(entry))

    def _index(self, topic: TopicInfo) -> None:
        self._topics[topic.name] = topic
        self._by_id[topic.topic_id] = topic
        self.partition_count += topic.partitions

    def _save(self) -> None:
        document = {"version": 1, "topics": [t.to_json() for t in self._topics.values()]}
        write_atomically(str(self._path), json.dumps(document, indent=1, sort_keys=True).encode())

    def __contains__(self, name: object) -> bool:
        return name in self._topics

    def __len__(self) -> int:
        return len(self._topics)

    def get(self, name: str) -> TopicInfo | None:
        return self._topics.get(name)

    def by_id(self, topic_id: bytes) -> TopicInfo | None:
        return self._by_id.get(topic_id)

    def all(self) -> list[TopicInfo]:
        return list(self._topics.values())

    def collision(self, name: str) -> str | None:
        """An existing topic whose name clashes with ``name`` ('.' vs '_'), if any."""
        key = _collision_key(name)
        for existing in self._topics:
            if existing != name and _collision_key(existing) == key:
                return existing
        return None

    def create(
        self, name: str, partitions: int, configs: dict[str, str] | None = None, topic_id: bytes | None = None
    ) -> TopicInfo:
        """Register a new topic (callers validate name, count and configs first); a cluster
        member registers topics under the id the cluster gave them."""
        topic = TopicInfo(name, topic_id or uuid.uuid4().bytes, partitions, dict(configs or {}))
        self._index(topic)
        self._save()
        return topic

    def delete(self, name: str) -> TopicInfo:
        topic = self._topics.pop(name)
        del self._by_id[topic.topic_id]
        self.partition_count -= topic.partitions
        self._save()
        return topic

    def set_partitions(self, name: str, partitions: int) -> None:
        topic = self._topics[name]
        self.partition_count += partitions - topic.partitions
        topic.partitions = partitions
        self._save()

    def set_configs(self, name: str, configs: dict[str, str]) -> None:
        self._topics[name].configs = dict(configs)
        self._save()

"""Server-side partition assignors of KIP-848 consumer groups: "uniform" and "range".

In the consumer protocol the coordinator, not a group leader, decides who owns what.  Both
assignors take the members (with their subscriptions and their current target assignment)
and the partition counts of the subscribed topics, and return a new target assignment.

* ``uniform`` (Kafka's default) balances the number of partitions per member as evenly as
  the subscriptions allow while moving as few partitions as possible: a member keeps what it
  has unless that breaks the balance.  This is our own algorithm for Kafka's stated goals
  (balance first, then stickiness), not a transcription of Kafka's builders.
* ``range`` gives each member contiguous ranges of every subscribed topic, Kafka's way:
  members ordered static-first (by instance id) then by member id, the first ``P % N``
  members of a topic getting one extra partition, so co-partitioned topics line up.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

TopicId = bytes
Assignment = dict[TopicId, frozenset[int]]


@dataclass(frozen=True)
class MemberSpec:
    """What an assignor knows about one member."""

    member_id: str
    instance_id: str | None
    topics: frozenset[TopicId]
    current: Mapping[TopicId, frozenset[int]] = field(default_factory=dict)


Assignor = Callable[[list[MemberSpec], Mapping[TopicId, int]], dict[str, Assignment]]


def _ordered(members: list[MemberSpec]) -> list[MemberSpec]:
    """Static members first (by instance id), then dynamic ones (by member id)."""
    return sorted(members, key=lambda m: (m.instance_id is None, m.instance_id or m.member_id))


def assign_range(members: list[MemberSpec], partitions: Mapping[TopicId, int]) -> dict[str, Assignment]:
    result: dict[str, Assignment] = {m.member_id: {} for m in members}
    ordered = _ordered(members)
    for topic in sorted({t for m in members for t in m.topics if t in partitions}):
        subscribers = [m for m in ordered if topic in m.topics]
        quota, extra = divmod(partitions[topic], len(subscribers))
        start = 0
        for index, member in enumerate(subscribers):
            end = start + quota + (1 if index < extra else 0)
            if end > start:
                result[member.member_id][topic] = frozenset(range(start, end))
            start = end
    return result


def assign_uniform(members: list[MemberSpec], partitions: Mapping[TopicId, int]) -> dict[str, Assignment]:
    ordered = _ordered(members)
    owned: dict[str, set[tuple[TopicId, int]]] = {m.member_id: set() for m in ordered}
    taken: set[tuple[TopicId, int]] = set()
    # 1. Stickiness: keep every current partition that still exists and is still subscribed.
    for member in ordered:
        for topic, current in member.current.items():
            if topic not in member.topics or topic not in partitions:
                continue
            for partition in current:
                if partition < partitions[topic] and (topic, partition) not in taken:
                    owned[member.member_id].add((topic, partition))
                    taken.add((topic, partition))
    subscribers = {topic: [m for m in ordered if topic in m.topics] for topic in partitions}
    # 2. Hand out the free partitions, scarce topics first, each to its least loaded subscriber.
    for topic in sorted(partitions, key=lambda t: (len(subscribers[t]), t)):
        if not subscribers[topic]:
            continue
        for partition in range(partitions[topic]):
            if (topic, partition) not in taken:
                receiver = min(subscribers[topic], key=lambda m: len(owned[m.member_id]))
                owned[receiver.member_id].add((topic, partition))
                taken.add((topic, partition))
    # 3. Balance: move partitions from the most to the least loaded eligible member until no
    #    member has two more than another member that could take one of its partitions.
    #    Every move lowers the sum of squared loads, so this ends.
    moved = True
    while moved:
        moved = False
        for donor in sorted(ordered, key=lambda m: -len(owned[m.member_id])):
            load = len(owned[donor.member_id])
            for topic, partition in sorted(owned[donor.member_id]):
                eligible = [m for m in subscribers[topic] if len(owned[m.member_id]) <= load - 2]
                if eligible:
                    receiver = min(eligible, key=lambda m: len(owned[m.member_id]))
                    owned[donor.member_id].remove((topic, partition))
                    owned[receiver.member_id].add((topic, partition))
                    moved = True
                    break
            if moved:
                break
    result: dict[str, Assignment] = {}
    for member_id, pairs in owned.items():
        by_topic: dict[TopicId, set[int]] = {}
        for topic, partition in pairs:
            by_topic.setdefault(topic, set()).add(partition)
        result[member_id] = {topic: frozenset(ps) for topic, ps in by_topic.items()}
    return result


ASSIGNORS: dict[str, Assignor] = {"uniform": assign_uniform, "range": assign_range}

"""Moving partitions when ``odradek serve --processes`` starts with another N than last time.

More processes: the new ones start empty, so each topic's single-replica partitions are spread
again over all of this machine's processes (the fewest moves that leave no process more than one
partition of a topic ahead of another).  Fewer: the processes that go away are started once more,
every replica they hold moves to the remaining ones, and only then are they stopped and their
directories removed, so nothing they held is lost.  The moves are ordinary reassignments
(AlterPartitionReassignments, as ``kafka-reassign-partitions.sh`` sends): the new replica copies
the log from the leader, joins the ISR, takes the leadership, and the old one is deleted.

Only this machine's brokers are considered: with ``--cluster``, other machines' partitions and
replicas stay where they are.
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from collections.abc import Collection, Mapping

from broker.client.admin_client import KafkaConnection
from wire.api_keys import ApiKey

Replicas = tuple[int, ...]
Place = tuple[str, int]
MOVE_TIMEOUT_S = 600.0
REASSIGNMENT_VERSION = 0


def planned_moves(
    assignments: Mapping[Place, Replicas], staying: Collection[int], leaving: Collection[int]
) -> dict[Place, Replicas]:
    """New replica lists for the partitions that move: every replica on a ``leaving`` broker
    goes to the least loaded ``staying`` one it is not on yet, then each topic's one-replica
    partitions on ``staying`` brokers are evened out."""
    moves: dict[Place, Replicas] = {}
    mine = set(staying) | set(leaving)
    for topic in sorted({topic for topic, _ in assignments}):
        places = sorted(p for p in assignments if p[0] == topic)
        current = {p: assignments[p] for p in places if set(assignments[p]) & mine}
        load = Counter({node: 0 for node in staying})
        for replicas in current.values():
            load.update(r for r in replicas if r in load)
        for place, replicas in current.items():
            if not set(replicas) & set(leaving):
                continue
            moved = list(replicas)
            for index, replica in enumerate(moved):
                if replica in leaving:
                    target = min(
                        (n for n in staying if n not in moved), key=lambda n: (load[n], n), default=None
                    )
                    if target is None:
                        raise SystemExit(
                            f"odradek: {place[0]}-{place[1]} has more replicas than processes remain"
                        )
                    moved[index] = target
                    load[target] += 1
            moves[place] = current[place] = tuple(moved)
        singles = [p for p, replicas in current.items() if len(replicas) == 1 and replicas[0] in load]
        while singles and max(load.values()) - min(load.values()) > 1:
            busiest, idlest = max(load, key=lambda n: (load[n], -n)), min(load, key=lambda n: (load[n], n))
            place = next(p for p in singles if current[p] == (busiest,))
            moves[place] = current[place] = (idlest,)
            load[busiest] -= 1
            load[idlest] += 1
    return moves


def wait_registered(address: str, nodes: Collection[int], timeout: float = 60.0) -> None:
    """Until the broker at ``address`` lists every one of ``nodes`` (registered in etcd)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            with KafkaConnection(address, timeout=5) as connection:
                listed = {b["node_id"] for b in connection.metadata([])["brokers"]}
        except OSError:
            listed = set()
        if set(nodes) <= listed:
            return
        if time.monotonic() > deadline:
            raise SystemExit(
                f"odradek: brokers {sorted(set(nodes) - listed)} not registered after {timeout:.0f} s"
            )
        time.sleep(0.5)


def assignments_of(connection: KafkaConnection) -> dict[Place, Replicas]:
    """Every partition's replicas, as Metadata lists them."""
    answer = connection.metadata(None)
    return {
        (topic["name"], partition["partition_index"]): tuple(partition["replica_nodes"])
        for topic in answer["topics"]
        for partition in topic["partitions"]
    }


def move_partitions(address: str, staying: Collection[int], leaving: Collection[int]) -> int:
    """Reassign what :func:`planned_moves` says through the broker at ``address`` and wait until
    every reassignment is done; how many partitions moved."""
    with KafkaConnection(address, timeout=30) as connection:
        moves = planned_moves(assignments_of(connection), staying, leaving)
        if not moves:
            return 0
        by_topic: dict[str, list[dict[str, object]]] = {}
        for (topic, partition), replicas in sorted(moves.items()):
            by_topic.setdefault(topic, []).append({"partition_index": partition, "replicas": list(replicas)})
        body = {
            "timeout_ms": 30_000,
            "topics": [{"name": name, "partitions": partitions} for name, partitions in by_topic.items()],
        }
        answer = connection.request(ApiKey.ALTER_PARTITION_REASSIGNMENTS, REASSIGNMENT_VERSION, body)
        refused = [
            f"{topic['name']}-{p['partition_index']}: {p['error_message'] or p['error_code']}"
            for topic in answer["responses"]
            for p in topic["partitions"]
            if p["error_code"]
        ]
        if answer["error_code"] or refused:
            raise SystemExit(f"odradek: moving partitions was refused: {answer['error_code']} {refused}")
        deadline = time.monotonic() + MOVE_TIMEOUT_S
        while (left := _ongoing(connection)) and time.monotonic() < deadline:
            print(
                f"odradek: moving partitions: {left} of {len(moves)} still copying",
                file=sys.stderr,
                flush=True,
            )
            time.sleep(1.0)
        if left:
            raise SystemExit(
                f"odradek: {left} partition moves unfinished after {MOVE_TIMEOUT_S:.0f} s; see the logs"
            )
        return len(moves)


def _ongoing(connection: KafkaConnection) -> int:
    answer = connection.request(
        ApiKey.LIST_PARTITION_REASSIGNMENTS, REASSIGNMENT_VERSION, {"timeout_ms": 30_000, "topics": None}
    )
    return sum(len(topic["partitions"]) for topic in answer["topics"])

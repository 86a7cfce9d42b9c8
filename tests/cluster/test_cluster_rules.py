"""The cluster's pure rules: replica placement, leader election and the metadata image."""

from __future__ import annotations

import uuid
from collections import Counter

import pytest

from broker.services.cluster.controller import elect, hand_over, preferred
from broker.services.cluster.image import ClusterImage
from broker.services.cluster.layout import (
    BrokerRecord,
    Endpoint,
    Layout,
    PartitionRecord,
    TopicRecord,
    decode_broker,
    decode_partition,
    decode_topic,
    encode,
)
from broker.services.cluster.replica_placement import PlacementError, assign_replicas, rack_alternated


def test_placement_spreads_leaders_and_replicas_evenly() -> None:
    assignments = assign_replicas({1: None, 2: None, 3: None}, 6, 3)
    assert all(len(set(replicas)) == 3 for replicas in assignments)
    assert Counter(replicas[0] for replicas in assignments) == {1: 2, 2: 2, 3: 2}
    # followers are shifted, not always the same order behind each leader
    assert len({replicas[1:] for replicas in assignments}) > 3


def test_placement_puts_replicas_on_distinct_racks_when_it_can() -> None:
    racks = {1: "a", 2: "a", 3: "b", 4: "b", 5: "c"}
    for replicas in assign_replicas(racks, 10, 3):
        assert len({racks[r] for r in replicas}) == 3


def test_processes_of_one_machine_never_hold_two_replicas_of_a_partition() -> None:
    # Two machines of three processes each (num.processes=3), racks unset as in a lone rack.
    machines = {1: "m1", 2: "m1", 3: "m1", 4: "m2", 5: "m2", 6: "m2"}
    assignments = assign_replicas(dict.fromkeys(machines), 12, 2, machines=machines)
    assert all({machines[r] for r in replicas} == {"m1", "m2"} for replicas in assignments)
    assert Counter(replicas[0] for replicas in assignments) == dict.fromkeys(machines, 2)
    with pytest.raises(PlacementError, match="only 2 machine"):
        assign_replicas(dict.fromkeys(machines), 1, 3, machines=machines)
    # Brokers without a machine are machines of their own, as before.
    assert len(assign_replicas({1: None, 2: None, 3: None}, 1, 3, machines={1: "m1"})[0]) == 3


def test_rack_alternated_interleaves_racks() -> None:
    assert rack_alternated({1: "a", 2: "a", 3: "b", 4: "b"}) == [1, 3, 2, 4]


def test_placement_refuses_more_replicas_than_brokers_with_kafkas_message() -> None:
    with pytest.raises(PlacementError, match="only 2 broker"):
        assign_replicas({1: None, 2: None}, 1, 3)


def test_new_partitions_continue_the_rotation() -> None:
    first = assign_replicas({1: None, 2: None, 3: None}, 3, 2, first_partition=0)
    more = assign_replicas({1: None, 2: None, 3: None}, 3, 2, first_partition=3)
    assert [r[0] for r in first + more] == [1, 2, 3, 1, 2, 3]


def _alive(*nodes: int):
    return lambda node: node in nodes


def test_dead_leader_replaced_by_first_live_isr_member_with_a_new_epoch() -> None:
    record = PartitionRecord(1, 4, 9, (1, 2, 3), (1, 2, 3))
    changed = elect(record, _alive(2, 3), _alive(2, 3), unclean=False)
    assert changed == PartitionRecord(2, 5, 10, (1, 2, 3), (2, 3))


def test_dead_follower_leaves_the_isr_without_a_new_leader_epoch() -> None:
    record = PartitionRecord(1, 4, 9, (1, 2, 3), (1, 2, 3))
    assert elect(record, _alive(1, 2), _alive(1, 2), unclean=False) == PartitionRecord(
        1, 4, 10, (1, 2, 3), (1, 2)
    )
    assert elect(record, _alive(1, 2, 3), _alive(1, 2, 3), unclean=False) is None


def test_no_live_isr_member_leaves_the_partition_offline_keeping_the_last_claim() -> None:
    record = PartitionRecord(1, 4, 9, (1, 2, 3), (1,))
    offline = elect(record, _alive(2, 3), _alive(2, 3), unclean=False)
    assert offline == PartitionRecord(-1, 5, 10, (1, 2, 3), (1,))
    assert elect(offline, _alive(2, 3), _alive(2, 3), unclean=False) is None
    # the last ISR member comes back: it leads again
    assert elect(offline, _alive(1, 2, 3), _alive(1, 2, 3), unclean=False) == PartitionRecord(
        1, 6, 11, (1, 2, 3), (1,)
    )


def test_a_broker_shutting_down_hands_over_leadership_and_isr_place_where_another_is_in_sync() -> None:
    eligible, alive = _alive(2, 3), _alive(1, 2, 3)  # 1 is in a controlled shutdown
    led = PartitionRecord(1, 4, 9, (1, 2, 3), (1, 2, 3))
    assert elect(led, eligible, alive, unclean=False) == PartitionRecord(2, 5, 10, (1, 2, 3), (2, 3))
    followed = PartitionRecord(2, 4, 9, (1, 2, 3), (2, 1))
    assert elect(followed, eligible, alive, unclean=False) == PartitionRecord(2, 4, 10, (1, 2, 3), (2,))
    # the last in-sync replica keeps leading until it actually stops: nothing goes offline early
    alone = PartitionRecord(1, 4, 9, (1, 2, 3), (1,))
    assert elect(alone, eligible, alive, unclean=False) is None
    assert elect(alone, eligible, alive, unclean=True) is None


def test_unclean_election_takes_any_live_replica() -> None:
    record = PartitionRecord(-1, 5, 10, (1, 2, 3), (1,))
    assert elect(record, _alive(3), _alive(3), unclean=True) == PartitionRecord(3, 6, 11, (1, 2, 3), (3,))


def test_preferred_leader_returns_once_in_sync() -> None:
    record = PartitionRecord(2, 5, 10, (1, 2, 3), (2, 3))
    assert preferred(record, _alive(1, 2, 3)) is None  # not in the ISR yet
    back = PartitionRecord(2, 5, 11, (1, 2, 3), (2, 3, 1))
    assert preferred(back, _alive(1, 2, 3)) == PartitionRecord(1, 6, 12, (1, 2, 3), (2, 3, 1))
    assert preferred(back, _alive(2, 3)) is None  # 1 is shutting down


def test_records_round_trip_through_json() -> None:
    broker = BrokerRecord(
        2, (Endpoint("PLAINTEXT", "h", 9092, "PLAINTEXT"),), "r1", "abc", shutting_down=True
    )
    topic = TopicRecord("t", uuid.uuid4().bytes, 3, {"cleanup.policy": "compact"})
    partition = PartitionRecord(2, 1, 3, (2, 3), (2,))
    assert decode_broker(encode(broker)) == broker
    assert decode_topic(encode(topic)) == topic
    assert decode_partition(encode(partition)) == partition


def test_image_applies_puts_and_deletes_and_ignores_garbage() -> None:
    layout = Layout("/x")
    image = ClusterImage(layout)
    topic = TopicRecord("t", uuid.uuid4().bytes, 1)
    change = image.apply(layout.topic("t"), encode(topic), 5)
    assert change is not None and change.kind == "topic" and image.topic("t") == topic
    image.apply(layout.partition("t", 0), encode(PartitionRecord(1, 0, 0, (1,), (1,))), 6)
    assert image.partitions[("t", 0)].mod_revision == 6
    assert image.apply(layout.partition("t", 0), b"{not json", 7) is None
    assert image.partition("t", 0) is not None  # the unreadable value left the last good one
    image.apply(layout.topic("t"), None, 8)
    assert image.topic("t") is None and image.revision == 8
    assert image.apply(b"/elsewhere/topics/t", encode(topic), 9) is None


def test_reassignment_grows_then_settles_on_the_target() -> None:
    from broker.services.cluster.reassignment import (
        cancel_reassignment,
        complete_reassignment,
        start_reassignment,
    )

    record = PartitionRecord(1, 3, 7, (1, 2), (1, 2))
    started = start_reassignment(record, (3, 2))
    assert started == PartitionRecord(1, 3, 8, (3, 2, 1), (1, 2), adding=(3,), removing=(1,))
    assert complete_reassignment(started) is None  # 3 is not in sync yet
    caught_up = PartitionRecord(1, 3, 9, (3, 2, 1), (1, 2, 3), adding=(3,), removing=(1,))
    # the removed leader hands over to the first in-sync target replica, at a new epoch
    assert complete_reassignment(caught_up) == PartitionRecord(3, 4, 10, (3, 2), (2, 3))
    assert cancel_reassignment(started) == PartitionRecord(1, 3, 9, (2, 1), (1, 2))
    assert cancel_reassignment(record) is None


def test_reassignment_to_the_same_replicas_in_another_order_completes_at_once() -> None:
    from broker.services.cluster.reassignment import start_reassignment

    record = PartitionRecord(1, 0, 0, (1, 2, 3), (1, 2, 3))
    assert start_reassignment(record, (2, 3, 1)) == PartitionRecord(1, 0, 1, (2, 3, 1), (1, 2, 3))


def test_a_leader_with_an_offline_log_hands_over_to_the_first_eligible_in_sync_replica() -> None:
    led = PartitionRecord(3, 4, 9, (1, 2, 3), (1, 3, 2))
    assert hand_over(led, 3, _alive(1, 2, 3)) == PartitionRecord(1, 5, 10, (1, 2, 3), (1, 2))
    assert hand_over(led, 3, _alive(2, 3)) == PartitionRecord(2, 5, 10, (1, 2, 3), (1, 2))
    # no other in-sync replica can lead: the leader keeps its claim (and its ISR)
    assert hand_over(PartitionRecord(3, 4, 9, (1, 2, 3), (3,)), 3, _alive(1, 2, 3)) is None
    assert hand_over(led, 3, _alive(3)) is None
    # only the leader hands over
    assert hand_over(led, 1, _alive(1, 2, 3)) is None

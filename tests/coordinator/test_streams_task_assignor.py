"""Kafka's sticky task assignor for streams groups: the cases of Kafka's StickyTaskAssignorTest
that apply to Kafka 4.3 (no warm-ups, no rack awareness), and its properties over many groups."""

from __future__ import annotations

import random
from collections import Counter

from coordinator.streams.task_assignor import TaskAssignment, TaskMember, assign_tasks

SUB = "test-subtopology"


def member(
    member_id: str,
    process: str,
    active: dict[str, set[int]] | None = None,
    standby: dict[str, set[int]] | None = None,
) -> TaskMember:
    return TaskMember(
        member_id,
        process,
        {s: frozenset(p) for s, p in (active or {}).items()},
        {s: frozenset(p) for s, p in (standby or {}).items()},
    )


def active(result: dict[str, TaskAssignment], member_id: str, sub: str = SUB) -> set[int]:
    return set(result[member_id].active.get(sub, ()))


def standby(result: dict[str, TaskAssignment], member_id: str, sub: str = SUB) -> set[int]:
    return set(result[member_id].standby.get(sub, ()))


def count(tasks: dict[str, frozenset[int]]) -> int:
    return sum(len(p) for p in tasks.values())


# --- Kafka's StickyTaskAssignorTest ---------------------------------------------------------


def test_one_active_task_to_each_process_when_tasks_match_processes() -> None:
    result = assign_tasks([member(f"member{i}", f"process{i}") for i in (1, 2, 3)], {SUB: 3}, [], 0)
    assert [len(active(result, f"member{i}")) for i in (1, 2, 3)] == [1, 1, 1]
    assert set().union(*(active(result, f"member{i}") for i in (1, 2, 3))) == {0, 1, 2}


def test_tasks_spread_evenly_over_members_of_processes_with_and_without_standbys() -> None:
    members = [member(f"member{p}_{m}", f"process{p}") for p in (1, 2, 3) for m in (1, 2)]
    for replicas, stateful in ((0, []), (1, ["s1", "s2"])):
        result = assign_tasks(members, {"s1": 3, "s2": 3}, stateful, replicas)
        assert all(count(a.active) == 1 for a in result.values())
        merged = Counter((s, p) for a in result.values() for s, ps in a.active.items() for p in ps)
        assert merged == Counter({(s, p): 1 for s in ("s1", "s2") for p in range(3)})


def test_active_tasks_do_not_migrate_to_another_process() -> None:
    result = assign_tasks(
        [member("member1", "process1", {SUB: {0}}), member("member2", "process2", {SUB: {1}})],
        {SUB: 3},
        [],
        0,
    )
    assert 0 in active(result, "member1") and 1 in active(result, "member2")
    assert len(active(result, "member1")) + len(active(result, "member2")) == 3
    # The previous assignment flipped around: each keeps what it had.
    result = assign_tasks(
        [member("member2", "process2", {SUB: {1}}), member("member3", "process1", {SUB: {2}})],
        {SUB: 3},
        [],
        0,
    )
    assert 1 in active(result, "member2") and 2 in active(result, "member3")


def test_a_new_process_takes_tasks_without_everything_moving() -> None:
    result = assign_tasks(
        [
            member("member1", "process1", {SUB: {0, 2}}),
            member("member2", "process2", {SUB: {1}}),
            member("member3", "process3"),
        ],
        {SUB: 3},
        [],
        0,
    )
    assert active(result, "member1") in ({0}, {2})
    assert active(result, "member2") == {1}
    assert active(result, "member3") == {0, 2} - active(result, "member1")


def test_tasks_go_by_process_capacity() -> None:
    members = [
        member("member1", "process1"),
        member("member2_1", "process2"),
        member("member2_2", "process2"),
    ]
    result = assign_tasks(members, {SUB: 3}, [], 0)
    assert [len(active(result, m.member_id)) for m in members] == [1, 1, 1]


def test_unequal_subtopologies_split_evenly() -> None:
    previous = {"s1": {0, 1, 2, 3, 4, 5}, "s2": {0}}
    result = assign_tasks(
        [member("member1", "process1", previous), member("member2", "process2")], {"s1": 6, "s2": 1}, [], 0
    )
    assert count(result["member1"].active) == 4 and count(result["member2"].active) == 3
    assert {s: active(result, "member1", s) | active(result, "member2", s) for s in previous} == previous


def test_stickiness_holds_with_more_members_than_tasks() -> None:
    members = [
        member("member1", "process1", {SUB: {0}}),
        member("member2", "process2", {SUB: {2}}),
        member("member3", "process3", {SUB: {1}}),
        member("member4", "process4"),
        member("member5", "process5"),
    ]
    result = assign_tasks(members, {SUB: 3}, [], 0)
    assert [active(result, f"member{i}") for i in range(1, 6)] == [{0}, {2}, {1}, set(), set()]
    members = [
        member("member1", "process1"),
        member("member2", "process2", {SUB: {0}}),
        member("member3", "process3"),
        member("member4", "process4", {SUB: {2}}),
        member("member5", "process5", {SUB: {1}}),
    ]
    result = assign_tasks(members, {SUB: 3}, [], 0)
    assert [active(result, f"member{i}") for i in range(1, 6)] == [set(), {0}, set(), {2}, {1}]


def test_active_tasks_go_to_their_previous_standby_owners() -> None:
    members = [
        member("member1", "process1", standby={SUB: {2}}),
        member("member2", "process2", standby={SUB: {1}}),
        member("member3", "process3", standby={SUB: {0}}),
    ]
    result = assign_tasks(members, {SUB: 3}, [], 0)
    assert [active(result, f"member{i}") for i in (1, 2, 3)] == [{2}, {1}, {0}]


def test_a_standby_does_not_stay_where_the_task_is_now_active() -> None:
    members = [
        member("member1", "process1", standby={SUB: {0}}),
        member("member2", "process2", standby={SUB: {1}}),
    ]
    result = assign_tasks(members, {SUB: 2}, [SUB], 1)
    assert (active(result, "member1"), standby(result, "member1")) == ({0}, {1})
    assert (active(result, "member2"), standby(result, "member2")) == ({1}, {0})


# --- properties -------------------------------------------------------------------------------


def test_standbys_only_for_stateful_subtopologies_and_only_on_other_processes() -> None:
    members = [member(f"m{i}", f"p{i % 3}") for i in range(6)]
    result = assign_tasks(members, {"stateless": 4, "stateful": 4}, ["stateful"], 2)
    process = {m.member_id: m.process_id for m in members}
    assert all("stateless" not in a.standby for a in result.values())
    for partition in range(4):
        owner = next(m for m, a in result.items() if partition in a.active.get("stateful", ()))
        copies = [m for m, a in result.items() if partition in a.standby.get("stateful", ())]
        assert len(copies) == 2
        assert len({process[m] for m in [owner, *copies]}) == 3  # three processes, one copy each


def test_a_missing_process_drops_the_copies_it_would_hold() -> None:
    result = assign_tasks([member("m1", "p1"), member("m2", "p1")], {SUB: 2}, [SUB], 1)
    assert all(not a.standby for a in result.values())  # one process: no standby anywhere
    result = assign_tasks([member("m1", "p1"), member("m2", "p2")], {SUB: 2}, [SUB], 3)
    assert sum(count(a.standby) for a in result.values()) == 2  # one copy each: two processes


def test_a_join_moves_only_what_the_newcomer_takes() -> None:
    members = [member(f"m{i}", f"p{i}") for i in range(3)]
    before = assign_tasks(members, {"a": 6, "b": 6}, ["b"], 1)
    previous = [
        member(m.member_id, m.process_id, before[m.member_id].active, before[m.member_id].standby)
        for m in members
    ]
    after = assign_tasks([*previous, member("m3", "p3")], {"a": 6, "b": 6}, ["b"], 1)
    moved = sum(
        count(before[m].active) - len(_tasks(before[m].active) & _tasks(after[m].active)) for m in before
    )
    assert moved == count(after["m3"].active) == 3  # 12 tasks over 4 members
    assert all(count(a.active) == 3 for a in after.values())


def test_a_leave_moves_only_the_leavers_tasks() -> None:
    members = [member(f"m{i}", f"p{i}") for i in range(4)]
    before = assign_tasks(members, {"a": 8}, [], 0)
    survivors = [member(m.member_id, m.process_id, before[m.member_id].active) for m in members[1:]]
    after = assign_tasks(survivors, {"a": 8}, [], 0)
    for m in survivors:
        assert _tasks(before[m.member_id].active) <= _tasks(after[m.member_id].active)
    assert sorted(count(a.active) for a in after.values()) == [2, 3, 3]


def test_the_same_group_gets_the_same_assignment() -> None:
    members = [member(f"m{i}", f"p{i % 2}") for i in range(5)]
    first = assign_tasks(members, {"a": 7, "b": 3}, ["a"], 1)
    assert assign_tasks(list(reversed(members)), {"a": 7, "b": 3}, ["a"], 1) == first


def test_random_groups_keep_every_invariant() -> None:
    chosen = random.Random(27)
    for _round in range(200):
        processes = [f"p{i}" for i in range(chosen.randint(1, 4))]
        members = [member(f"m{i}", chosen.choice(processes)) for i in range(chosen.randint(1, 8))]
        tasks = {f"s{i}": chosen.randint(0, 9) for i in range(chosen.randint(1, 3))}
        stateful = [s for s in tasks if chosen.random() < 0.5]
        replicas = chosen.randint(0, 2)
        fresh = assign_tasks(members, tasks, stateful, replicas)
        _check(members, tasks, stateful, replicas, fresh)
        loads = [count(a.active) for a in fresh.values()]
        assert max(loads) - min(loads) <= 1, (members, tasks, fresh)
        # Again from that assignment, with one member gone and one new: still valid.
        kept = [
            member(m.member_id, m.process_id, fresh[m.member_id].active, fresh[m.member_id].standby)
            for m in members[1:]
        ]
        again = [*kept, member("new", chosen.choice(processes))]
        _check(again, tasks, stateful, replicas, assign_tasks(again, tasks, stateful, replicas))


def _tasks(assignment: dict[str, frozenset[int]]) -> set[tuple[str, int]]:
    return {(s, p) for s, ps in assignment.items() for p in ps}


def _check(
    members: list[TaskMember],
    tasks: dict[str, int],
    stateful: list[str],
    replicas: int,
    result: dict[str, TaskAssignment],
) -> None:
    assert set(result) == {m.member_id for m in members}
    every = Counter(t for a in result.values() for t in _tasks(a.active))
    assert every == Counter({(s, p): 1 for s, n in tasks.items() for p in range(n)})
    process = {m.member_id: m.process_id for m in members}
    for task in every:
        holders = [m for m, a in result.items() if task in _tasks(a.active) | _tasks(a.standby)]
        assert len({process[m] for m in holders}) == len(holders)  # one copy per process
        copies = len(holders) - 1
        expected = min(replicas, len(set(process.values())) - 1) if task[0] in stateful else 0
        assert copies == expected, (task, holders)

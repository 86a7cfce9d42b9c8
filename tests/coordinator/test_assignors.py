"""The KIP-848 server-side assignors."""

from __future__ import annotations

import itertools

from coordinator.assignors import MemberSpec, assign_range, assign_uniform

T1, T2 = b"\x01" * 16, b"\x02" * 16


def spec(member_id: str, *topics: bytes, instance: str | None = None, current=None) -> MemberSpec:
    return MemberSpec(member_id, instance, frozenset(topics), current or {})


def flatten(result) -> list[tuple[bytes, int]]:
    return sorted((t, p) for assignment in result.values() for t, ps in assignment.items() for p in ps)


def test_range_gives_contiguous_ranges_static_members_first() -> None:
    members = [spec("b", T1), spec("a", T1), spec("z", T1, instance="i-1")]
    result = assign_range(members, {T1: 7})
    assert result == {
        "z": {T1: frozenset({0, 1, 2})},
        "a": {T1: frozenset({3, 4})},
        "b": {T1: frozenset({5, 6})},
    }


def test_range_co_partitions_topics_and_handles_mixed_subscriptions() -> None:
    result = assign_range([spec("a", T1, T2), spec("b", T1, T2), spec("c", T2)], {T1: 4, T2: 3})
    assert result["a"] == {T1: frozenset({0, 1}), T2: frozenset({0})}
    assert result["b"] == {T1: frozenset({2, 3}), T2: frozenset({1})}
    assert result["c"] == {T2: frozenset({2})}
    assert assign_range([spec("a", T1), spec("b", T1), spec("c", T1)], {T1: 2})["c"] == {}


def test_uniform_balances_and_assigns_every_partition_once() -> None:
    result = assign_uniform([spec(m, T1, T2) for m in "abc"], {T1: 4, T2: 3})
    assert flatten(result) == [(T1, p) for p in range(4)] + [(T2, p) for p in range(3)]
    assert sorted(sum(len(ps) for ps in a.values()) for a in result.values()) == [2, 2, 3]


def test_uniform_is_sticky_when_a_member_joins() -> None:
    before = assign_uniform([spec("a", T1), spec("b", T1)], {T1: 6})
    after = assign_uniform(
        [spec("a", T1, current=before["a"]), spec("b", T1, current=before["b"]), spec("c", T1)], {T1: 6}
    )
    assert flatten(after) == [(T1, p) for p in range(6)]
    assert all(len(after[m][T1]) == 2 for m in "abc")
    assert after["a"][T1] <= before["a"][T1] and after["b"][T1] <= before["b"][T1]


def test_uniform_drops_unsubscribed_and_vanished_partitions() -> None:
    current = {T1: frozenset({0, 1, 5}), T2: frozenset({0})}
    result = assign_uniform([spec("a", T1, current=current)], {T1: 3})
    assert result == {"a": {T1: frozenset({0, 1, 2})}}


def test_uniform_heterogeneous_subscriptions_balance_where_possible() -> None:
    members = [spec("a", T1, T2), spec("b", T1), spec("c", T2)]
    for counts in itertools.product([1, 2, 5], repeat=2):
        result = assign_uniform(members, {T1: counts[0], T2: counts[1]})
        assert flatten(result) == [(T1, p) for p in range(counts[0])] + [(T2, p) for p in range(counts[1])]
        assert T2 not in result["b"] and T1 not in result["c"]
    loads = {m: sum(map(len, a.values())) for m, a in assign_uniform(members, {T1: 5, T2: 5}).items()}
    assert max(loads.values()) - min(loads.values()) <= 1

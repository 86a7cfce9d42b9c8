"""The share-group history checker, on small hand-built runs: a run that follows its script
passes with the script's fingerprint, and each kind of violation is reported."""

from __future__ import annotations

from compat_tests.kit.share_history import (
    ACCEPT,
    ACCEPTED,
    ARCHIVED,
    CRASH,
    REJECT,
    REJECTED,
    RELEASE,
    Acknowledged,
    Delivered,
    Event,
    Killed,
    Script,
    check,
    check_failover,
)

RECORDS = [(p, o) for p in range(2) for o in range(40)]


def play(script: Script, records: list[tuple[int, int]]) -> list[Event]:
    """A well-behaved run: one member at a time takes each pending record, does what the script
    says, and a crash kills it; every record is redelivered with its next delivery count."""
    events: list[Event] = []
    pending = {r: 1 for r in records}
    member = 0
    while pending:
        for (p, o), count in sorted(pending.items()):
            name = f"m{member}"
            events.append(Delivered(name, p, o, count))
            decision = script.decide(p, o, count)
            if decision == CRASH:
                events.append(Killed(name))
                member += 1
            else:
                events.append(Acknowledged(name, p, o, decision, None))
            if decision in (ACCEPT, REJECT) or count == script.delivery_limit:
                del pending[p, o]
            else:
                pending[p, o] = count + 1
    return events


def test_script_is_deterministic_and_its_crashes_fall_on_deliveries_that_happen() -> None:
    script = Script.build(7, RECORDS, kills=3)
    assert script == Script.build(7, reversed(RECORDS), kills=3)
    assert len(script.crashes) == 3
    for p, o, count in script.crashes:
        assert script.path(p, o)[count - 1] == CRASH
    assert {script.decide(p, o, 1) for p, o in RECORDS} >= {ACCEPT, RELEASE}
    assert Script.build(8, RECORDS, kills=3).fingerprint(RECORDS) != script.fingerprint(RECORDS)


def test_outcome_follows_the_path() -> None:
    script = Script(1, 3, 0.0, 0.0, frozenset({(0, 0, 1), (0, 1, 1), (0, 1, 2), (0, 1, 3)}))
    assert script.path(0, 0) == [CRASH, ACCEPT]
    assert script.outcome(0, 0) == (ACCEPTED, 2)
    assert script.outcome(0, 1) == (ARCHIVED, 3)
    assert Script(1, 3, 0.0, 1.0, frozenset()).outcome(0, 2) == (REJECTED, 1)


def test_a_run_that_follows_its_script_passes_with_its_fingerprint() -> None:
    script = Script.build(3, RECORDS, kills=2)
    report = check(play(script, RECORDS), RECORDS, script)
    assert not report.violations, str(report)
    assert report.fingerprint == script.fingerprint(RECORDS)
    assert report.fingerprint.crashed == 2
    assert report.fingerprint.accepted + report.fingerprint.rejected + report.fingerprint.archived == 80


def test_violations_are_reported() -> None:
    script = Script(1, 3, 0.0, 0.0, frozenset())  # every record accepted on its first delivery
    events: list[Event] = [
        Delivered("a", 0, 0, 1),
        Delivered("b", 0, 0, 1),  # overlap, and a delivery count that did not grow
        Acknowledged("a", 0, 0, ACCEPT, None),
        Delivered("b", 0, 0, 2),  # after it was accepted
        Acknowledged("b", 0, 0, ACCEPT, None),  # accepted twice
        Delivered("a", 0, 1, 1),
        Acknowledged("a", 0, 1, ACCEPT, "InvalidRecordStateException: gone"),
        Delivered("a", 0, 2, 3),  # skipped two deliveries
        Acknowledged("a", 0, 2, ACCEPT, None),
    ]
    report = check(events, [(0, 0), (0, 1), (0, 2), (0, 3)], script)
    text = "\n".join(report.violations)
    assert "0:0 delivered to b while a held it (overlap)" in text
    assert "0:0 delivered to b with delivery count 1 after 1" in text
    assert "0:0 delivered to b after it was accepted" in text
    assert "0:0 accepted twice" in text
    assert "0:1: a's ACCEPT refused" in text
    assert "0:1 lost" in text
    assert "0:2 delivered to a with delivery count 3 after 0" in text
    assert "0:2 ended ('accepted', 3), the script says ('accepted', 1)" in text
    assert "0:3 lost: 0 deliveries" in text


def test_a_kill_at_the_limit_archives_and_below_it_releases() -> None:
    script = Script(1, 2, 0.0, 0.0, frozenset({(0, 0, 1), (0, 0, 2), (0, 1, 1)}))
    events: list[Event] = [
        Delivered("a", 0, 0, 1),
        Delivered("a", 0, 1, 1),
        Killed("a"),
        Delivered("b", 0, 0, 2),
        Delivered("b", 0, 1, 2),
        Acknowledged("b", 0, 1, ACCEPT, None),
        Killed("b"),
    ]
    report = check(events, [(0, 0), (0, 1)], script)
    assert not report.violations, str(report)
    assert report.outcomes == {(0, 0): (ARCHIVED, 2), (0, 1): (ACCEPTED, 2)}
    assert report.fingerprint.crashed == 3


def test_failover_history() -> None:
    events: list[Event] = [
        Delivered("a", 0, 0, 1),
        Delivered("a", 0, 1, 1),
        Acknowledged("a", 0, 0, ACCEPT, "NetworkException: leader gone"),
        Acknowledged("a", 0, 1, ACCEPT, None),
        Delivered("b", 0, 0, 1),  # its ACCEPT was refused: again, at any delivery count
        Acknowledged("b", 0, 0, ACCEPT, None),
    ]
    report = check_failover(events, [(0, 0), (0, 1)])
    assert not report.violations, str(report)
    assert (report.accepted, report.deliveries, report.redelivered, report.refused) == (2, 3, 1, 1)
    bad = check_failover([*events, Delivered("b", 0, 1, 2)], [(0, 0), (0, 1), (0, 2)])
    assert bad.violations == [
        "0:1 delivered to b (delivery count 2) after its ACCEPT was confirmed",
        "1 records never accepted: [(0, 2)]",
    ]

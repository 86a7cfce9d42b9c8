"""The keyed timer behind every coordinator deadline."""

from __future__ import annotations

from coordinator.timer import Timer


def test_due_callbacks_come_out_in_deadline_order_one_at_a_time() -> None:
    timer = Timer()
    fired: list[str] = []
    timer.schedule("b", 20, lambda: fired.append("b"))
    timer.schedule("a", 10, lambda: fired.append("a"))
    timer.schedule("c", 30, lambda: fired.append("c"))
    assert timer.next_deadline() == 10
    while (callback := timer.pop_due(25)) is not None:
        callback()
    assert fired == ["a", "b"]
    assert timer.next_deadline() == 30


def test_rescheduling_a_key_replaces_its_deadline_and_cancel_removes_it() -> None:
    timer = Timer()
    fired: list[str] = []
    timer.schedule("session", 10, lambda: fired.append("first"))
    timer.schedule("session", 50, lambda: fired.append("second"))
    assert timer.pop_due(40) is None
    assert timer.next_deadline() == 50
    timer.cancel("session")
    assert timer.next_deadline() is None
    assert fired == []


def test_wakeup_only_for_an_earlier_deadline() -> None:
    timer = Timer()
    wakeups: list[int] = []
    timer.on_earlier_deadline = lambda: wakeups.append(timer.next_deadline())
    timer.schedule("a", 100, lambda: None)
    timer.schedule("b", 200, lambda: None)
    timer.schedule("c", 50, lambda: None)
    assert wakeups == [100, 50]

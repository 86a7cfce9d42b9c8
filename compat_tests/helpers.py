"""Waiting helpers shared by the scenarios.

Brokers and clients are asynchronous (rebalances, metadata propagation, fetch long-polls), so
scenarios wait for a condition with a deadline rather than sleeping a fixed time: fast when the
broker is fast, and a clear failure instead of a hang when it never happens.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import TypeVar

from compat_tests.kit.drivers.base import ClientError, Consumer, Received, TopicPartition

T = TypeVar("T")
WAIT_S = 30.0
# How long a polling thread may take to notice it should stop (a poll lasts 0.5 s).
CALL_JOIN_S = 60.0


def now_ms() -> int:
    return int(time.time() * 1000)


def poll_until(consumer: Consumer, count: int, timeout_s: float = WAIT_S) -> list[Received]:
    """Poll until exactly ``count`` records arrived (never asks for more), or fail at the deadline."""
    deadline = time.monotonic() + timeout_s
    received: list[Received] = []
    while len(received) < count:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise AssertionError(
                f"got {len(received)} of {count} records within {timeout_s}s: {received[-3:]}"
            )
        received += consumer.poll(count - len(received), min(remaining, 1.0))
    return received


def poll_for_error(consumer: Consumer, timeout_s: float = WAIT_S) -> ClientError:
    """Poll until the consumer reports an error; records arriving instead fail the scenario."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            records = consumer.poll(10, 1.0)
        except ClientError as exc:
            return exc
        assert not records, f"expected an error, got records {records[:3]}"
    raise AssertionError(f"no error within {timeout_s}s")


def eventually(check: Callable[[], T], timeout_s: float = WAIT_S, interval_s: float = 0.2) -> T:
    """Call ``check`` until it returns without AssertionError/ClientError; re-raise the last one."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return check()
        except (AssertionError, ClientError):
            if time.monotonic() >= deadline:
                raise
        time.sleep(interval_s)


def poll_assignments_until(
    consumers: Sequence[Consumer],
    done: Callable[[list[set[TopicPartition]]], bool],
    timeout_s: float = WAIT_S,
) -> list[set[TopicPartition]]:
    """Keep every consumer inside ``poll`` at once (one thread each) until ``done(assignments)``.

    A rebalance needs every member to answer it. Polling members in turn leaves each one outside
    ``poll`` most of the time, and kafka-python 3.0.x drops a JoinGroup/SyncGroup answer that
    arrives while its consumer is outside ``poll`` (it sends a fresh JoinGroup instead, starting
    yet another rebalance), so a turn-taking loop can rebalance for ever. Each consumer is only
    touched by its own thread; the last assignment each one saw is what ``done`` judges.
    """
    assignments: list[set[TopicPartition]] = [set() for _ in consumers]
    errors: list[BaseException] = []
    stop = threading.Event()
    lock = threading.Lock()

    def keep_polling(index: int, consumer: Consumer) -> None:
        try:
            while not stop.is_set():
                consumer.poll(10, 0.5)
                with lock:
                    assignments[index] = consumer.assignment()
        except BaseException as exc:  # noqa: BLE001 - handed to the calling thread below
            errors.append(exc)
            stop.set()

    threads = [
        threading.Thread(target=keep_polling, args=(i, c), daemon=True) for i, c in enumerate(consumers)
    ]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + timeout_s
    try:
        while not stop.is_set():
            with lock:
                seen = [set(a) for a in assignments]
            if done(seen):
                return seen
            assert time.monotonic() < deadline, f"assignments after {timeout_s}s: {seen}"
            time.sleep(0.1)
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=CALL_JOIN_S)
    raise errors[0]

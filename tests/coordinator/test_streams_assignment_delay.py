"""Streams groups wait before assigning, as Kafka 4.3 does: a new group for its initial
rebalance delay (``group.streams.initial.rebalance.delay.ms``, 3 s), then at least the assignment
interval (``group.streams.assignment.interval.ms``, 1 s) between two target assignments; meanwhile
heartbeats carry the ASSIGNMENT_DELAYED status with Kafka's message, and a timer assigns when due."""

from __future__ import annotations

import dataclasses

import pytest

from coordinator.config import CoordinatorConfig
from coordinator.streams.group import INITIAL_DELAY, INTERVAL_DELAY
from coordinator.streams.topology import StreamsStatus
from tests.coordinator.conftest import Harness
from tests.coordinator.test_streams_groups import create_internal_topics, heartbeat, tasks

DELAY_MS = 3000
INTERVAL_MS = 1000


@pytest.fixture
def delayed(config: CoordinatorConfig) -> Harness:
    return Harness(
        dataclasses.replace(
            config, streams_initial_rebalance_delay_ms=DELAY_MS, streams_assignment_interval_ms=INTERVAL_MS
        )
    )


def delayed_status(response: dict) -> str | None:
    for status in response["status"] or ():
        if status["status_code"] == StreamsStatus.ASSIGNMENT_DELAYED:
            return status["status_detail"]
    return None


def test_a_new_group_waits_its_initial_rebalance_delay_for_more_members(delayed: Harness) -> None:
    h = delayed
    create_internal_topics(h)
    a = heartbeat(h, "a", 0)
    assert a["active_tasks"] == [] and delayed_status(a) == INITIAL_DELAY
    h.advance(DELAY_MS // 2)
    b = heartbeat(h, "b", 0)  # joins within the delay: the first assignment covers both
    assert b["active_tasks"] == [] and delayed_status(b) == INITIAL_DELAY
    h.advance(DELAY_MS // 2)  # the timer assigns
    a = heartbeat(h, "a", a["member_epoch"], {})
    b = heartbeat(h, "b", b["member_epoch"], {})
    assert delayed_status(a) is None and delayed_status(b) is None
    assert sum(len(p) for p in tasks(a).values()) == sum(len(p) for p in tasks(b).values()) == 6


def test_assignments_are_at_least_the_interval_apart(delayed: Harness) -> None:
    h = delayed
    create_internal_topics(h)
    a = heartbeat(h, "a", 0)
    h.advance(DELAY_MS)
    a = heartbeat(h, "a", a["member_epoch"], {})
    assert sum(len(p) for p in tasks(a).values()) == 12
    b = heartbeat(h, "b", 0)  # within the interval after the first assignment
    assert b["active_tasks"] == [] and delayed_status(b) == INTERVAL_DELAY
    h.advance(INTERVAL_MS)
    b = heartbeat(h, "b", b["member_epoch"], {})
    assert delayed_status(b) is None
    assert b["member_epoch"] == h.coordinator.streams_group_describe(["app"])[0]["assignment_epoch"]


def test_the_group_configs_override_the_broker_defaults(delayed: Harness) -> None:
    h = delayed
    h.coordinator.consumer.group_configs["app"] = {"streams.initial.rebalance.delay.ms": 0}
    create_internal_topics(h)
    a = heartbeat(h, "a", 0)
    assert delayed_status(a) is None and sum(len(p) for p in tasks(a).values()) == 12

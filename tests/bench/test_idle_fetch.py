"""The idle-fetch bench compares what it says: a session with the default slots, none with 0."""

from __future__ import annotations

import pytest

from bench.idle_fetch import NO_SESSIONS, TOPIC, caught_up_fetch_ms, fill, idle_consumer_cores
from bench.launchers import OdradekLauncher, running
from bench.throughput import Settings, create_topic


@pytest.mark.parametrize(("overrides", "in_session"), [([], True), ([NO_SESSIONS], False)])
def test_caught_up_fetches_use_a_session_only_when_offered(overrides: list[str], in_session: bool) -> None:
    with running(OdradekLauncher(overrides)) as broker:
        create_topic(broker, Settings(messages=0, partitions=8, topic=TOPIC))
        fill(broker.bootstrap, 8)
        idle_consumer_cores(broker, 8, 1.0)  # raises unless it reads every record, then nothing
        _per_fetch_ms, session = caught_up_fetch_ms(broker, 8, 20, 0.0)
    assert session == in_session

"""Fetch sessions (KIP-227) as every client may name them, checked against the broker itself.

Stock Java, librdkafka and Python clients open a session with epoch 0; a Go client sends a
sessionless full fetch as session -1, epoch -1. Whatever session a full fetch (epoch 0 or -1)
names, Kafka serves its data; an incremental fetch (a later epoch) in a session the broker does
not hold is FETCH_SESSION_ID_NOT_FOUND with no data.
"""

from __future__ import annotations

import pytest

from compat_tests.brokers import RunningBroker
from compat_tests.drivers.base import Driver, Message, ProducerSettings
from compat_tests.drivers.kafka_python import raw_fetch


@pytest.mark.parametrize(
    ("session_id", "session_epoch", "served"),
    [
        pytest.param(-1, -1, True, id="go-sessionless"),
        pytest.param(0, -1, True, id="sessionless"),
        pytest.param(0, 0, True, id="new-session"),
        pytest.param(123456, -1, True, id="closing-an-unknown-session"),
        pytest.param(123456, 3, False, id="incremental-in-an-unknown-session"),
    ],
)
def test_full_fetches_are_served_whatever_session_they_name(
    broker: RunningBroker, admin: Driver, topic: str, session_id: int, session_epoch: int, served: bool
) -> None:
    admin.create_topic(topic, 1)
    admin.produce(topic, [Message(b"v%d" % i, partition=0) for i in range(5)], ProducerSettings())
    error, received = raw_fetch(
        broker.bootstrap, topic, 0, session_id=session_id, session_epoch=session_epoch
    )
    if served:
        assert (error, received > 0) == ("NONE", True)
    else:
        assert (error, received) == ("FETCH_SESSION_ID_NOT_FOUND", 0)

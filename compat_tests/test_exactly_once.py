"""Exactly-once across crashes: a consume-transform-produce service (``compat_tests.kit.eos_loop``,
confluent-kafka with ``send_offsets_to_transaction``) is killed with SIGKILL mid-stream, twice,
and started again each time.  Its output, read_committed, must hold every input record exactly
once: what a killed instance wrote in its open transaction is aborted when the next instance
initialises (fencing it), and the offsets committed with each transaction say where to resume.
"""

from __future__ import annotations

import uuid

import pytest

from compat_tests.helpers import poll_until
from compat_tests.kit.brokers import RunningBroker
from compat_tests.kit.drivers.base import ConsumerSettings, Driver, Message, ProducerSettings
from compat_tests.kit.eos_loop import Service

INPUTS = 150
KILLS = 2
COPIED_BEFORE_KILL = 30  # by each killed instance, counted from its start


@pytest.mark.usefixtures("group_coordinator")
def test_killed_pipeline_copies_every_record_exactly_once(
    broker: RunningBroker, admin: Driver, topic: str
) -> None:
    source, sink = topic, f"{topic}-out"
    group, txn_id = f"compat-eos-{uuid.uuid4().hex[:8]}", f"compat-eos-{uuid.uuid4().hex[:8]}"
    admin.create_topic(source, 1)
    admin.create_topic(sink, 1)
    inputs = [Message(f"v{i}".encode(), key=f"k{i}".encode(), partition=0) for i in range(INPUTS)]
    admin.produce(source, inputs, ProducerSettings())

    for _ in range(KILLS):
        service = Service(broker.bootstrap, source, sink, group, txn_id)
        service.wait_until_copied(COPIED_BEFORE_KILL)
        service.kill()
    assert Service(broker.bootstrap, source, sink, group, txn_id).finish() == 0

    with admin.consumer(ConsumerSettings(isolation="read_committed")) as consumer:
        consumer.assign({(sink, 0): 0})
        copied = poll_until(consumer, INPUTS)
        assert consumer.poll(10, 2.0) == []  # and nothing more
    assert sorted((r.key, r.value) for r in copied) == sorted((m.key, m.value + b"!") for m in inputs)

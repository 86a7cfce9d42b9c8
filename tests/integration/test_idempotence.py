"""Idempotent producers: sequence checks per (producer id, epoch, partition), across restarts.

Exact requests through the raw client, because stock producers retry and renumber on their
own; plus confluent-kafka with enable.idempotence to show a stock idempotent producer works.
"""

from __future__ import annotations

import pytest

from compat_tests.kit.broker_process import OdradekProcess
from compat_tests.kit.brokers import free_ports
from compat_tests.kit.drivers.base import Message, ProducerSettings
from compat_tests.kit.drivers.confluent import ConfluentClient, ConfluentDriver
from compat_tests.kit.history import Writer
from compat_tests.kit.raw_protocol import RawClient, make_batch
from compat_tests.kit.record_writers import writers_at
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode

LATEST = -1


def init_producer_id(client: RawClient) -> tuple[int, int]:
    response = client.request(
        ApiKey.INIT_PRODUCER_ID, 4, {"transactional_id": None, "transaction_timeout_ms": 60_000}
    )
    assert response["error_code"] == ErrorCode.NONE
    return response["producer_id"], response["producer_epoch"]


def test_retried_batch_is_acknowledged_with_its_original_offset(odradek_broker: OdradekProcess) -> None:
    with RawClient(odradek_broker.bootstrap) as client:
        client.create_topic("idem")
        pid, epoch = init_producer_id(client)
        first = make_batch([b"a", b"b", b"c"], producer_id=pid, producer_epoch=epoch, base_sequence=0)
        second = make_batch([b"d", b"e"], producer_id=pid, producer_epoch=epoch, base_sequence=3)
        assert client.produce("idem", 0, first)["base_offset"] == 0
        assert client.produce("idem", 0, second)["base_offset"] == 3
        retry = client.produce("idem", 0, first)
        assert (retry["error_code"], retry["base_offset"]) == (ErrorCode.NONE, 0)
        assert client.produce("idem", 0, second)["base_offset"] == 3
        assert client.list_offset("idem", 0, LATEST) == 5  # nothing written twice


def test_sequence_gap_and_stale_epoch_are_rejected(odradek_broker: OdradekProcess) -> None:
    with RawClient(odradek_broker.bootstrap) as client:
        client.create_topic("idem-errors")
        pid, _ = init_producer_id(client)
        assert (
            client.produce(
                "idem-errors", 0, make_batch([b"x"], producer_id=pid, producer_epoch=0, base_sequence=0)
            )["error_code"]
            == ErrorCode.NONE
        )
        gap = client.produce(
            "idem-errors", 0, make_batch([b"y"], producer_id=pid, producer_epoch=0, base_sequence=5)
        )
        assert gap["error_code"] == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
        bumped = client.produce(
            "idem-errors", 0, make_batch([b"z"], producer_id=pid, producer_epoch=1, base_sequence=0)
        )
        assert bumped["error_code"] == ErrorCode.NONE
        stale = client.produce(
            "idem-errors", 0, make_batch([b"w"], producer_id=pid, producer_epoch=0, base_sequence=1)
        )
        assert stale["error_code"] == ErrorCode.INVALID_PRODUCER_EPOCH
        assert client.list_offset("idem-errors", 0, LATEST) == 2


@pytest.mark.parametrize("stop", ["clean", "kill"])
def test_producer_state_survives_restart(odradek_broker: OdradekProcess, stop: str) -> None:
    with RawClient(odradek_broker.bootstrap) as client:
        client.create_topic("idem-restart")
        pid, epoch = init_producer_id(client)
        batches = [
            make_batch([b"v%d" % i], producer_id=pid, producer_epoch=epoch, base_sequence=i) for i in range(8)
        ]
        for expected_offset, batch in enumerate(batches):
            assert client.produce("idem-restart", 0, batch)["base_offset"] == expected_offset
    odradek_broker.restart(crash=stop == "kill")
    with RawClient(odradek_broker.bootstrap) as client:
        retry = client.produce("idem-restart", 0, batches[-1])
        assert (retry["error_code"], retry["base_offset"]) == (ErrorCode.NONE, 7)
        gap = client.produce(
            "idem-restart", 0, make_batch([b"late"], producer_id=pid, producer_epoch=epoch, base_sequence=10)
        )
        assert gap["error_code"] == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
        following = client.produce(
            "idem-restart", 0, make_batch([b"next"], producer_id=pid, producer_epoch=epoch, base_sequence=8)
        )
        assert (following["error_code"], following["base_offset"]) == (ErrorCode.NONE, 8)
        new_pid, _ = init_producer_id(client)
        assert new_pid != pid  # producer ids are never reused, even after a restart


def test_stock_idempotent_producer_delivers_exactly_once(odradek_broker: OdradekProcess) -> None:
    sent = [Message(b"value-%d" % i, b"%d" % i, partition=0) for i in range(2000)]
    delivered = ConfluentDriver(odradek_broker.bootstrap).produce(
        "idem-stock", sent, ProducerSettings(idempotence=True)
    )
    assert sorted(delivered) == list(range(2000))
    consumed = ConfluentClient(odradek_broker.bootstrap).consume("idem-stock", {0: 0}, until={0: 2000})
    assert [c.record.value for c in consumed[0]] == [b"value-%d" % i for i in range(2000)]


def test_the_chaos_checker_reads_each_records_writer_from_its_batch(odradek_broker: OdradekProcess) -> None:
    """``compat_tests.kit.record_writers`` (what tells a broker's duplicate from a client's resend)
    names the producer id, epoch and sequence of any record, skipping a broker that does not
    answer; a batch without a producer id has no sequence."""
    with RawClient(odradek_broker.bootstrap) as client:
        client.create_topic("writers")
        pid, epoch = init_producer_id(client)
        client.produce(
            "writers",
            0,
            make_batch([b"a", b"b", b"c"], producer_id=pid, producer_epoch=epoch, base_sequence=0),
        )
        client.produce(
            "writers", 0, make_batch([b"d", b"e"], producer_id=pid, producer_epoch=epoch, base_sequence=3)
        )
        client.produce("writers", 0, make_batch([b"f"]))
    (silent,) = free_ports(1)
    found = writers_at(
        f"127.0.0.1:{silent},{odradek_broker.bootstrap}", "writers", [(0, 1), (0, 4), (0, 5), (0, 9)]
    )
    assert found == {(0, 1): Writer(pid, epoch, 1), (0, 4): Writer(pid, epoch, 4), (0, 5): Writer(-1, -1, -1)}

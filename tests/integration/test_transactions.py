"""Transactions on a real broker process, request by request: the coordinator's answers, the
produce-side check that a partition joined the transaction, the last stable offset and the
aborted-transaction list a read_committed fetch gets, and what a kill -9 leaves behind.

Stock clients hide these steps behind one ``commit_transaction()``; the compatibility suite
(``compat_tests/test_transactions.py``) covers them end to end.
"""

from __future__ import annotations

import time
from typing import Any

from broker.client.admin_client import PRODUCE_VERSION, produce_body
from compat_tests.kit.broker_process import OdradekProcess
from compat_tests.kit.raw_protocol import RawClient, make_batch
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode

TXN_TIMEOUT_MS = 60_000
RETRIABLE = (ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.COORDINATOR_NOT_AVAILABLE)
COMPLETING = ("PrepareCommit", "PrepareAbort")


class Txn:
    """One transactional producer speaking the protocol step by step (transaction version 1)."""

    def __init__(self, client: RawClient, transactional_id: str, timeout_ms: int = TXN_TIMEOUT_MS) -> None:
        self.client = client
        self.id = transactional_id
        self.timeout_ms = timeout_ms
        self.sequence: dict[tuple[str, int], int] = {}
        self.producer_id, self.epoch = -1, -1

    def init(self) -> int:
        response = self.client.request(
            ApiKey.INIT_PRODUCER_ID,
            4,
            {
                "transactional_id": self.id,
                "transaction_timeout_ms": self.timeout_ms,
                "producer_id": -1,
                "producer_epoch": -1,
            },
        )
        if response["error_code"] == ErrorCode.NONE:
            self.producer_id, self.epoch = response["producer_id"], response["producer_epoch"]
            self.sequence.clear()
        return response["error_code"]

    def add(self, topic: str, *partitions: int) -> dict[int, int]:
        response = self.client.request(
            ApiKey.ADD_PARTITIONS_TO_TXN,
            3,
            {
                "v3_and_below_transactional_id": self.id,
                "v3_and_below_producer_id": self.producer_id,
                "v3_and_below_producer_epoch": self.epoch,
                "v3_and_below_topics": [{"name": topic, "partitions": list(partitions)}],
            },
        )
        (result,) = response["results_by_topic_v3_and_below"]
        return {p["partition_index"]: p["partition_error_code"] for p in result["results_by_partition"]}

    def produce(self, topic: str, partition: int, *values: bytes) -> dict[str, Any]:
        sequence = self.sequence.get((topic, partition), 0)
        batch = make_batch(
            list(values),
            producer_id=self.producer_id,
            producer_epoch=self.epoch,
            base_sequence=sequence,
            transactional=True,
        )
        body = produce_body(topic, {partition: batch}) | {"transactional_id": self.id}
        response = self.client.request(ApiKey.PRODUCE, PRODUCE_VERSION, body)
        answer = response["responses"][0]["partition_responses"][0]
        if answer["error_code"] == ErrorCode.NONE:
            self.sequence[topic, partition] = sequence + len(values)
        return answer

    def end(self, commit: bool, epoch: int | None = None) -> int:
        response = self.client.request(
            ApiKey.END_TXN,
            3,
            {
                "transactional_id": self.id,
                "producer_id": self.producer_id,
                "producer_epoch": self.epoch if epoch is None else epoch,
                "committed": commit,
            },
        )
        return response["error_code"]

    def describe(self) -> dict[str, Any]:
        response = self.client.request(ApiKey.DESCRIBE_TRANSACTIONS, 0, {"transactional_ids": [self.id]})
        return response["transaction_states"][0]

    def settled_state(self, timeout: float = 10) -> str:
        """The transaction's state once its coordinator has loaded and finished any commit or abort
        it was completing: after a restart DescribeTransactions answers COORDINATOR_LOAD_IN_PROGRESS
        until the log is replayed, and a recovered PrepareCommit completes in the background."""
        deadline = time.monotonic() + timeout
        while True:
            described = self.describe()
            settling = described["error_code"] in RETRIABLE or described["transaction_state"] in COMPLETING
            if not settling or time.monotonic() > deadline:
                assert described["error_code"] == ErrorCode.NONE, described
                return described["transaction_state"]
            time.sleep(0.1)


def committed_view(client: RawClient, topic: str) -> tuple[int, list[dict[str, Any]] | None, int]:
    """(last stable offset, aborted transactions, bytes of records) of a read_committed fetch."""
    answer = client.fetch_partition(topic, 0, 0, read_committed=True)
    return answer["last_stable_offset"], answer["aborted_transactions"], len(answer["records"] or b"")


def test_commit_and_abort_through_the_protocol(odradek_broker: OdradekProcess) -> None:
    with RawClient(odradek_broker.bootstrap) as client:
        client.create_topic("txn-basic", 2)
        txn = Txn(client, "basic")
        assert txn.init() == ErrorCode.NONE
        # Writing to a partition that never joined the transaction is refused (KIP-890).
        refused = txn.produce("txn-basic", 0, b"early")
        assert refused["error_code"] == ErrorCode.INVALID_TXN_STATE
        assert txn.add("txn-basic", 0) == {0: ErrorCode.NONE}
        assert txn.produce("txn-basic", 0, b"a", b"b")["base_offset"] == 0
        assert committed_view(client, "txn-basic") == (0, [], 0)
        assert txn.end(commit=False) == ErrorCode.NONE
        last_stable, aborted, _ = committed_view(client, "txn-basic")
        assert (last_stable, aborted) == (3, [{"producer_id": txn.producer_id, "first_offset": 0}])
        assert txn.add("txn-basic", 0) == {0: ErrorCode.NONE}
        assert txn.produce("txn-basic", 0, b"c")["base_offset"] == 3
        assert txn.end(commit=True) == ErrorCode.NONE
        assert txn.end(commit=True) == ErrorCode.NONE  # a retry of a completed commit
        assert txn.end(commit=False) == ErrorCode.INVALID_TXN_STATE
        assert client.list_offset("txn-basic", 0, -1) == 5  # two markers took an offset each
        assert txn.describe()["transaction_state"] == "CompleteCommit"


def test_unknown_partitions_and_fenced_producers(odradek_broker: OdradekProcess) -> None:
    with RawClient(odradek_broker.bootstrap) as client:
        client.create_topic("txn-errors", 1)
        zombie = Txn(client, "shared")
        zombie.init()
        assert zombie.add("txn-errors", 0, 7) == {
            0: ErrorCode.OPERATION_NOT_ATTEMPTED,
            7: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        }
        assert zombie.add("txn-errors", 0) == {0: ErrorCode.NONE}
        zombie.produce("txn-errors", 0, b"zombie")
        successor = Txn(client, "shared")
        assert successor.init() == ErrorCode.NONE
        assert successor.epoch == zombie.epoch + 2  # one bump fenced and aborted, one for itself
        assert zombie.end(commit=True) == ErrorCode.PRODUCER_FENCED
        assert zombie.produce("txn-errors", 0, b"late")["error_code"] == ErrorCode.INVALID_PRODUCER_EPOCH
        assert committed_view(client, "txn-errors")[:2] == (
            2,
            [{"producer_id": zombie.producer_id, "first_offset": 0}],
        )


def test_a_transaction_past_its_timeout_is_aborted(odradek_broker: OdradekProcess) -> None:
    with RawClient(odradek_broker.bootstrap) as client:
        client.create_topic("txn-timeout", 1)
        txn = Txn(client, "slow", timeout_ms=500)
        txn.init()
        txn.add("txn-timeout", 0)
        txn.produce("txn-timeout", 0, b"never")
        deadline = time.monotonic() + 10
        while txn.describe()["transaction_state"] != "CompleteAbort":
            assert time.monotonic() < deadline, txn.describe()
            time.sleep(0.1)
        assert txn.end(commit=True) == ErrorCode.PRODUCER_FENCED
        assert committed_view(client, "txn-timeout")[:2] == (
            2,
            [{"producer_id": txn.producer_id, "first_offset": 0}],
        )


def test_kill_mid_transaction_keeps_it_open_until_it_ends(odradek_broker: OdradekProcess) -> None:
    """The open transaction survives a crash: its records stay invisible to read_committed (the
    last stable offset stays at its first record), and its producer can still commit it."""
    with RawClient(odradek_broker.bootstrap) as client:
        client.create_topic("txn-crash", 1)
        client.produce("txn-crash", 0, make_batch([b"before"]))
        txn = Txn(client, "crashy")
        txn.init()
        txn.add("txn-crash", 0)
        txn.produce("txn-crash", 0, b"t1", b"t2")
        client.produce("txn-crash", 0, make_batch([b"after"]))
        producer = (txn.producer_id, txn.epoch)
    odradek_broker.restart(crash=True)
    with RawClient(odradek_broker.bootstrap) as client:
        assert committed_view(client, "txn-crash")[:2] == (1, [])
        txn = Txn(client, "crashy")
        txn.producer_id, txn.epoch = producer
        deadline = time.monotonic() + 10
        while (error := txn.end(commit=True)) in RETRIABLE:
            assert time.monotonic() < deadline
            time.sleep(0.1)
        assert error == ErrorCode.NONE
        assert committed_view(client, "txn-crash")[:2] == (5, [])
    odradek_broker.restart(crash=True)
    with RawClient(odradek_broker.bootstrap) as client:
        assert committed_view(client, "txn-crash")[:2] == (5, [])
        assert Txn(client, "crashy").settled_state() == "CompleteCommit"


def write_txn_markers(
    client: RawClient, txn: Txn, commit: bool, topic: str, *partitions: int, coordinator_epoch: int = 0
) -> dict[int, int]:
    """What a transaction coordinator on another broker sends (WriteTxnMarkers v1): the error
    per partition."""
    marker = {
        "producer_id": txn.producer_id,
        "producer_epoch": txn.epoch,
        "transaction_result": commit,
        "topics": [{"name": topic, "partition_indexes": list(partitions)}],
        "coordinator_epoch": coordinator_epoch,
    }
    response = client.request(ApiKey.WRITE_TXN_MARKERS, 1, {"markers": [marker]})
    ((answer,),) = [m["topics"] for m in response["markers"]]
    return {p["partition_index"]: p["error_code"] for p in answer["partitions"]}


def test_write_txn_markers_ends_a_transaction_in_the_partitions_led_here(
    odradek_broker: OdradekProcess,
) -> None:
    with RawClient(odradek_broker.bootstrap) as client:
        client.create_topic("txn-markers", 1)
        txn = Txn(client, "marked-from-outside")
        assert txn.init() == ErrorCode.NONE
        assert txn.add("txn-markers", 0) == {0: ErrorCode.NONE}
        assert txn.produce("txn-markers", 0, b"a", b"b")["base_offset"] == 0
        assert committed_view(client, "txn-markers")[0] == 0  # held back while open
        assert write_txn_markers(client, txn, True, "txn-markers", 0, coordinator_epoch=5) == {
            0: ErrorCode.NONE
        }
        last_stable, aborted, size = committed_view(client, "txn-markers")
        assert (last_stable, aborted) == (3, []) and size > 0  # committed: the records are readable
        # A deposed coordinator (an older epoch) cannot end the next transaction.
        assert txn.produce("txn-markers", 0, b"c")["base_offset"] == 3
        fenced = write_txn_markers(client, txn, True, "txn-markers", 0, coordinator_epoch=4)
        assert fenced == {0: ErrorCode.TRANSACTION_COORDINATOR_FENCED}
        assert committed_view(client, "txn-markers")[0] == 3  # still open
        assert write_txn_markers(client, txn, True, "no-such-topic", 0) == {
            0: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        }

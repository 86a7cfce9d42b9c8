"""The transaction coordinator's rules, on a fake clock and in-memory ``__transaction_state``.

Markers go to a recorder standing in for the partition logs (the broker-level tests and the
compatibility suite check real markers in real logs through real clients).
"""

from __future__ import annotations

import pytest

from coordinator.config import TransactionConfig
from coordinator.transactions import TransactionCoordinator, TxnError
from coordinator.txn_metadata import TxnState
from tests.coordinator.conftest import FakeClock, MemoryStorage
from wire.error_codes import ErrorCode as E

TIMEOUT_MS = 60_000


class Markers:
    """Records each marker call; partitions in ``failing`` are reported unwritten."""

    def __init__(self) -> None:
        self.written: list[tuple[int, int, bool, frozenset[tuple[str, int]]]] = []
        self.failing: set[tuple[str, int]] = set()

    def __call__(self, pid: int, epoch: int, commit: bool, partitions: object) -> set[tuple[str, int]]:
        wanted = frozenset(partitions)  # type: ignore[arg-type]
        self.written.append((pid, epoch, commit, wanted - self.failing))
        return set(wanted & self.failing)


class Txns:
    def __init__(self, storage: MemoryStorage | None = None, clock: FakeClock | None = None) -> None:
        self.storage = storage or MemoryStorage()
        self.clock = clock or FakeClock()
        self.markers = Markers()
        self.next_id = iter(range(1000, 2000))
        self.coordinator = TransactionCoordinator(
            TransactionConfig(state_log_partitions=3),
            self.storage,
            lambda: next(self.next_id),
            self.markers,
            self.clock,
        )
        for partition in range(3):
            self.coordinator.load_partition(partition)

    def advance(self, ms: int) -> None:
        self.clock.now += ms
        self.coordinator.on_time(self.clock.now)

    def restart(self) -> Txns:
        return Txns(self.storage, self.clock)

    def state(self, txn_id: str) -> dict:
        return self.coordinator.describe(txn_id)


def refused(code: E, call, *args) -> None:  # noqa: ANN001 - any coordinator method
    with pytest.raises(TxnError) as failure:
        call(*args)
    assert failure.value.code is code


@pytest.fixture
def t() -> Txns:
    return Txns()


def test_init_gives_a_producer_id_and_each_init_a_new_epoch(t: Txns) -> None:
    assert t.coordinator.init_producer_id("app", TIMEOUT_MS, -1, -1) == (1000, 0)
    assert t.coordinator.init_producer_id("app", TIMEOUT_MS, -1, -1) == (1000, 1)
    assert t.coordinator.init_producer_id("other", TIMEOUT_MS, -1, -1) == (1001, 0)


def test_init_validates_id_and_timeout(t: Txns) -> None:
    refused(E.INVALID_REQUEST, t.coordinator.init_producer_id, "", TIMEOUT_MS, -1, -1)
    refused(E.INVALID_TRANSACTION_TIMEOUT, t.coordinator.init_producer_id, "app", 0, -1, -1)
    refused(E.INVALID_TRANSACTION_TIMEOUT, t.coordinator.init_producer_id, "app", 900_001, -1, -1)


def test_commit_writes_markers_to_every_partition_then_completes(t: Txns) -> None:
    pid, epoch = t.coordinator.init_producer_id("app", TIMEOUT_MS, -1, -1)
    t.coordinator.add_partitions("app", pid, epoch, [("orders", 0)])
    t.coordinator.add_partitions("app", pid, epoch, [("orders", 1), ("audit", 0)])
    described = t.state("app")
    assert described["transaction_state"] == "Ongoing"
    assert described["topics"] == [
        {"topic": "audit", "partitions": [0]},
        {"topic": "orders", "partitions": [0, 1]},
    ]
    assert t.coordinator.end_txn("app", pid, epoch, True) == (pid, epoch)
    assert t.markers.written == [(pid, epoch, True, frozenset({("orders", 0), ("orders", 1), ("audit", 0)}))]
    assert t.state("app")["transaction_state"] == "CompleteCommit"
    assert t.state("app")["topics"] == []
    # A retry of the same end succeeds; the opposite end is refused.
    assert t.coordinator.end_txn("app", pid, epoch, True) == (pid, epoch)
    refused(E.INVALID_TXN_STATE, t.coordinator.end_txn, "app", pid, epoch, False)
    assert len(t.markers.written) == 1


def test_end_without_a_transaction_is_invalid(t: Txns) -> None:
    pid, epoch = t.coordinator.init_producer_id("app", TIMEOUT_MS, -1, -1)
    refused(E.INVALID_TXN_STATE, t.coordinator.end_txn, "app", pid, epoch, True)


def test_zombie_is_fenced_and_strangers_are_unknown(t: Txns) -> None:
    pid, old_epoch = t.coordinator.init_producer_id("app", TIMEOUT_MS, -1, -1)
    _, new_epoch = t.coordinator.init_producer_id("app", TIMEOUT_MS, -1, -1)
    refused(E.PRODUCER_FENCED, t.coordinator.add_partitions, "app", pid, old_epoch, [("orders", 0)])
    refused(E.PRODUCER_FENCED, t.coordinator.end_txn, "app", pid, old_epoch, True)
    refused(
        E.INVALID_PRODUCER_ID_MAPPING, t.coordinator.add_partitions, "app", pid + 7, new_epoch, [("o", 0)]
    )
    refused(E.INVALID_PRODUCER_ID_MAPPING, t.coordinator.add_partitions, "nobody", pid, new_epoch, [("o", 0)])
    # KIP-360: a producer naming an epoch that is not the current one is fenced, unless it
    # names the epoch it had before its own last init (a retry whose answer was lost).
    refused(E.PRODUCER_FENCED, t.coordinator.init_producer_id, "app", TIMEOUT_MS, pid, old_epoch)
    assert t.coordinator.init_producer_id("app", TIMEOUT_MS, pid, new_epoch) == (pid, new_epoch + 1)
    assert t.coordinator.init_producer_id("app", TIMEOUT_MS, pid, new_epoch) == (pid, new_epoch + 1)
    refused(E.PRODUCER_FENCED, t.coordinator.init_producer_id, "app", TIMEOUT_MS, pid, old_epoch)


def test_new_instance_aborts_what_the_old_one_left_open(t: Txns) -> None:
    pid, epoch = t.coordinator.init_producer_id("app", TIMEOUT_MS, -1, -1)
    t.coordinator.add_partitions("app", pid, epoch, [("orders", 0)])
    assert t.coordinator.init_producer_id("app", TIMEOUT_MS, -1, -1) == (pid, epoch + 2)
    assert t.markers.written == [(pid, epoch + 1, False, frozenset({("orders", 0)}))]
    assert t.state("app")["transaction_state"] == "Empty"


def test_a_transaction_open_past_its_timeout_is_aborted_and_its_producer_fenced(t: Txns) -> None:
    pid, epoch = t.coordinator.init_producer_id("app", TIMEOUT_MS, -1, -1)
    t.coordinator.add_partitions("app", pid, epoch, [("orders", 0)])
    t.advance(TIMEOUT_MS - 1)
    assert t.markers.written == []
    t.advance(1)
    assert t.markers.written == [(pid, epoch + 1, False, frozenset({("orders", 0)}))]
    assert t.state("app")["transaction_state"] == "CompleteAbort"
    refused(E.PRODUCER_FENCED, t.coordinator.end_txn, "app", pid, epoch, True)


def test_unwritten_markers_are_retried_and_finished_after_restart(t: Txns) -> None:
    pid, epoch = t.coordinator.init_producer_id("app", TIMEOUT_MS, -1, -1)
    t.coordinator.add_partitions("app", pid, epoch, [("orders", 0), ("orders", 1)])
    t.markers.failing = {("orders", 1)}
    t.coordinator.end_txn("app", pid, epoch, True)
    assert t.state("app")["transaction_state"] == "PrepareCommit"
    refused(E.CONCURRENT_TRANSACTIONS, t.coordinator.end_txn, "app", pid, epoch, True)
    refused(E.CONCURRENT_TRANSACTIONS, t.coordinator.init_producer_id, "app", TIMEOUT_MS, -1, -1)
    # A restart replays PrepareCommit and writes the markers again.
    restarted = t.restart()
    assert restarted.state("app")["transaction_state"] == "CompleteCommit"
    assert restarted.markers.written == [(pid, epoch, True, frozenset({("orders", 0), ("orders", 1)}))]
    # Without a restart, the retry timer gets there too.
    t.markers.failing = set()
    t.advance(t.coordinator.config.marker_retry_ms)
    assert t.state("app")["transaction_state"] == "CompleteCommit"


def test_state_survives_a_restart(t: Txns) -> None:
    pid, epoch = t.coordinator.init_producer_id("app", TIMEOUT_MS, -1, -1)
    t.coordinator.add_partitions("app", pid, epoch, [("orders", 0)])
    restarted = t.restart()
    assert restarted.state("app") | {"transaction_start_time_ms": 0} == t.state("app") | {
        "transaction_start_time_ms": 0
    }
    assert restarted.coordinator.init_producer_id("app", TIMEOUT_MS, -1, -1) == (pid, epoch + 2)


def test_transaction_version_2_ends_under_the_next_epoch(t: Txns) -> None:
    pid, epoch = t.coordinator.init_producer_id("app", TIMEOUT_MS, -1, -1)
    t.coordinator.add_partitions("app", pid, epoch, [("orders", 0)])
    assert t.coordinator.end_txn("app", pid, epoch, False, bump_epoch=True) == (pid, epoch + 1)
    assert t.markers.written == [(pid, epoch + 1, False, frozenset({("orders", 0)}))]
    # The retry of that end (its answer lost) gets the same answer; a commit retry is invalid.
    assert t.coordinator.end_txn("app", pid, epoch, False, bump_epoch=True) == (pid, epoch + 1)
    refused(E.INVALID_TXN_STATE, t.coordinator.end_txn, "app", pid, epoch, True, True)
    # An abort may end an empty transaction (it bumps the epoch all the same); a commit may not.
    refused(E.INVALID_TXN_STATE, t.coordinator.end_txn, "app", pid, epoch + 1, True, True)
    assert t.coordinator.end_txn("app", pid, epoch + 1, False, bump_epoch=True) == (pid, epoch + 2)
    refused(E.PRODUCER_FENCED, t.coordinator.end_txn, "app", pid, epoch, False, True)


def test_describe_and_list(t: Txns) -> None:
    pid, epoch = t.coordinator.init_producer_id("app-1", TIMEOUT_MS, -1, -1)
    t.coordinator.add_partitions("app-1", pid, epoch, [("orders", 0)])
    t.coordinator.init_producer_id("app-2", TIMEOUT_MS, -1, -1)
    assert t.state("missing")["error_code"] is E.TRANSACTIONAL_ID_NOT_FOUND
    described = t.state("app-1")
    assert (described["producer_id"], described["transaction_timeout_ms"]) == (pid, TIMEOUT_MS)
    assert described["transaction_start_time_ms"] == t.clock.now

    def listed(states=(), pids=(), duration=-1, pattern=None) -> tuple:  # noqa: ANN001
        error, unknown, found = t.coordinator.list_transactions(list(states), list(pids), duration, pattern)
        return error, unknown, sorted(f["transactional_id"] for f in found)

    assert listed() == (E.NONE, [], ["app-1", "app-2"])
    assert listed(["Ongoing", "Sleeping"]) == (E.NONE, ["Sleeping"], ["app-1"])
    assert listed(pids=[pid]) == (E.NONE, [], ["app-1"])
    assert listed(pattern="app-[2-9]") == (E.NONE, [], ["app-2"])
    assert listed(pattern="app") == (E.NONE, [], [])
    assert listed(pattern="(") == (E.INVALID_REGULAR_EXPRESSION, [], [])
    t.clock.now += 5000
    # As in Kafka: started longer ago than the filter, and a transaction never started passes.
    assert listed(duration=4999) == (E.NONE, [], ["app-1", "app-2"])
    assert listed(duration=5000) == (E.NONE, [], ["app-2"])


def test_idle_ids_expire(t: Txns) -> None:
    t.coordinator.init_producer_id("app", TIMEOUT_MS, -1, -1)
    t.advance(t.coordinator.config.id_expiration_ms + t.coordinator.config.remove_expired_interval_ms)
    assert t.state("app")["error_code"] is E.TRANSACTIONAL_ID_NOT_FOUND
    assert t.restart().state("app")["error_code"] is E.TRANSACTIONAL_ID_NOT_FOUND


def test_unavailable_until_loaded() -> None:
    coordinator = TransactionCoordinator(
        TransactionConfig(state_log_partitions=2), MemoryStorage(), lambda: 1, Markers(), FakeClock()
    )
    refused(E.COORDINATOR_NOT_AVAILABLE, coordinator.init_producer_id, "app", TIMEOUT_MS, -1, -1)
    coordinator.load_partition(coordinator.partition_for("app") ^ 1)
    refused(E.COORDINATOR_LOAD_IN_PROGRESS, coordinator.init_producer_id, "app", TIMEOUT_MS, -1, -1)
    assert coordinator.list_transactions([], [], -1, None)[0] is E.COORDINATOR_LOAD_IN_PROGRESS
    assert TxnState.PREPARE_EPOCH_FENCE.kafka_name == "PrepareEpochFence"


def test_a_cluster_member_leading_no_state_partition_lists_nothing() -> None:
    """As a Kafka broker whose coordinator leads no partition: an empty listing, not
    COORDINATOR_NOT_AVAILABLE (which the admin client would retry until its call times out)."""
    coordinator = TransactionCoordinator(
        TransactionConfig(state_log_partitions=2), MemoryStorage(), lambda: 1, Markers(), FakeClock()
    )
    coordinator.own_claimed_partitions_only()
    assert coordinator.list_transactions([], [], -1, None) == (E.NONE, [], [])
    refused(E.NOT_COORDINATOR, coordinator.init_producer_id, "app", TIMEOUT_MS, -1, -1)

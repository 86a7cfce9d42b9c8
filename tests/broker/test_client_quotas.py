"""Client quota arithmetic and precedence, sans-IO: Kafka's windowed rate, its throttle time
formula, which entity's quota applies to a (user, client-id) and whose usage it counts."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio

from broker.services.quotas.quota_manager import ClientQuotas
from broker.services.quotas.quota_rate import Rate, TokenBucket, Windows
from broker.state.documents import FileDocument
from broker.state.quota_store import Alteration, QuotaStore

KAFKA_WINDOWS = Windows(samples=11, size_ms=1000)


def test_a_first_recording_is_measured_over_all_but_the_current_window() -> None:
    rate = Rate(KAFKA_WINDOWS, 0)
    rate.record(20_000, 0)
    assert rate.measure(0) == (2000.0, 10_000)
    # (2000 - 1000) / 1000 * 10 s: the time after which, idle, the rate is back at the bound.
    assert rate.throttle_ms(1000, 0) == 10_000
    assert rate.throttle_ms(2000, 0) == 0


def test_the_window_grows_with_elapsed_time_past_the_minimum() -> None:
    rate = Rate(KAFKA_WINDOWS, 0)
    rate.record(5000, 0)
    rate.record(5000, 5000)
    assert rate.measure(5000) == (1000.0, 10_000)  # 5 whole windows elapsed, padded to 10
    rate.record(7000, 10_500)
    assert rate.measure(10_500) == (17_000 / 10.5, 10_500)


def test_samples_older_than_every_window_are_forgotten() -> None:
    rate = Rate(KAFKA_WINDOWS, 0)
    rate.record(50_000, 0)
    assert rate.measure(11_000) == (0.0, 10_000)


def quota_store(tmp_path: Path) -> QuotaStore:
    return QuotaStore(FileDocument(tmp_path / QuotaStore.FILE_NAME))


def quotas(tmp_path: Path, *entries: tuple[dict[str, str | None], str, float]) -> ClientQuotas:
    manager = ClientQuotas(quota_store(tmp_path), KAFKA_WINDOWS, lambda: 0)  # all at one instant
    trio.run(
        manager.store.apply,
        [Alteration(tuple(sorted(entity.items())), {key: value}) for entity, key, value in entries],
    )
    return manager


@pytest.mark.parametrize(
    ("entities", "expected"),
    [
        (
            [{"user": "alice", "client-id": "app"}, {"user": "alice"}],
            ({"user": "alice", "client-id": "app"}, ("alice", "app")),
        ),
        (
            [{"user": "alice", "client-id": None}, {"user": "alice"}],
            ({"user": "alice", "client-id": None}, ("alice", "app")),
        ),
        ([{"user": "alice"}, {"user": None, "client-id": "app"}], ({"user": "alice"}, ("alice", ""))),
        (
            [{"user": None, "client-id": "app"}, {"user": None}],
            ({"user": None, "client-id": "app"}, ("alice", "app")),
        ),
        (
            [{"user": None, "client-id": None}, {"user": None}],
            ({"user": None, "client-id": None}, ("alice", "app")),
        ),
        ([{"user": None}, {"client-id": "app"}], ({"user": None}, ("alice", ""))),
        ([{"client-id": "app"}, {"client-id": None}], ({"client-id": "app"}, ("", "app"))),
        ([{"client-id": None}, {"user": "bob"}], ({"client-id": None}, ("", "app"))),
    ],
)
def test_the_most_specific_entity_applies_in_kafkas_order(
    tmp_path: Path,
    entities: list[dict[str, str | None]],
    expected: tuple[dict[str, str | None], tuple[str, str]],
) -> None:
    """Each case gives the winning entity a bound of 1 and the next one in order 2."""
    manager = quotas(
        tmp_path, *[(entity, "producer_byte_rate", float(i + 1)) for i, entity in enumerate(entities)]
    )
    assert manager.limit("producer_byte_rate", "alice", "app") == (expected[1], 1.0)


def test_a_client_id_quota_is_shared_by_every_user_of_it(tmp_path: Path) -> None:
    manager = quotas(tmp_path, ({"client-id": "app"}, "producer_byte_rate", 1000.0))
    assert manager.produce("User:alice", "app", 6000) == 0
    assert manager.produce("User:bob", "app", 6000) == 2000  # 12 kB over 10 s against 1 kB/s
    assert manager.produce("User:bob", "other", 10**9) == 0


def test_no_quota_of_a_key_records_nothing(tmp_path: Path) -> None:
    manager = quotas(tmp_path, ({"user": None}, "consumer_byte_rate", 1.0))
    assert manager.enabled == {"consumer_byte_rate"}
    assert manager.produce("User:ANONYMOUS", "app", 10**9) == 0
    assert manager.max_in_window("consumer_byte_rate", "User:ANONYMOUS", "app") == 10.0
    assert manager.fetch("User:ANONYMOUS", "app", 20) == 10_000


def test_request_time_is_a_percentage_throttled_at_most_one_window(tmp_path: Path) -> None:
    manager = quotas(tmp_path, ({"client-id": "app"}, "request_percentage", 10.0))
    assert manager.request_time("User:ANONYMOUS", "app", 0.5) == 0  # 50 %-seconds over 10 s = 5 %
    assert manager.request_time("User:ANONYMOUS", "app", 5.0) == 1000  # far over: one window


def test_quotas_are_read_back_from_the_data_directory(tmp_path: Path) -> None:
    quotas(tmp_path, ({"user": "alice"}, "request_percentage", 12.5))
    reopened = quota_store(tmp_path)
    assert reopened.value((("user", "alice"),), "request_percentage") == 12.5
    assert reopened.keys() == {"request_percentage"}


def test_a_token_bucket_starts_full_and_refills_at_the_bound() -> None:
    bucket = TokenBucket(KAFKA_WINDOWS, 0)
    bucket.record(20, 2.0, 0)  # burst 11 x 1 s x 2/s = 22 credits, 2 left
    assert bucket.throttle_ms(2.0, 0) == 0
    bucket.record(8, 2.0, 0)  # -6 credits: 3 s at 2/s to get back to zero
    assert bucket.throttle_ms(2.0, 0) == 3000
    assert bucket.throttle_ms(2.0, 1000) == 2000
    assert bucket.throttle_ms(2.0, 100_000) == 0


def test_a_strict_mutation_quota_refuses_once_exceeded_a_permissive_one_throttles(tmp_path: Path) -> None:
    manager = quotas(tmp_path, ({"client-id": "admin"}, "controller_mutation_rate", 1.0))
    assert manager.mutate("User:ANONYMOUS", "admin", 20, strict=True) == (True, 0)  # 11 credits -> -9
    assert manager.mutate("User:ANONYMOUS", "admin", 1, strict=True) == (False, 9000)
    assert manager.mutate("User:ANONYMOUS", "admin", 1, strict=False) == (True, 10_000)
    assert manager.mutate("User:ANONYMOUS", "other", 1000, strict=True) == (True, 0)

"""Client metrics subscriptions: Kafka's parsing rules at their edges, the store's bounds, and
the client software table's bound (the broker-level behaviour is in
``tests/integration/test_client_telemetry.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from broker.config.client_metrics_config import (
    ClientMetricsConfigError,
    parse_list,
    parse_subscription,
)
from broker.services.telemetry.client_metrics_manager import ClientIdentity, ClientTelemetry, Offer
from broker.services.telemetry.client_software import UNKNOWN, ClientSoftware, Software
from broker.state.client_metrics_store import MAX_STORED_BYTES, MAX_SUBSCRIPTIONS, SubscriptionStore
from tests.integration.fast_disk import fast_scratch_dir
from wire.error_codes import ErrorCode


@pytest.mark.parametrize(
    ("text", "items"),
    [
        ("", []),
        ("  ", []),
        ("a", ["a"]),
        (" a , b ", ["a", "b"]),
        ("a,,b", ["a", "", "b"]),
        ("a,", ["a", ""]),
    ],
)
def test_lists_parse_as_kafkas_list_type(text: str, items: list[str]) -> None:
    assert parse_list(text) == items


@pytest.mark.parametrize(
    "pattern", ["client_id=", "=x", "client_id==", "client_id", "CLIENT_ID=x", "client_id=(a"]
)
def test_illegal_match_patterns(pattern: str) -> None:
    with pytest.raises(ClientMetricsConfigError) as refused:
        parse_subscription("s", {"match": pattern})
    assert (refused.value.code, refused.value.message) == (
        ErrorCode.INVALID_CONFIG,
        f"Illegal client matching pattern: {pattern}",
    )


def test_patterns_match_whole_trimmed_values_and_all_must_match() -> None:
    subscription = parse_subscription("s", {"match": " client_id = app-.* , client_source_port=9\\d+"})
    assert subscription.matches({"client_id": "app-1", "client_source_port": "9000"})
    assert not subscription.matches({"client_id": "my-app-1", "client_source_port": "9000"})
    assert not subscription.matches({"client_id": "app-1", "client_source_port": "8000"})
    assert not subscription.matches({"client_id": "app-1"})
    assert parse_subscription("s", {"metrics": "a"}).matches({})


@pytest.mark.parametrize(("value", "parsed"), [("+500", 500), (" 100 ", 100), ("3600000", 3_600_000)])
def test_intervals_parse_as_java_integers(value: str, parsed: int) -> None:
    assert parse_subscription("s", {"interval.ms": value}).interval_ms == parsed


@pytest.mark.parametrize("value", ["1.5", "1e3", "2147483648", "٣٠٠"])
def test_intervals_that_are_no_java_int(value: str) -> None:
    with pytest.raises(ClientMetricsConfigError) as refused:
        parse_subscription("s", {"interval.ms": value})
    assert (
        refused.value.message
        == f"Invalid value {value} for configuration interval.ms: Not a number of type INT"
    )


def test_subscription_ids_depend_on_metrics_interval_and_instance() -> None:
    instance, other = bytes(range(16)), bytes(range(1, 17))
    base = Offer.of(("a", "b"), 1000).subscription_id(instance)
    assert base == Offer.of(("a", "b"), 1000).subscription_id(instance)
    others = {
        Offer.of(("a",), 1000).subscription_id(instance),
        Offer.of(("a", "b"), 999).subscription_id(instance),
    }
    assert len({base, *others}) == 3
    assert base != Offer.of(("a", "b"), 1000).subscription_id(other)
    assert -(2**31) <= base < 2**31


def test_the_store_is_bounded_in_count_and_size(tmp_path: Path) -> None:
    with fast_scratch_dir(tmp_path) as directory:  # a thousand fsynced rewrites: not a disk test
        check_store_bounds(directory)


def check_store_bounds(tmp_path: Path) -> None:
    store = SubscriptionStore(tmp_path)
    for number in range(MAX_SUBSCRIPTIONS):
        store.put(f"s{number}", {"metrics": "m"})
    with pytest.raises(ClientMetricsConfigError) as too_many:
        store.put("one-more", {"metrics": "m"})
    assert too_many.value.code == ErrorCode.POLICY_VIOLATION
    store.put("s0", {"metrics": "changed"})  # changing one is still allowed
    store.put("s1", {})
    with pytest.raises(ClientMetricsConfigError) as too_big:
        store.put("large", {"metrics": "m" * MAX_STORED_BYTES})
    assert too_big.value.code == ErrorCode.POLICY_VIOLATION
    reopened = SubscriptionStore(tmp_path)
    assert len(reopened.names()) == MAX_SUBSCRIPTIONS - 1
    assert reopened.values("s0") == {"metrics": "changed"} and "large" not in reopened.names()


def test_client_software_is_remembered_per_address_within_a_bound() -> None:
    software = ClientSoftware(capacity=2)
    software.announce("10.0.0.1:1", "apache-kafka-java", "4.3.1")
    software.announce("10.0.0.1:2", None, None)
    assert software.of("10.0.0.1:1") == Software("apache-kafka-java", "4.3.1")
    assert software.of("10.0.0.1:2") == Software(UNKNOWN, UNKNOWN)
    software.announce("10.0.0.1:3", "librdkafka", "2.12.0")
    assert software.of("10.0.0.1:1") == Software(UNKNOWN, UNKNOWN), "the oldest is forgotten"
    assert software.of("10.0.0.1:3") == Software("librdkafka", "2.12.0")


def test_client_software_is_bounded_in_bytes_too() -> None:
    software = ClientSoftware(capacity_bytes=3 * 1024)
    software.announce("10.0.0.1:1", "a" * 1000, "1")
    software.announce("10.0.0.1:1", "b" * 1000, "1")  # replacing an entry frees its bytes
    software.announce("10.0.0.1:2", "c" * 1000, "1")
    assert software.of("10.0.0.1:1").name == "b" * 1000
    software.announce("10.0.0.1:3", "d" * 1000, "1")
    assert software.of("10.0.0.1:1") == Software(UNKNOWN, UNKNOWN), "the oldest is forgotten"
    assert software.of("10.0.0.1:2").name == "c" * 1000 and software.of("10.0.0.1:3").name == "d" * 1000


def test_pushes_are_counted_per_instance_on_the_injected_clock(tmp_path: Path) -> None:
    """What an exporter reads (``instances()``), and the push interval to the millisecond."""
    now = [1_000_000]
    store = SubscriptionStore(tmp_path)
    store.put("all", {"metrics": "*", "interval.ms": "1000"})
    telemetry = ClientTelemetry(store, 1024, clock=lambda: now[0])
    identity = ClientIdentity("app", "apache-kafka-java", "4.3.1", "127.0.0.1", "50000")
    offer = telemetry.get_subscriptions({"client_instance_id": bytes(16)}, identity)
    push = {
        "client_instance_id": offer["client_instance_id"],
        "subscription_id": offer["subscription_id"],
        "terminating": False,
        "compression_type": 0,
        "metrics": b"12345",
    }
    assert telemetry.push(push, identity)["error_code"] == ErrorCode.NONE
    now[0] += 999
    assert telemetry.push(push, identity)["error_code"] == ErrorCode.THROTTLING_QUOTA_EXCEEDED
    now[0] += 1
    assert telemetry.push(push | {"metrics": b""}, identity)["error_code"] == ErrorCode.NONE
    (instance,) = telemetry.instances()
    assert instance.identity == identity
    assert (instance.counts.pushes, instance.counts.bytes_received) == (1, 5), (
        "an empty push is not a payload"
    )

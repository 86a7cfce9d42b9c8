"""Client metrics subscriptions: Kafka's parsing rules at their edges, the store's bounds, and
the client software table's bound (the broker-level behaviour is in
``tests/integration/test_client_telemetry.py``)."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from pathlib import Path

import pytest

from broker.config.client_metrics_config import (
    ClientMetricsConfigError,
    parse_list,
    parse_subscription,
)
from broker.services.telemetry.client_metrics_manager import ClientIdentity, ClientTelemetry, Offer
from broker.services.telemetry.client_metrics_resources import alter_client_metrics
from broker.services.telemetry.client_software import UNKNOWN, ClientSoftware, Software
from broker.state.client_metrics_store import MAX_STORED_BYTES, MAX_SUBSCRIPTIONS, SubscriptionStore
from broker.state.documents import DocumentUnavailable, FileDocument
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


def open_store(directory: Path) -> SubscriptionStore:
    return SubscriptionStore(FileDocument(directory / SubscriptionStore.FILE_NAME))


def keys(values: dict[str, str]) -> Callable[[dict[str, str]], dict[str, str]]:
    """A change that makes a subscription's keys ``values`` (none: removes it)."""
    return lambda _current: values


async def test_the_store_is_bounded_in_count_and_size(tmp_path: Path) -> None:
    document = FileDocument(tmp_path / SubscriptionStore.FILE_NAME)
    store = SubscriptionStore(document)
    await store.alter("s0", keys({"metrics": "m"}))
    # The rest at once (a thousand rewrites through the store would take a while).
    full = {f"s{number}": {"metrics": "m"} for number in range(MAX_SUBSCRIPTIONS)}
    await document.replace(lambda _: json.dumps({"version": 1, "subscriptions": full}).encode())
    assert len(store.names()) == MAX_SUBSCRIPTIONS
    with pytest.raises(ClientMetricsConfigError) as too_many:
        await store.alter("one-more", keys({"metrics": "m"}))
    assert too_many.value.code == ErrorCode.POLICY_VIOLATION
    await store.alter("s0", keys({"metrics": "changed"}))  # changing one is still allowed
    await store.alter("s1", keys({}))
    with pytest.raises(ClientMetricsConfigError) as too_big:
        await store.alter("large", keys({"metrics": "m" * MAX_STORED_BYTES}))
    assert too_big.value.code == ErrorCode.POLICY_VIOLATION
    reopened = open_store(tmp_path)
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


async def test_pushes_are_counted_per_instance_on_the_injected_clock(tmp_path: Path) -> None:
    """What an exporter reads (``instances()``), and the push interval to the millisecond."""
    now = [1_000_000]
    store = open_store(tmp_path)
    await store.alter("all", keys({"metrics": "*", "interval.ms": "1000"}))
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


async def test_a_change_through_one_broker_is_offered_by_every_broker_sharing_the_document(
    tmp_path: Path,
) -> None:
    """Two stores over one document play two brokers sharing one etcd key: each offers what the
    document announces, and only that."""
    document = FileDocument(tmp_path / SubscriptionStore.FILE_NAME)
    through, elsewhere = SubscriptionStore(document), SubscriptionStore(document)
    await through.alter("all", keys({"metrics": "*"}))
    assert elsewhere.values("all") == {"metrics": "*"} and elsewhere.version == 1
    await through.alter("all", lambda current: current | {"interval.ms": "1000"})
    assert [s.interval_ms for s in elsewhere.subscriptions()] == [1000] and elsewhere.version == 2
    await through.alter("none", keys({}))  # removing what is not there changes nothing
    assert elsewhere.version == 2
    assert SubscriptionStore(FileDocument(document.path)).values("all") == {
        "metrics": "*",
        "interval.ms": "1000",
    }


async def test_a_bad_document_from_elsewhere_is_logged_and_ignored(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    document = FileDocument(tmp_path / SubscriptionStore.FILE_NAME)
    store = SubscriptionStore(document)
    await store.alter("all", keys({"metrics": "*"}))
    for bad in (b"{not json", b'{"subscriptions": {"fast": {"interval.ms": "1"}}}'):
        caplog.clear()
        with caplog.at_level(logging.ERROR):
            await document.replace(lambda _current, bad=bad: bad)  # another broker's write, say
        assert "the new odradek-client-metrics.json cannot be used" in caplog.text
        assert store.names() == ["all"] and store.version == 1


async def test_a_document_that_cannot_be_written_changes_nothing(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    await store.alter("all", keys({"metrics": "*"}))
    (tmp_path / f"{SubscriptionStore.FILE_NAME}.tmp").mkdir()  # where the next write would go
    with pytest.raises(DocumentUnavailable, match="check the disk"):
        await store.alter("all", keys({}))
    change = {"name": "metrics", "config_operation": 0, "value": "org.apache"}
    answer = await alter_client_metrics(store, "other", [change], validate_only=False)
    assert answer["error_code"] == ErrorCode.REQUEST_TIMED_OUT
    assert "check the disk" in str(answer["error_message"])
    assert store.names() == ["all"] and store.version == 1

"""The metrics endpoint and the request log of an in-process broker, over real sockets.

Requests are raw frames, so every count is exact: the test knows each request the broker got.
The stock-client view (numbers agreeing with what real clients did) is in
``tests/integration/test_metrics.py``.
"""

from __future__ import annotations

import json
import logging
import re
import struct
from pathlib import Path

import pytest
import trio
from prometheus_client import CollectorRegistry, Gauge, generate_latest

from broker.config.config import BrokerConfig, ConfigError
from broker.node.metrics_http import HEAD_LIMIT, SAMPLES_PER_SLICE, render
from broker.requests.request_observer import allowed_wait_s
from compat_tests.kit.in_process import running_broker
from compat_tests.kit.raw_protocol import RawClient, connect, make_batch, receive_frame, request_frame
from tests.broker.test_server import DEADLINE_S
from tests.scrape import Scrape, scrape
from wire.api_keys import ApiKey
from wire.codec import encode_request
from wire.header import encode_request_header, request_header_version

METRICS = {"metrics.listener": "http://127.0.0.1:0"}


class BrokenCollector:
    """A collector with a bug: a scrape must fail alone, not the listener or the broker."""

    def collect(self) -> list:
        raise RuntimeError("a collector's bug")


async def scraped(port: int) -> Scrape:
    return await trio.to_thread.run_sync(scrape, port)


async def http_exchange(port: int, request: bytes) -> bytes:
    """Send raw bytes to the metrics listener and end the sending side; everything it answers
    before closing."""
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    async with stream:
        await stream.send_all(request)
        await stream.send_eof()
        answer = b""
        while chunk := await stream.receive_some(65536):
            answer += chunk
        return answer


async def api_versions(stream: trio.SocketStream, count: int) -> None:
    for correlation_id in range(count):
        await stream.send_all(request_frame(ApiKey.API_VERSIONS, 3, {}, correlation_id))
        await receive_frame(stream)


async def api_versions_to_new_broker(tmp_path: Path, count: int, **settings: str) -> None:
    with trio.fail_after(DEADLINE_S):
        async with running_broker(tmp_path, **settings) as (_, port), await connect(port) as stream:
            await api_versions(stream, count)


def metrics_port(broker) -> int:
    assert broker.metrics_address is not None
    return broker.metrics_address[1]


async def test_requests_and_connections_are_counted_exactly(tmp_path: Path) -> None:
    with trio.fail_after(DEADLINE_S):
        async with running_broker(tmp_path, **METRICS) as (broker, port):
            streams = [await connect(port) for _ in range(3)]
            for stream, count in zip(streams, (1, 2, 4), strict=True):
                await api_versions(stream, count)
            metrics = await scraped(metrics_port(broker))
            assert (
                metrics.value("kafka_server_socket_server_metrics_connection_count", listener="PLAINTEXT")
                == 3
            )
            assert (
                metrics.value(
                    "kafka_network_requestmetrics_totaltime_seconds_count", request="ApiVersions", version="3"
                )
                == 7
            )
            assert metrics.value("kafka_network_requestmetrics_requests_total", request="ApiVersions") == 7
            assert metrics.series("kafka_network_requestmetrics_totaltime_seconds_count") == [
                {"request": "ApiVersions", "version": "3"}
            ]
            # every frame read reserved its request memory once: the queue time's count
            assert metrics.value("odradek_network_request_queue_time_seconds_count") == 7
            for stream in streams:
                await stream.aclose()


async def test_http_answers_only_get_of_metrics(tmp_path: Path) -> None:
    with trio.fail_after(DEADLINE_S):
        async with running_broker(tmp_path, **METRICS) as (broker, _):
            port = metrics_port(broker)
            get = await http_exchange(port, b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
            assert (
                get.startswith(b"HTTP/1.1 200 OK\r\n")
                and b"kafka_server_replicamanager_partitioncount" in get
            )
            head = await http_exchange(port, b"HEAD /metrics HTTP/1.1\r\n\r\n")
            assert head.startswith(b"HTTP/1.1 200 OK\r\n") and head.endswith(b"\r\n\r\n")
            assert (await http_exchange(port, b"GET / HTTP/1.1\r\n\r\n")).startswith(b"HTTP/1.1 404 ")
            assert (await http_exchange(port, b"POST /metrics HTTP/1.1\r\n\r\n")).startswith(b"HTTP/1.1 405 ")
            assert (await http_exchange(port, b"\x00\xff garbage\r\n\r\n")).startswith(b"HTTP/1.1 400 ")
            huge = b"GET /metrics HTTP/1.1\r\nX: ".ljust(HEAD_LIMIT, b"a")  # no end of head in sight
            assert (await http_exchange(port, huge)).startswith(b"HTTP/1.1 431 ")
            broken = BrokenCollector()
            broker.metrics.registry.register(broken)
            assert (await http_exchange(port, b"GET /metrics HTTP/1.1\r\n\r\n")).startswith(b"HTTP/1.1 500 ")
            broker.metrics.registry.unregister(broken)
            # a client that hangs up halfway gets nothing, and the endpoint goes on serving
            assert await http_exchange(port, b"GET /met") == b""
            assert (await scraped(port)).value("kafka_server_replicamanager_underreplicatedpartitions") == 0


async def test_request_log_has_one_json_line_per_request(tmp_path: Path, caplog) -> None:
    caplog.set_level(logging.INFO, logger="odradek.requests")
    settings = {"log.requests.enable": "true"}
    with trio.fail_after(DEADLINE_S):
        async with running_broker(tmp_path, **settings) as (_, port), await connect(port) as stream:
            await api_versions(stream, 3)
            # a hostile client id: quotes and a newline must not forge a second log line
            header = encode_request_header(
                ApiKey.METADATA, 12, 99, 'evil"\nclient', request_header_version(ApiKey.METADATA, 12)
            )
            payload = header + encode_request(ApiKey.METADATA, 12, {"topics": []})
            await stream.send_all(struct.pack(">i", len(payload)) + payload)
            await receive_frame(stream)
            local = stream.socket.getsockname()
    records = [r for r in caplog.records if r.name == "odradek.requests"]
    assert [r.levelno for r in records] == [logging.INFO] * 4
    assert all("\n" not in r.getMessage() for r in records)
    lines = [json.loads(r.getMessage().split(": ", 1)[1]) for r in records]
    assert [(line["api"], line["version"], line["correlation_id"]) for line in lines] == [
        ("ApiVersions", 3, 0),
        ("ApiVersions", 3, 1),
        ("ApiVersions", 3, 2),
        ("Metadata", 12, 99),
    ]
    assert lines[0]["client_id"] == "raw-test" and lines[3]["client_id"] == 'evil"\nclient'
    assert all(line["client"] == f"{local[0]}:{local[1]}" and line["latency_ms"] >= 0 for line in lines)


async def test_slow_requests_are_logged_at_warning(tmp_path: Path, caplog) -> None:
    caplog.set_level(logging.INFO, logger="odradek.requests")
    # every request takes more than 0 ms; the request log itself stays off
    await api_versions_to_new_broker(tmp_path, 2, **{"log.slow.request.ms": "0"})
    records = [r for r in caplog.records if r.name == "odradek.requests"]
    assert [r.levelno for r in records] == [logging.WARNING] * 2
    assert all("slow request (over log.slow.request.ms)" in r.getMessage() for r in records)


async def test_default_threshold_logs_nothing(tmp_path: Path, caplog) -> None:
    caplog.set_level(logging.INFO, logger="odradek.requests")
    await api_versions_to_new_broker(tmp_path, 2)
    assert [r for r in caplog.records if r.name == "odradek.requests"] == []


def test_waiting_by_contract_is_not_slowness() -> None:
    assert allowed_wait_s(ApiKey.FETCH, {"max_wait_ms": 500}) == 0.5
    assert allowed_wait_s(ApiKey.FETCH, {"max_wait_ms": -1}) == 0
    assert allowed_wait_s(ApiKey.JOIN_GROUP, {"rebalance_timeout_ms": 60000, "session_timeout_ms": 10}) == 60
    assert allowed_wait_s(ApiKey.JOIN_GROUP, {"rebalance_timeout_ms": -1, "session_timeout_ms": 10000}) == 10
    assert allowed_wait_s(ApiKey.PRODUCE, {"acks": -1}) == 0
    assert allowed_wait_s(ApiKey.FETCH, None) == 0


@pytest.mark.parametrize("value", ["9404", "https://:9404", "http://host", "http://:99999", "PLAINTEXT://:1"])
def test_metrics_listener_must_be_an_http_address(tmp_path: Path, value: str) -> None:
    with pytest.raises(ConfigError, match="metrics.listener"):
        BrokerConfig.load(overrides={"log.dirs": str(tmp_path), "metrics.listener": value}, environ={})


async def test_no_endpoint_by_default(tmp_path: Path) -> None:
    with trio.fail_after(DEADLINE_S):
        async with running_broker(tmp_path) as (broker, _):
            assert broker.metrics_address is None


DASHBOARD = Path(__file__).parents[2] / "docs" / "grafana" / "odradek.json"
SAMPLE_SUFFIXES = ("_bucket", "_count", "_sum", "_total")


def dashboard_metric_names() -> set[str]:
    """Every metric name the dashboard's queries read (PromQL functions and labels excluded)."""
    exprs = [
        target["expr"]
        for panel in json.loads(DASHBOARD.read_text())["panels"]
        for target in panel.get("targets", [])
    ]
    assert exprs
    return {name for expr in exprs for name in re.findall(r"\b([a-z_]+)\{", expr)}


async def test_dashboard_reads_only_exported_metrics(tmp_path: Path) -> None:
    with trio.fail_after(DEADLINE_S):
        async with running_broker(tmp_path, **METRICS) as (broker, _):
            text = (await scraped(metrics_port(broker))).text
    exported = set(re.findall(r"^# TYPE (\S+) ", text, re.MULTILINE))
    for name in dashboard_metric_names():
        family = next(
            (name.removesuffix(s) for s in SAMPLE_SUFFIXES if name.removesuffix(s) in exported), name
        )
        assert family in exported, f"the dashboard reads {name}, which the broker does not export"


async def test_each_fsync_round_and_partition_sync_is_timed(tmp_path: Path) -> None:
    """flush.messages=1: each acks=1 Produce, sent one after another, waits for a round of its
    own that syncs its one partition."""
    produced = 4

    def produce(port: int) -> None:
        with RawClient(f"127.0.0.1:{port}") as client:
            client.create_topic("synced", 1)
            for _ in range(produced):
                assert client.produce("synced", 0, make_batch([b"v"]), acks=1)["error_code"] == 0

    settings = METRICS | {"log.flush.interval.messages": "1"}
    with trio.fail_after(DEADLINE_S):
        async with running_broker(tmp_path, **settings) as (broker, port):
            await trio.to_thread.run_sync(produce, port)
            metrics = await scraped(metrics_port(broker))
    assert metrics.value("odradek_durability_round_seconds_count") == produced
    assert metrics.value("kafka_log_logflushstats_logflush_seconds_count") == produced
    assert metrics.value("kafka_server_brokertopicmetrics_messagesin_total", topic="synced") == produced


async def test_a_scrape_exports_at_most_the_configured_partitions(tmp_path: Path) -> None:
    def create(port: int) -> None:
        with RawClient(f"127.0.0.1:{port}") as client:
            client.create_topic("wide", 3)

    settings = METRICS | {"metrics.partition.series.max": "2"}
    with trio.fail_after(DEADLINE_S):
        async with running_broker(tmp_path, **settings) as (broker, port):
            before = await scraped(metrics_port(broker))
            await trio.to_thread.run_sync(create, port)
            after = await scraped(metrics_port(broker))
    assert before.value("odradek_metrics_series_truncated") == 0
    assert after.value("kafka_server_replicamanager_partitioncount") == 3
    assert len(after.series("kafka_log_log_logendoffset")) == 2
    assert after.value("odradek_metrics_series_truncated") == 1


async def test_sliced_rendering_is_the_exposition_of_the_whole_registry() -> None:
    registry = CollectorRegistry()
    wide = Gauge("wide", "More samples than one slice holds.", ["partition"], registry=registry)
    for partition in range(2 * SAMPLES_PER_SLICE + 7):
        wide.labels(str(partition)).set(partition)
    Gauge("narrow", "A family of one sample.", registry=registry).set(1)
    assert await render(registry) == generate_latest(registry)

"""The event-loop histogram behind the request metrics, exposed as Prometheus reads it."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, generate_latest

from broker.services.request_stats import REQUEST_BUCKETS, LoopHistogram, RequestCollector, RequestStats
from tests.scrape import Scrape
from wire.api_keys import ApiKey


def test_buckets_are_cumulative_and_include_their_bound() -> None:
    histogram = LoopHistogram()
    for seconds in (0.0001, 0.0005, 0.0006, 31.0):
        histogram.observe(seconds)
    buckets = dict(histogram.exposed())
    assert buckets["0.0005"] == 2  # le: a value equal to the bound is in its bucket
    assert buckets["0.001"] == 3
    assert buckets["30.0"] == 3 and buckets["+Inf"] == 4
    assert len(buckets) == len(REQUEST_BUCKETS) + 1
    assert histogram.total == 0.0001 + 0.0005 + 0.0006 + 31.0


def test_collector_exports_counts_and_histograms_per_api_version() -> None:
    stats = RequestStats()
    for seconds in (0.002, 0.004, 0.2):
        stats.observe(ApiKey.PRODUCE, 9, seconds)
    stats.observe(ApiKey.METADATA, 12, 0.001)
    stats.queue_time.observe(0.0)
    registry = CollectorRegistry()
    registry.register(RequestCollector(stats))
    scraped = Scrape(generate_latest(registry).decode())
    assert scraped.value("kafka_network_requestmetrics_requests_total", request="Produce", version="9") == 3
    assert scraped.value("kafka_network_requestmetrics_requests_total", request="Metadata") == 1
    produce = {"request": "Produce", "version": "9"}
    assert scraped.value("kafka_network_requestmetrics_totaltime_seconds_bucket", le="0.005", **produce) == 2
    assert scraped.value("kafka_network_requestmetrics_totaltime_seconds_count", **produce) == 3
    assert abs(scraped.value("kafka_network_requestmetrics_totaltime_seconds_sum", **produce) - 0.206) < 1e-9
    assert scraped.value("odradek_network_request_queue_time_seconds_count") == 1

"""The broker's Prometheus metrics, under the names Kafka's own metrics have in Prometheus.

Operators scrape Kafka through the Prometheus JMX exporter, whose usual rules turn an MBean such
as ``kafka.server:type=BrokerTopicMetrics,name=BytesInPerSec,topic=t`` into
``kafka_server_brokertopicmetrics_bytesin_total{topic="t"}``; Odradek serves the same names, so
existing dashboards and alerts keep working. Times are histograms in seconds (Prometheus'
convention) where Kafka has ``...TimeMs`` percentiles. Names that Kafka lacks start with
``odradek_``; consumer-group lag uses the names of the widely deployed kafka_exporter.

Per-request counts and times are plain lists (:mod:`broker.services.request_stats`, measured); per-topic
counters are ``prometheus_client`` children kept in a dict (about 0.3 µs an update; looking a
label up each time would double that). State that needs a walk (log sizes, offsets, lag) is
read at scrape time instead (:mod:`broker.node.metrics_state`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import Any, ParamSpec

from prometheus_client import (
    GC_COLLECTOR,
    PLATFORM_COLLECTOR,
    PROCESS_COLLECTOR,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    disable_created_metrics,
)

from broker.services.request_stats import RequestCollector, RequestStats

P = ParamSpec("P")

# ``_created`` series double the output and no Kafka dashboard reads them.
disable_created_metrics()

# fdatasync of a segment: ~0.2 ms on a fast disk, seconds on a saturated one.
SYNC_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0)


class BrokerMetrics:
    """One broker's metric families, in a registry of its own (tests run several brokers in
    one process), plus the process metrics every Prometheus client library exports."""

    def __init__(self) -> None:
        self.registry = registry = CollectorRegistry()
        for collector in (PROCESS_COLLECTOR, PLATFORM_COLLECTOR, GC_COLLECTOR):
            registry.register(collector)
        self.requests = RequestStats()
        registry.register(RequestCollector(self.requests))
        self.bytes_in = self._per_topic(
            "bytesin", "Bytes of record batches appended by Produce requests (Kafka: BytesInPerSec)."
        )
        self.messages_in = self._per_topic(
            "messagesin", "Records appended by Produce requests (Kafka: MessagesInPerSec)."
        )
        self.bytes_out = self._per_topic(
            "bytesout", "Bytes of record batches in Fetch responses (Kafka: BytesOutPerSec)."
        )
        self.connections = Gauge(
            "kafka_server_socket_server_metrics_connection_count",
            "Open client connections per listener (Kafka: socket-server-metrics connection-count).",
            ["listener"],
            registry=registry,
        )
        self.log_flush_time = Histogram(
            "kafka_log_logflushstats_logflush_seconds",
            "Time of one partition log's data sync or flush (Kafka: LogFlushRateAndTimeMs).",
            buckets=SYNC_BUCKETS,
            registry=registry,
        )
        self.sync_round_time = Histogram(
            "odradek_durability_round_seconds",
            "Time of one group-commit round (flush.messages), which acknowledgements wait for.",
            buckets=SYNC_BUCKETS,
            registry=registry,
        )
        self.share_acknowledged = Counter(
            "kafka_server_sharegroupmetrics_recordacknowledgement",
            "Records share consumers acknowledged, by acknowledge type (Kafka: ShareGroupMetrics "
            "RecordAcknowledgement, ackType Accept/Release/Reject/Gap/Renew).",
            ["ack_type"],
            registry=registry,
        )
        self.share_acquired = Counter(
            "odradek_share_acquired_records",
            "Records handed to share consumers: delivery=first, or redelivery (released, "
            "timed out, or their consumer gone) once more.",
            ["delivery"],
            registry=registry,
        )
        self._produced: dict[str, tuple[Any, Any]] = {}
        self._fetched: dict[str, Any] = {}

    def _per_topic(self, name: str, documentation: str) -> Counter:
        """One of Kafka's BrokerTopicMetrics counters, by topic."""
        return Counter(
            f"kafka_server_brokertopicmetrics_{name}", documentation, ["topic"], registry=self.registry
        )

    def appended(self, topic: str, size: int, records: int) -> None:
        """A Produce request appended ``records`` records in ``size`` bytes of batches to ``topic``."""
        children = self._produced.get(topic)
        if children is None:
            children = self._produced[topic] = (self.bytes_in.labels(topic), self.messages_in.labels(topic))
        children[0].inc(size)
        children[1].inc(records)

    def fetched(self, topic_sizes: Iterable[tuple[str, int]]) -> None:
        """A Fetch response carried these record bytes per topic."""
        for topic, size in topic_sizes:
            child = self._fetched.get(topic)
            if child is None:
                child = self._fetched[topic] = self.bytes_out.labels(topic)
            child.inc(size)

    def counting(self, listener: str, serve: Callable[P, Awaitable[None]]) -> Callable[P, Awaitable[None]]:
        """``serve`` (a listener's connection server), with each connection counted in
        ``listener``'s gauge while it is served."""
        gauge = self.connections.labels(listener)

        async def serve_counted(*args: P.args, **kwargs: P.kwargs) -> None:
            gauge.inc()
            try:
                await serve(*args, **kwargs)
            finally:
                gauge.dec()

        return serve_counted

    def forget_topic(self, topic: str) -> None:
        """Drop a deleted topic's series, as Kafka removes its BrokerTopicMetrics: a topic
        created again starts from zero, and create/delete cycles cannot grow memory."""
        self._produced.pop(topic, None)
        self._fetched.pop(topic, None)
        for family in (self.bytes_in, self.messages_in, self.bytes_out):
            family.remove(topic)

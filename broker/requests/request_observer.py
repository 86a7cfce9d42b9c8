"""What happens once a request is answered: its time in the metrics, and the request log.

``broker.requests.dispatch`` calls :meth:`RequestObserver.finished` for every request that reached a
handler, when its response is ready (a Produce waiting for its fsync round: when the round is
done). That is the request's latency as Kafka's TotalTimeMs counts it, less the time to write
the response to the socket.

The request log is Kafka's ``kafka.request.logger`` in one structured line: with
``log.requests.enable`` every request is logged at INFO on the ``odradek.requests`` logger as
JSON (client id, address, API, version, correlation id, latency); a request slower than
``log.slow.request.ms`` is logged at WARNING whatever that setting. JSON keeps a hostile client
id (quotes, newlines) from forging or breaking log lines.

Waiting is part of some requests' contract: a Fetch long-polls for up to its ``max_wait_ms``
and a JoinGroup waits up to its rebalance timeout for the other members. Only the time beyond
that wait counts as slow, so a consumer idling at the end of a topic is not reported.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from time import perf_counter
from typing import TYPE_CHECKING, Any

from broker.requests.version_rules import FIRST_TOPIC_ID_VERSION
from wire.api_keys import ApiKey, api_name
from wire.header import RequestHeader

if TYPE_CHECKING:
    from broker.services.metrics import BrokerMetrics
    from broker.state.topic_registry import TopicRegistry

request_log = logging.getLogger("odradek.requests")


def allowed_wait_s(api_key: int, request: dict[str, Any] | None) -> float:
    """How long the request may wait by its own terms (seconds), not counted as slow."""
    if request is None:
        return 0.0
    if api_key == ApiKey.FETCH:
        return max(0, request["max_wait_ms"]) / 1000
    if api_key == ApiKey.JOIN_GROUP:
        rebalance_timeout_ms = request["rebalance_timeout_ms"]  # -1 before v1: the session timeout
        return (
            max(0, rebalance_timeout_ms if rebalance_timeout_ms >= 0 else request["session_timeout_ms"])
            / 1000
        )
    return 0.0


class RequestObserver:
    """Times every answered request and writes the request log (see the module docstring)."""

    def __init__(self, metrics: BrokerMetrics, topics: TopicRegistry, log_all: bool, slow_ms: int) -> None:
        self._metrics = metrics
        self._topics = topics
        self._log_all = log_all
        self._slow_s = slow_ms / 1000 if slow_ms >= 0 else None

    def finished(
        self,
        header: RequestHeader,
        client_address: str,
        started: float,
        request: dict[str, Any] | None,
        response: dict[str, Any] | None,
    ) -> None:
        """Record a request whose response is ready now; ``started`` is its ``perf_counter()``
        on arrival. ``request`` may be None when it is no longer at hand (a deferred answer):
        then no wait is allowed for."""
        elapsed = perf_counter() - started
        metrics = self._metrics
        metrics.requests.observe(header.api_key, header.api_version, elapsed)
        if header.api_key == ApiKey.FETCH and response is not None:
            metrics.fetched(self._fetched_bytes(response, header.api_version))
        slow = self._slow_s is not None and elapsed - allowed_wait_s(header.api_key, request) > self._slow_s
        if slow or self._log_all:
            line = json.dumps(
                {
                    "api": api_name(header.api_key),
                    "version": header.api_version,
                    "correlation_id": header.correlation_id,
                    "client_id": header.client_id,
                    "client": client_address,
                    "latency_ms": round(elapsed * 1000, 3),
                }
            )
            if slow:
                request_log.warning("slow request (over log.slow.request.ms): %s", line)
            else:
                request_log.info("request: %s", line)

    def _fetched_bytes(self, response: dict[str, Any], version: int) -> Iterator[tuple[str, int]]:
        """(topic, record bytes) per topic of a Fetch response; v13+ names topics by id."""
        by_id = version >= FIRST_TOPIC_ID_VERSION
        for topic in response["responses"]:
            size = sum(len(partition["records"] or b"") for partition in topic["partitions"])
            if not size:
                continue
            if by_id:
                info = self._topics.by_id(topic["topic_id"])
                if info is None:
                    continue  # deleted while the fetch was answered
                yield info.name, size
            else:
                yield topic["topic"], size

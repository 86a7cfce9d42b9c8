"""Client telemetry (KIP-714): GetTelemetrySubscriptions and PushTelemetry, as Kafka's
``ClientMetricsManager`` answers them.

A client first asks for its subscription; the broker gives it a client instance id (unless it
brings one), the metric prefixes every matching subscription requests (``*`` when one asks
for all), the shortest of their push intervals, a subscription id that changes whenever that
set does, the compression types it accepts and ``telemetry.max.bytes``.  The client then
pushes every interval.  A request before its interval is THROTTLING_QUOTA_EXCEEDED (a push
right after a GetTelemetrySubscriptions is allowed), a push naming another subscription id is
UNKNOWN_SUBSCRIPTION_ID (the client asks again), one after a terminating push is
INVALID_REQUEST, an unknown compression type UNSUPPORTED_COMPRESSION_TYPE and a payload over
``telemetry.max.bytes`` TELEMETRY_TOO_LARGE, all checked in Kafka's order.

Where Kafka hands payloads to a ``ClientTelemetryExporter`` plugin, Odradek keeps them opaque:
it decompresses each one within ``telemetry.max.bytes`` (a payload that does not decompress is
INVALID_RECORD, as the plugin's failure is in Kafka; one that decompresses past the bound is
TELEMETRY_TOO_LARGE, as Kafka after 4.3 answers, where 4.3.1 says INVALID_RECORD), counts
pushes and bytes per client instance (:meth:`ClientTelemetry.instances`, for an exporter) and
logs each push at DEBUG.  Nothing of a payload is kept.

Every client instance costs memory and a client picks its own id, so the instances are an LRU
of :data:`MAX_INSTANCES` (Kafka's cache size) and of :data:`MAX_IDENTITY_BYTES` of what their
clients said about themselves (Odradek-specific), that also forgets an instance idle for
``max(60 s, 3 x its push interval)`` (Kafka's expiry).  Instances matched by the same
subscriptions share one :class:`Offer`, so long metrics lists are held once.  Kafka also drops an instance when its
connection closes; connections do not report that here, so it lasts until it expires.
"""

from __future__ import annotations

import base64
import logging
import struct
import uuid
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from crc32c import crc32c

from broker.config.client_metrics_config import ALL_METRICS, DEFAULT_INTERVAL_MS
from broker.state.client_metrics_store import SubscriptionStore
from log.clock import Clock
from wire.error_codes import ErrorCode
from wire.record_batch import Compression, decompress
from wire.record_batch_errors import CorruptRecordError, DecompressionLimitError

if TYPE_CHECKING:
    from wire.messages import (
        GetTelemetrySubscriptionsRequest,
        GetTelemetrySubscriptionsResponse,
        PushTelemetryRequest,
        PushTelemetryResponse,
    )

log = logging.getLogger(__name__)

MAX_INSTANCES = 16_384
"""Kafka's ``CACHE_MAX_SIZE``: client instances remembered at once."""
MAX_IDENTITY_BYTES = 32 << 20
"""Odradek-specific: what the remembered instances' clients told about themselves (a client id
alone may take 32 KiB) is bounded too; the least recently seen are forgotten first."""
MIN_EXPIRY_MS = 60_000
_MAX_OFFERS = 1024
ACCEPTED_COMPRESSION = [Compression.ZSTD, Compression.LZ4, Compression.GZIP, Compression.SNAPPY]
"""Kafka's order: clients take the first one they support."""
_ZERO_ID = bytes(16)
_RESERVED_IDS = frozenset({_ZERO_ID, bytes(15) + b"\x01"})  # Kafka's Uuid.RESERVED
_TWO_LONGS = struct.Struct(">qq")
_INT32 = struct.Struct(">i")


def instance_id_text(instance_id: bytes) -> str:
    """A client instance id as Kafka prints a ``Uuid`` (URL-safe base64, no padding)."""
    return base64.urlsafe_b64encode(instance_id).decode().rstrip("=")


def _java_uuid_hash(instance_id: bytes) -> int:
    """Kafka's ``Uuid.hashCode``: the two halves XORed, folded to 32 bits."""
    most, least = _TWO_LONGS.unpack(instance_id)
    folded = most ^ least
    return ((folded >> 32) ^ folded) & 0xFFFFFFFF


@dataclass(frozen=True, slots=True)
class Offer:
    """What the subscriptions matching a client ask of it: one object shared by every client
    instance they match, so a long metrics list is not held once per instance."""

    metrics: tuple[str, ...]
    interval_ms: int
    digest: int
    """CRC32C of Kafka's text of the metrics and interval, the instance-independent part of
    a subscription id."""

    @classmethod
    def of(cls, metrics: tuple[str, ...], interval_ms: int) -> Offer:
        text = "[" + ", ".join(metrics) + "]" + str(interval_ms)
        return cls(metrics, interval_ms, crc32c(text.encode()))

    def subscription_id(self, instance_id: bytes) -> int:
        """Kafka's subscription id: the digest XORed with the instance id's hash, as an int32."""
        unsigned = self.digest ^ _java_uuid_hash(instance_id)
        return _INT32.unpack(unsigned.to_bytes(4, "big"))[0]


@dataclass(frozen=True, slots=True)
class ClientIdentity:
    """What a connection tells about its client, matched by subscriptions' ``match`` patterns."""

    client_id: str
    software_name: str
    software_version: str
    address: str
    port: str

    @property
    def cost(self) -> int:
        """Bytes this identity holds, with a fixed allowance for the objects around it."""
        return 512 + sum(map(len, (self.client_id, self.software_name, self.software_version, self.address)))

    def attributes(self, instance_id: bytes) -> dict[str, str]:
        return {
            "client_instance_id": instance_id_text(instance_id),
            "client_id": self.client_id,
            "client_software_name": self.software_name,
            "client_software_version": self.software_version,
            "client_source_address": self.address,
            "client_source_port": self.port,
        }


@dataclass(slots=True)
class PushCounts:
    """What one client instance pushed so far (kept when its subscription is re-matched)."""

    pushes: int = 0
    bytes_received: int = 0  # as sent, compressed


@dataclass(slots=True)
class ClientInstance:
    """One client instance's subscription and request times (Kafka's ClientMetricsInstance)."""

    instance_id: bytes
    identity: ClientIdentity
    offer: Offer
    subscription_id: int
    subscription_version: int
    counts: PushCounts = field(default_factory=PushCounts)
    terminating: bool = False
    last_error: ErrorCode = ErrorCode.NONE
    last_get_ms: int = 0
    last_push_ms: int = 0
    expires_ms: int = 0

    def may_get(self, now_ms: int) -> bool:
        """A GetTelemetrySubscriptions is due one interval after the last request of either kind."""
        if now_ms - max(self.last_get_ms, self.last_push_ms) >= self.offer.interval_ms:
            self.last_get_ms = now_ms
            return True
        return False

    def may_push(self, now_ms: int) -> bool:
        """A push is due right after a GetTelemetrySubscriptions, else one interval after the last."""
        if self.last_get_ms > self.last_push_ms or now_ms - self.last_push_ms >= self.offer.interval_ms:
            self.last_push_ms = now_ms
            return True
        return False


class TelemetryRefused(Exception):
    """A telemetry request Kafka refuses, with the error code it answers."""

    def __init__(self, code: ErrorCode) -> None:
        super().__init__(code.name)
        self.code = code


class ClientTelemetry:
    """Subscriptions (durable) and the client instances that fetch and push them."""

    def __init__(self, store: SubscriptionStore, max_bytes: int, clock: Clock) -> None:
        self.store = store
        self.max_bytes = max_bytes
        self._clock = clock
        self._instances: OrderedDict[bytes, ClientInstance] = OrderedDict()
        self._identity_bytes = 0
        self._offers: dict[frozenset[str], Offer] = {}  # by the names of the subscriptions matched
        self._offers_version = store.version

    def instances(self) -> list[ClientInstance]:
        """The client instances remembered now, least recently seen first."""
        return list(self._instances.values())

    def _new_instance_id(self) -> bytes:
        while True:
            candidate = uuid.uuid4().bytes
            fresh = candidate not in _RESERVED_IDS and candidate not in self._instances
            if fresh and not instance_id_text(candidate).startswith("-"):  # as Kafka's Uuid.randomUuid
                return candidate

    def _offer(self, attributes: dict[str, str]) -> Offer:
        """What every subscription matching these attributes asks for (``*`` alone if one asks
        for all; the shortest interval), shared with every client matched by the same ones."""
        if self._offers_version != self.store.version or len(self._offers) >= _MAX_OFFERS:
            self._offers.clear()
            self._offers_version = self.store.version
        matched = [s for s in self.store.subscriptions() if s.matches(attributes)]
        key = frozenset(s.name for s in matched)
        offer = self._offers.get(key)
        if offer is None:
            metrics = frozenset().union(*(s.metrics for s in matched))
            requested = (ALL_METRICS,) if ALL_METRICS in metrics else tuple(sorted(metrics))
            # Kafka starts from the default interval: no subscription makes it longer.
            interval = min([DEFAULT_INTERVAL_MS, *(s.interval_ms for s in matched)])
            offer = self._offers[key] = Offer.of(requested, interval)
        return offer

    def _match(self, instance_id: bytes, identity: ClientIdentity, counts: PushCounts) -> ClientInstance:
        """A fresh instance with what the subscriptions matching the client ask for."""
        offer = self._offer(identity.attributes(instance_id))
        return ClientInstance(
            instance_id, identity, offer, offer.subscription_id(instance_id), self.store.version, counts
        )

    def _instance(self, instance_id: bytes, identity: ClientIdentity, now_ms: int) -> ClientInstance:
        """The remembered instance, matched again if subscriptions changed since; else a new one."""
        instance = self._instances.get(instance_id)
        if instance is None:
            instance = self._match(instance_id, identity, PushCounts())
            self._identity_bytes += identity.cost
        elif instance.subscription_version < self.store.version:
            instance = self._match(instance_id, instance.identity, instance.counts)
        instance.expires_ms = now_ms + max(MIN_EXPIRY_MS, 3 * instance.offer.interval_ms)
        self._instances[instance_id] = instance
        self._instances.move_to_end(instance_id)
        self._forget_old(now_ms)
        return instance

    def _forget_old(self, now_ms: int) -> None:
        """Drop the least recently seen instances while over a bound or past their expiry."""
        while self._instances:
            oldest = next(iter(self._instances.values()))
            bounded = len(self._instances) <= MAX_INSTANCES and self._identity_bytes <= MAX_IDENTITY_BYTES
            if bounded and oldest.expires_ms > now_ms:
                return
            self._instances.popitem(last=False)
            self._identity_bytes -= oldest.identity.cost

    def get_subscriptions(
        self, request: GetTelemetrySubscriptionsRequest, identity: ClientIdentity
    ) -> GetTelemetrySubscriptionsResponse:
        """A GetTelemetrySubscriptions response body."""
        now_ms = self._clock()
        instance_id = bytes(request["client_instance_id"])
        if instance_id == _ZERO_ID:
            instance_id = self._new_instance_id()
        instance = self._instance(instance_id, identity, now_ms)
        if not instance.may_get(now_ms) and instance.last_error not in (
            ErrorCode.UNKNOWN_SUBSCRIPTION_ID,
            ErrorCode.UNSUPPORTED_COMPRESSION_TYPE,
        ):
            return {  # as Kafka's error response: every other field at its zero
                "throttle_time_ms": 0,
                "error_code": ErrorCode.THROTTLING_QUOTA_EXCEEDED,
                "client_instance_id": _ZERO_ID,
                "subscription_id": 0,
                "accepted_compression_types": [],
                "push_interval_ms": 0,
                "telemetry_max_bytes": 0,
                "delta_temporality": False,
                "requested_metrics": [],
            }
        instance.last_error = ErrorCode.NONE
        return {
            "throttle_time_ms": 0,
            "error_code": ErrorCode.NONE,
            "client_instance_id": instance_id,
            "subscription_id": instance.subscription_id,
            "accepted_compression_types": ACCEPTED_COMPRESSION,
            "push_interval_ms": instance.offer.interval_ms,
            "telemetry_max_bytes": self.max_bytes,
            "delta_temporality": True,
            "requested_metrics": instance.offer.metrics,
        }

    def push(self, request: PushTelemetryRequest, identity: ClientIdentity) -> PushTelemetryResponse:
        """A PushTelemetry response body; the payload is checked, counted and dropped."""
        instance_id = bytes(request["client_instance_id"])
        if instance_id in _RESERVED_IDS:
            return {"throttle_time_ms": 0, "error_code": ErrorCode.INVALID_REQUEST}
        instance = self._instance(instance_id, identity, self._clock())
        try:
            self._check_push(instance, request)
            self._receive(instance, request)
        except TelemetryRefused as refused:
            instance.last_error = refused.code
            return {"throttle_time_ms": 0, "error_code": refused.code}
        instance.last_error = ErrorCode.NONE
        return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE}

    def _check_push(self, instance: ClientInstance, request: PushTelemetryRequest) -> None:
        """Kafka's ``validatePushRequest``, in its order; the push's terminating flag sticks."""
        try:
            if instance.terminating:
                raise TelemetryRefused(ErrorCode.INVALID_REQUEST)
            if not instance.may_push(self._clock()) and not request["terminating"]:
                raise TelemetryRefused(ErrorCode.THROTTLING_QUOTA_EXCEEDED)
            if request["subscription_id"] != instance.subscription_id:
                raise TelemetryRefused(ErrorCode.UNKNOWN_SUBSCRIPTION_ID)
            if not Compression.NONE <= request["compression_type"] <= Compression.ZSTD:
                raise TelemetryRefused(ErrorCode.UNSUPPORTED_COMPRESSION_TYPE)
            if len(request["metrics"]) > self.max_bytes:
                raise TelemetryRefused(ErrorCode.TELEMETRY_TOO_LARGE)
        finally:
            instance.terminating = request["terminating"]

    def _receive(self, instance: ClientInstance, request: PushTelemetryRequest) -> None:
        """Decompress the payload within ``telemetry.max.bytes`` and count it (empty: nothing)."""
        payload = request["metrics"]
        if not payload:
            return
        try:
            data = decompress(request["compression_type"], payload, self.max_bytes)
        except DecompressionLimitError:
            raise TelemetryRefused(ErrorCode.TELEMETRY_TOO_LARGE) from None
        except CorruptRecordError:
            raise TelemetryRefused(ErrorCode.INVALID_RECORD) from None
        counts = instance.counts
        counts.pushes += 1
        counts.bytes_received += len(payload)
        log.debug(
            "client telemetry pushed by client instance %s: %d bytes (%d as sent; client id %r, %s %s "
            "from %s; %d pushes, %d bytes as sent so far%s)",
            instance_id_text(instance.instance_id),
            len(data),
            len(payload),
            instance.identity.client_id,
            instance.identity.software_name,
            instance.identity.software_version,
            instance.identity.address,
            counts.pushes,
            counts.bytes_received,
            ", terminating" if request["terminating"] else "",
        )

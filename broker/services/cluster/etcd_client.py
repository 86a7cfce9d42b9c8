"""An etcd v3 client for trio, over etcd's JSON gateway, with endpoint failover.

Why the JSON gateway: etcd's gRPC clients for Python are asyncio-only or unmaintained, while
every etcd 3.4+ member also serves the same API as JSON over HTTP (`POST /v3/kv/range`, ...),
which httpx speaks on trio. Keys and values travel base64-encoded and int64 fields arrive as
strings; fields equal to zero are left out of answers, so every reader here defaults to 0.

Failover follows etcd's own client: a request goes to the endpoint that answered last and, when
that endpoint cannot be reached or times out, to the next one; when none answers the call raises
:class:`EtcdUnavailable`. A write whose request reached an endpoint but whose answer was lost is
not sent again (a retried create-if-absent transaction would fail against its own first try):
it raises :class:`EtcdOutcomeUnknown`, and the caller reads back what happened.

Every wait is bounded by ``request_timeout_s`` (connect, send, each read of an answer) except the
watch stream's reads, which may be idle for as long as nothing changes: while a stream is
silent, its endpoint is probed every ``request_timeout_s`` with a linearizable read, and a stream
whose endpoint fails the probe is reopened on the next endpoint.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import aclosing, asynccontextmanager
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Literal, Self, TypeVar

import httpx
import trio

_T = TypeVar("_T")

# gRPC status codes etcd answers with (the gateway passes them through as "code").
_GRPC_NOT_FOUND = 5
# Answers about the member rather than the request (Canceled, Unknown, DeadlineExceeded,
# Internal, Unavailable; a member's gateway answers Unavailable or Canceled while its own gRPC
# connection is not up yet): another member may do better.
_GRPC_MEMBER_TROUBLE = frozenset({1, 2, 4, 13, 14})
# Answers meaning "this member did not take the request", so a write may go to the next member.
# Other Unavailable answers (request timed out, leader changed) leave a write's outcome unknown.
_NOT_APPLIED_MESSAGES = frozenset(
    {
        "etcdserver: no leader",
        "etcdserver: not capable",
        "etcdserver: too many requests",
        "etcdserver: server stopped",
    }
)
# Transport failures that happen before etcd has the whole request: safe to send again anywhere.
_NOT_SENT = (
    httpx.ConnectError,
    httpx.ConnectTimeout,
    httpx.PoolTimeout,
    httpx.WriteError,
    httpx.WriteTimeout,
)
# Pause between watch reconnections, doubled per failed attempt up to the cap.
_WATCH_RETRY_FIRST_S = 0.05
_WATCH_RETRY_MAX_S = 1.0


class EtcdError(Exception):
    """Any failure of an etcd call; the message says which endpoint and what went wrong."""


class EtcdUnavailable(EtcdError):
    """No endpoint answered."""


class EtcdOutcomeUnknown(EtcdError):
    """A write reached etcd but its answer was lost: it may or may not have been applied."""


class EtcdRequestFailed(EtcdError):
    """etcd answered the request with an error (``code`` is the gRPC status code)."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


class WatchCompacted(EtcdError):
    """The watch's start revision was compacted away; history before ``compact_revision`` is gone."""

    def __init__(self, message: str, compact_revision: int) -> None:
        super().__init__(message)
        self.compact_revision = compact_revision


@dataclass(frozen=True, slots=True)
class KeyValue:
    key: bytes
    value: bytes
    create_revision: int
    mod_revision: int
    version: int
    lease: int


@dataclass(frozen=True, slots=True)
class WatchEvent:
    """One change; a DELETE carries the key and the revision of the deletion, nothing else."""

    kind: Literal["PUT", "DELETE"]
    kv: KeyValue


@dataclass(frozen=True, slots=True)
class Compare:
    """One EQUAL comparison of a key's revision in a transaction, made with the class methods.
    Revisions are all the cluster guards its writes with, so etcd's VALUE and VERSION targets
    are not offered."""

    key: bytes
    target: Literal["MOD", "CREATE"]
    revision: int

    @classmethod
    def mod_revision(cls, key: bytes, revision: int) -> Compare:
        return cls(key, "MOD", revision)

    @classmethod
    def create_revision(cls, key: bytes, revision: int) -> Compare:
        """``create_revision(key, 0)`` holds exactly when the key is absent."""
        return cls(key, "CREATE", revision)

    def to_json(self) -> dict[str, Any]:
        revision_field = "mod_revision" if self.target == "MOD" else "create_revision"
        return {
            "key": _b64(self.key),
            "target": self.target,
            "result": "EQUAL",
            revision_field: str(self.revision),
        }


@dataclass(frozen=True, slots=True)
class Put:
    key: bytes
    value: bytes
    lease: int = 0

    def to_json(self) -> dict[str, Any]:
        return {"request_put": {"key": _b64(self.key), "value": _b64(self.value), "lease": str(self.lease)}}


@dataclass(frozen=True, slots=True)
class Delete:
    key: bytes

    def to_json(self) -> dict[str, Any]:
        return {"request_delete_range": {"key": _b64(self.key)}}


@dataclass(frozen=True, slots=True)
class Get:
    key: bytes

    def to_json(self) -> dict[str, Any]:
        return {"request_range": {"key": _b64(self.key)}}


@dataclass(frozen=True, slots=True)
class TxnResult:
    """``gets`` holds, for each :class:`Get` of the branch that ran, the key-values it read."""

    succeeded: bool
    revision: int
    gets: list[list[KeyValue]]


def parse_endpoints(spec: str) -> list[str]:
    """``etcd://h1:2379,h2:2379`` (the ``--cluster`` value) -> ``["http://h1:2379", "http://h2:2379"]``."""
    scheme = "etcd://"
    if not spec.startswith(scheme):
        raise ValueError(f"etcd endpoints must look like etcd://host:port[,host:port...], not {spec!r}")
    hosts = [host.strip() for host in spec[len(scheme) :].split(",")]
    if not hosts or any(not host or "/" in host or ":" not in host for host in hosts):
        raise ValueError(f"etcd endpoints must look like etcd://host:port[,host:port...], not {spec!r}")
    return [f"http://{host}" for host in hosts]


def prefix_end(prefix: bytes) -> bytes:
    """The smallest key above every key starting with ``prefix`` (etcd's ``range_end``)."""
    stripped = prefix.rstrip(b"\xff")
    if not stripped:
        return b"\0"  # every key
    return stripped[:-1] + bytes([stripped[-1] + 1])


class EtcdClient:
    """An etcd v3 client; open it with ``async with`` (or :meth:`connect` and :meth:`aclose`)."""

    def __init__(self, endpoints: list[str], *, request_timeout_s: float = 5.0) -> None:
        if not endpoints:
            raise ValueError("an etcd client needs at least one endpoint")
        for endpoint in endpoints:
            if not endpoint.startswith(("http://", "https://")):
                raise ValueError(f"etcd endpoints are URLs like http://127.0.0.1:2379, not {endpoint!r}")
        self._endpoints = [endpoint.rstrip("/") for endpoint in endpoints]
        self._timeout = request_timeout_s
        self._current = 0  # the endpoint that answered last
        self._http: httpx.AsyncClient | None = None

    @property
    def endpoints(self) -> list[str]:
        return list(self._endpoints)

    @property
    def current_endpoint(self) -> str:
        """The endpoint the next call goes to first: the last one that answered (for logs)."""
        return self._endpoints[self._current]

    async def connect(self) -> None:
        """Opens the HTTP client and checks that some endpoint answers (else :class:`EtcdUnavailable`)."""
        if self._http is None:
            self._http = httpx.AsyncClient(timeout=httpx.Timeout(self._timeout))
        try:
            await self._call("/v3/maintenance/status", {}, repeatable=True)
        except BaseException:
            await self.aclose()
            raise

    async def aclose(self) -> None:
        if self._http is not None:
            http, self._http = self._http, None
            await http.aclose()

    async def __aenter__(self) -> Self:
        await self.connect()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    # -- key-values --------------------------------------------------------------------------

    async def get(self, key: bytes) -> KeyValue | None:
        answer = await self._call("/v3/kv/range", {"key": _b64(key)}, repeatable=True)
        kvs = _kvs(answer)
        return kvs[0] if kvs else None

    async def get_prefix(self, prefix: bytes) -> tuple[list[KeyValue], int]:
        """Every key starting with ``prefix``, sorted by key, and the revision they were read at."""
        body = {"key": _b64(prefix), "range_end": _b64(prefix_end(prefix))}
        answer = await self._call("/v3/kv/range", body, repeatable=True)
        return _kvs(answer), _header_revision(answer)

    async def put(self, key: bytes, value: bytes, lease: int = 0) -> int:
        """Writes ``key`` and returns the revision of the write."""
        body = {"key": _b64(key), "value": _b64(value), "lease": str(lease)}
        return _header_revision(await self._call("/v3/kv/put", body, repeatable=False))

    async def delete(self, key: bytes) -> int:
        """Deletes ``key`` (absent is no error) and returns the store's revision after it."""
        return _header_revision(await self._call("/v3/kv/deleterange", {"key": _b64(key)}, repeatable=False))

    async def txn(
        self,
        compare: Sequence[Compare],
        success: Sequence[Put | Delete | Get],
        failure: Sequence[Put | Delete | Get] = (),
    ) -> TxnResult:
        """Runs ``success`` if every comparison holds, else ``failure``, atomically."""
        body = {
            "compare": [c.to_json() for c in compare],
            "success": [op.to_json() for op in success],
            "failure": [op.to_json() for op in failure],
        }
        answer = await self._call("/v3/kv/txn", body, repeatable=False)
        succeeded = _field(answer, "succeeded", bool, False)
        responses = _field(answer, "responses", list, [])
        gets = [
            _kvs(_field(r, "response_range", dict, {}))
            for r in responses
            if isinstance(r, dict) and "response_range" in r
        ]
        return TxnResult(succeeded, _header_revision(answer), gets)

    async def compact(self, revision: int) -> None:
        """Drops the history before ``revision`` (what etcd's auto-compaction does)."""
        await self._call("/v3/kv/compaction", {"revision": str(revision)}, repeatable=False)

    # -- leases ------------------------------------------------------------------------------

    async def lease_grant(self, ttl_s: int) -> int:
        """A new lease living ``ttl_s`` seconds unless kept alive; returns its id.

        Sent again after a lost answer: the worst case is an unused lease that expires by itself.
        """
        answer = await self._call("/v3/lease/grant", {"TTL": str(ttl_s)}, repeatable=True)
        return _int(answer, "ID")

    async def lease_keepalive(self, lease_id: int) -> int:
        """Renews the lease; returns its remaining TTL in seconds, 0 when the lease is gone."""
        answer = await self._call("/v3/lease/keepalive", {"ID": str(lease_id)}, repeatable=True)
        return _int(_field(answer, "result", dict, {}), "TTL")

    async def lease_revoke(self, lease_id: int) -> None:
        """Ends the lease and deletes its keys; a lease already gone is no error."""
        try:
            await self._call("/v3/lease/revoke", {"ID": str(lease_id)}, repeatable=True)
        except EtcdRequestFailed as exc:
            if exc.code != _GRPC_NOT_FOUND:
                raise

    # -- watches -----------------------------------------------------------------------------

    @asynccontextmanager
    async def watch_prefix(self, prefix: bytes, start_revision: int) -> AsyncIterator[WatchStream]:
        """Every change under ``prefix`` from ``start_revision`` on, in revision order, in batches.

        ``async with client.watch_prefix(p, rev) as events: async for batch in events: ...``.
        A broken stream is reopened (on the next endpoint) from the revision after the last one
        delivered, so no event is lost or repeated. Iteration raises :class:`WatchCompacted` when
        the history it needs was compacted, and :class:`EtcdUnavailable` when no endpoint answers.
        """
        send, receive = trio.open_memory_channel[list[WatchEvent] | EtcdError](0)
        raised: BaseException | None = None  # re-raised out of the nursery, which would wrap it in a group
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._watch, prefix, start_revision, send)
            try:
                yield WatchStream(receive)
            except BaseException as exc:
                raised = exc
            nursery.cancel_scope.cancel()
        if raised is not None:
            raise raised

    async def _watch(
        self, prefix: bytes, start_revision: int, send: trio.MemorySendChannel[list[WatchEvent] | EtcdError]
    ) -> None:
        async with send:
            try:
                await self._watch_streams(prefix, _WatchCursor(start_revision), send)
            except EtcdError as exc:
                await send.send(exc)

    async def _watch_streams(
        self, prefix: bytes, cursor: _WatchCursor, send: trio.MemorySendChannel[list[WatchEvent] | EtcdError]
    ) -> None:
        failures: list[str] = []
        while True:
            endpoint = self._endpoints[self._current]
            cursor.established = False
            try:
                await self._watch_stream(endpoint, prefix, cursor, send)
            except _StreamBroken as exc:
                if cursor.established:
                    failures.clear()
                failures.append(f"{endpoint}: {exc}")
                if len(failures) >= len(self._endpoints):
                    raise _unavailable("/v3/watch", failures) from None
                self._current = (self._current + 1) % len(self._endpoints)
                await trio.sleep(min(_WATCH_RETRY_FIRST_S * 2 ** (len(failures) - 1), _WATCH_RETRY_MAX_S))

    async def _watch_stream(
        self,
        endpoint: str,
        prefix: bytes,
        cursor: _WatchCursor,
        send: trio.MemorySendChannel[list[WatchEvent] | EtcdError],
    ) -> None:
        """One stream from ``endpoint``; raises :class:`_StreamBroken` whenever it ends."""
        body = {
            "create_request": {
                "key": _b64(prefix),
                "range_end": _b64(prefix_end(prefix)),
                "start_revision": str(cursor.next_revision),
            }
        }
        liveness = _Liveness(trio.current_time())
        http = self._require_http()
        ended: Exception | None = None  # raised once out of the nursery, which would wrap it in a group
        async with trio.open_nursery() as nursery:
            try:
                timeout = httpx.Timeout(self._timeout, read=None)  # idle streams are probed instead
                async with http.stream(
                    "POST", endpoint + "/v3/watch", json=body, timeout=timeout
                ) as response:
                    if response.status_code != 200:
                        await response.aread()
                        raise _StreamBroken(_describe_answer(response))
                    nursery.start_soon(self._watch_liveness, endpoint, prefix, liveness, nursery.cancel_scope)
                    async with aclosing(response.aiter_lines()) as lines:
                        async for line in lines:
                            liveness.last_seen = trio.current_time()
                            events = _watch_events(line, endpoint, cursor)
                            if events:
                                await send.send(events)
                                cursor.next_revision = events[-1].kv.mod_revision + 1
            except httpx.TransportError as exc:
                ended = _StreamBroken(_describe_transport(exc))
            except (EtcdError, _StreamBroken) as exc:
                ended = exc
            nursery.cancel_scope.cancel()
        if ended is not None:
            raise ended
        raise _StreamBroken(liveness.failure or "the stream ended")

    async def _watch_liveness(
        self, endpoint: str, prefix: bytes, liveness: _Liveness, stream_scope: trio.CancelScope
    ) -> None:
        """Probes a silent stream's endpoint; closes the stream when the endpoint fails the probe."""
        while True:
            await trio.sleep_until(liveness.last_seen + self._timeout)
            if trio.current_time() < liveness.last_seen + self._timeout:
                continue
            try:
                await self._post(
                    endpoint, "/v3/kv/range", {"key": _b64(prefix), "limit": "1", "keys_only": True}
                )
            except (httpx.TransportError, EtcdError, _Retryable) as exc:
                liveness.failure = f"no answer to a probe of the silent stream ({exc})"
                stream_scope.cancel()
                return
            liveness.last_seen = trio.current_time()

    # -- transport ---------------------------------------------------------------------------

    def _require_http(self) -> httpx.AsyncClient:
        if self._http is None:
            raise EtcdError(
                "the etcd client is not connected: use `async with EtcdClient(...)` or call connect()"
            )
        return self._http

    async def _call(self, path: str, body: dict[str, Any], *, repeatable: bool) -> dict[str, Any]:
        """Sends ``body`` to the endpoints in turn until one answers.

        ``repeatable`` calls (reads, lease renewals) are sent again after any failure; others
        only when the failure proves etcd did not take them.
        """
        failures: list[str] = []
        for step in range(len(self._endpoints)):
            index = (self._current + step) % len(self._endpoints)
            endpoint = self._endpoints[index]
            try:
                answer = await self._post(endpoint, path, body)
            except _NOT_SENT as exc:
                failures.append(f"{endpoint}: {_describe_transport(exc)}")
                continue
            except httpx.TransportError as exc:
                if not repeatable:
                    self._current = (index + 1) % len(self._endpoints)  # the next call starts elsewhere
                    raise EtcdOutcomeUnknown(
                        f"etcd at {endpoint} took {path} but its answer was lost ({_describe_transport(exc)}); "
                        "read the keys back to learn whether it was applied"
                    ) from None
                failures.append(f"{endpoint}: {_describe_transport(exc)}")
                continue
            except _Retryable as exc:
                if not repeatable and not exc.not_applied:
                    self._current = (index + 1) % len(self._endpoints)
                    raise EtcdOutcomeUnknown(
                        f"etcd at {endpoint} could not confirm {path} ({exc}); "
                        "read the keys back to learn whether it was applied"
                    ) from None
                failures.append(f"{endpoint}: {exc}")
                continue
            self._current = index
            return answer
        raise _unavailable(path, failures)

    async def _post(self, endpoint: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
        response = await self._require_http().post(endpoint + path, json=body)
        if response.status_code == 200:
            answer = _json_object(response.content, endpoint, path)
            error = answer.get("error")  # streaming endpoints (keepalive) answer errors inside a 200
            if isinstance(error, dict):
                raise _answer_error(endpoint, path, error.get("grpc_code"), error.get("message"))
            return answer
        answer = _json_object(response.content, endpoint, path) if response.content.startswith(b"{") else {}
        raise _answer_error(
            endpoint, path, answer.get("code"), answer.get("message") or _describe_answer(response)
        )


@dataclass(slots=True)
class WatchStream:
    """The batches of a watch: ``async for batch in stream`` (see :meth:`EtcdClient.watch_prefix`)."""

    _receive: trio.MemoryReceiveChannel[list[WatchEvent] | EtcdError]

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> list[WatchEvent]:
        try:
            item = await self._receive.receive()
        except trio.EndOfChannel:
            raise StopAsyncIteration from None
        if isinstance(item, EtcdError):
            raise item
        return item


@dataclass(slots=True)
class _WatchCursor:
    next_revision: int
    established: bool = False  # etcd confirmed the current stream's watch


@dataclass(slots=True)
class _Liveness:
    last_seen: float
    failure: str | None = field(default=None)


class _StreamBroken(Exception):
    """A watch stream ended; it is reopened on the next endpoint."""


class _Retryable(Exception):
    """The member could not serve the request: the next endpoint may do better."""

    def __init__(self, message: str, *, not_applied: bool) -> None:
        super().__init__(message)
        self.not_applied = not_applied


def _answer_error(endpoint: str, path: str, code: object, message: object) -> Exception:
    text = str(message)[:500]
    if code in _GRPC_MEMBER_TROUBLE or not isinstance(code, int):  # no code: not etcd's own answer
        return _Retryable(text, not_applied=text in _NOT_APPLIED_MESSAGES)
    return EtcdRequestFailed(f"etcd at {endpoint} refused {path}: {text} (gRPC code {code})", code)


def _unavailable(path: str, failures: Iterable[str]) -> EtcdUnavailable:
    return EtcdUnavailable(
        f"no etcd endpoint answered {path}: {'; '.join(failures)}. "
        "Check that etcd runs at these endpoints (--cluster etcd://host:port,...) and has a quorum."
    )


def _describe_transport(exc: httpx.TransportError) -> str:
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def _describe_answer(response: httpx.Response) -> str:
    return f"HTTP {response.status_code}: {response.content[:200]!r}"


def _json_object(content: bytes, endpoint: str, path: str) -> dict[str, Any]:
    try:
        answer = json.loads(content)
    except (ValueError, UnicodeDecodeError):
        raise EtcdError(
            f"etcd at {endpoint} answered {path} with something that is not JSON: {content[:200]!r}"
        ) from None
    if not isinstance(answer, dict):
        raise EtcdError(
            f"etcd at {endpoint} answered {path} with JSON that is not an object: {content[:200]!r}"
        )
    return answer


def _watch_events(line: str, endpoint: str, cursor: _WatchCursor) -> list[WatchEvent]:
    """The events of one line of a watch stream not delivered yet; checks for cancellation."""
    if not line.strip():
        return []
    message = _json_object(line.encode(), endpoint, "/v3/watch")
    if isinstance(message.get("error"), dict):
        raise _StreamBroken(str(message["error"].get("message"))[:500])
    result = _field(message, "result", dict, {})
    if result.get("created"):
        cursor.established = True
    if result.get("canceled"):
        compact_revision = _int(result, "compact_revision")
        if compact_revision:
            raise WatchCompacted(
                f"etcd compacted the history up to revision {compact_revision}; "
                f"a watch from revision {cursor.next_revision} cannot resume: read the current state again",
                compact_revision,
            )
        reason = str(result.get("cancel_reason", "no reason given"))[:500]
        raise EtcdError(f"etcd at {endpoint} canceled the watch: {reason}")
    events = []
    for event in _field(result, "events", list, []):
        if not isinstance(event, dict):
            raise EtcdError(f"etcd at {endpoint} sent a malformed watch event: {event!r:.200}")
        kv = _key_value(_field(event, "kv", dict, {}))
        if kv.mod_revision >= cursor.next_revision:  # a reopened stream never repeats an event
            events.append(WatchEvent("DELETE" if event.get("type") == "DELETE" else "PUT", kv))
    return events


# -- JSON fields (zero values are left out of etcd's answers) ----------------------------------


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _field(obj: dict[str, Any], name: str, kind: type[_T], default: _T) -> _T:
    value = obj.get(name, default)
    if not isinstance(value, kind):
        raise EtcdError(f"etcd sent {name}={value!r:.100}, expected a {kind.__name__}")
    return value


def _int(obj: dict[str, Any], name: str) -> int:
    value = obj.get(name, 0)
    if isinstance(value, int | str) and not isinstance(value, bool) and len(str(value)) <= 20:
        try:
            return int(value)
        except ValueError:
            pass
    raise EtcdError(f"etcd sent {name}={value!r:.100}, expected an int64")


def _bytes(obj: dict[str, Any], name: str) -> bytes:
    try:
        return base64.b64decode(_field(obj, name, str, ""), validate=True)
    except binascii.Error:
        raise EtcdError(f"etcd sent {name} that is not base64") from None


def _key_value(kv: dict[str, Any]) -> KeyValue:
    return KeyValue(
        key=_bytes(kv, "key"),
        value=_bytes(kv, "value"),
        create_revision=_int(kv, "create_revision"),
        mod_revision=_int(kv, "mod_revision"),
        version=_int(kv, "version"),
        lease=_int(kv, "lease"),
    )


def _kvs(answer: dict[str, Any]) -> list[KeyValue]:
    kvs = _field(answer, "kvs", list, [])
    if not all(isinstance(kv, dict) for kv in kvs):
        raise EtcdError(f"etcd sent malformed key-values: {kvs!r:.200}")
    return [_key_value(kv) for kv in kvs]


def _header_revision(answer: dict[str, Any]) -> int:
    return _int(_field(answer, "header", dict, {}), "revision")

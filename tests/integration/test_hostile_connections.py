"""Hostile connections against a real ``odradek serve``: descriptors, memory, slow senders.

Each test attacks through real sockets and then checks that the broker process recovers:
its open descriptors (``/proc/<pid>/fd``) return to their baseline, its resident memory does
not follow clients' length prefixes, and a well-behaved client is still served.
"""

from __future__ import annotations

import os
import resource
import signal
import socket
import struct
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from broker.client.admin_client import produce_body
from compat_tests.kit.broker_process import OdradekProcess
from compat_tests.kit.drivers.base import Message, ProducerSettings
from compat_tests.kit.drivers.confluent import ConfluentDriver
from compat_tests.kit.hostile import reset
from compat_tests.kit.raw_protocol import RawClient, fetch_body, make_batch, request_frame
from tests.integration.waiting import wait_until
from wire.api_keys import ApiKey

SETTLE_DEADLINE_S = 20.0
# Descriptors the broker may hold beyond its baseline once everything settled (a segment
# file opened by a fetch, the odd temporary file): far below the dozens a leak leaves.
FD_SLACK = 6


def open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def lowest_free_fd(pid: int) -> int:
    """An RLIMIT_NOFILE at this value leaves the process no descriptor to open: the kernel
    hands out the lowest free number, and only numbers below the limit.

    Read once the descriptors have settled (the same twice, 0.2 s apart): a socket of an
    earlier client the broker has yet to close would free a number below the limit later.
    """
    used: set[int] = set()
    deadline = time.monotonic() + SETTLE_DEADLINE_S
    while True:
        previous, used = used, {int(name) for name in os.listdir(f"/proc/{pid}/fd")}
        if used == previous or time.monotonic() > deadline:
            return next(number for number in range(len(used) + 1) if number not in used)
        time.sleep(0.2)


def rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS line")


def parked_fetch(topic: str) -> bytes:
    """A Fetch at the log end that waits (almost) forever for one byte."""
    return request_frame(ApiKey.FETCH, 12, fetch_body(topic, 0, 0, max_wait_ms=2**31 - 1, min_bytes=1))


def connect(broker: OdradekProcess) -> socket.socket:
    return socket.create_connection(("127.0.0.1", broker.port), timeout=SETTLE_DEADLINE_S)


def assert_served(broker: OdradekProcess) -> None:
    with RawClient(broker.bootstrap) as client:
        assert client.metadata([])["brokers"], "a normal client is no longer served"


def closed_by_broker(sock: socket.socket) -> bool:
    """True once the broker closed ``sock`` (EOF or reset), read within the socket's timeout."""
    try:
        while sock.recv(65536):
            pass
    except ConnectionResetError:
        pass
    return True


BROKER_SETTINGS = {"socket.request.read.timeout.ms": "1000"}
"""A request must arrive whole within 1 s, so that slow senders are cut off quickly."""


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OdradekProcess]:
    with OdradekProcess(tmp_path_factory.mktemp("hostile-connections"), BROKER_SETTINGS) as process:
        yield process


def settled_baseline(broker: OdradekProcess) -> int:
    assert_served(broker)
    time.sleep(0.2)
    return open_fds(broker.process.pid)


def parked_clients(
    broker: OdradekProcess, topic: str, count: int, pipelined: bytes = b""
) -> tuple[list[socket.socket], int]:
    """``count`` connections, each with a Fetch parked on the new empty ``topic`` (and
    ``pipelined`` bytes queued behind it), once the broker holds them all; returned with the
    broker's descriptor count from before they connected."""
    with RawClient(broker.bootstrap) as admin:
        admin.create_topic(topic)
    baseline = settled_baseline(broker)
    clients = [connect(broker) for _ in range(count)]
    for client in clients:
        client.sendall(parked_fetch(topic) + pipelined)
    pid = broker.process.pid
    wait_until(lambda: open_fds(pid) >= baseline + count, "the broker accepted the parked fetches")
    return clients, baseline


def test_parked_fetches_of_closed_clients_release_their_descriptors(broker: OdradekProcess) -> None:
    """Old code: each abandoned long poll kept its socket open until max_wait_ms ran out."""
    clients, baseline = parked_clients(broker, "parked", 100)
    pid = broker.process.pid
    for index, client in enumerate(clients):
        client.close() if index % 2 else reset(client)
    wait_until(lambda: open_fds(pid) <= baseline + FD_SLACK, "descriptors of closed clients were released")
    assert_served(broker)


def test_parked_fetch_is_cancelled_even_with_pipelined_bytes_pending(broker: OdradekProcess) -> None:
    """A second request queued behind the parked one hides EOF from a peek; POLLRDHUP does not."""
    clients, baseline = parked_clients(
        broker, "parked-pipelined", 20, pipelined=request_frame(ApiKey.API_VERSIONS, 3, {}, 2)
    )
    pid = broker.process.pid
    for client in clients:
        client.shutdown(socket.SHUT_WR)
    wait_until(lambda: open_fds(pid) <= baseline + FD_SLACK, "half-closed clients' requests were cancelled")
    for client in clients:
        assert closed_by_broker(client)
        client.close()


GARBAGE: list[bytes] = [
    b"\x00",  # a truncated size prefix
    struct.pack(">i", -1),  # a negative size
    struct.pack(">i", 2**31 - 1),  # beyond socket.request.max.bytes
    struct.pack(">i", 1000) + b"\x00\x01",  # a truncated frame
    struct.pack(">i", 4) + b"\xff\xff\x00\x00",  # a truncated header
    struct.pack(">i", 12) + struct.pack(">hhi", 999, 0, 1) + b"\x00\x00",  # unknown API key
    os.urandom(300),
    request_frame(ApiKey.METADATA, 12, {"topics": None, "allow_auto_topic_creation": False})[:-3],
]


def test_answers_queued_behind_one_waiting_for_its_sync_give_back_their_descriptors(
    broker: OdradekProcess,
) -> None:
    """A Fetch answered behind a Produce that waits for its sync (flush.messages=1) is queued
    with the duplicated descriptors of its file regions; clients that reset meanwhile must not
    leave those open (old code: one descriptor per such connection, for good)."""
    with RawClient(broker.bootstrap) as client:
        client.create_topic("synced", configs={"flush.messages": "1"})
        client.create_topic("large")
        client.produce("synced", 0, make_batch([b"first"]))  # starts the sync process
        for _ in range(3):  # batches too large to be read into a response: file regions
            client.produce("large", 0, make_batch([os.urandom(100_000)]))
    pid = broker.process.pid
    (sync_process,) = (int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split())
    baseline = settled_baseline(broker)
    produce = request_frame(ApiKey.PRODUCE, 9, produce_body("synced", {0: make_batch([b"v"])}), 1)
    fetch = request_frame(ApiKey.FETCH, 12, fetch_body("large", 0, 0), 2)
    os.kill(sync_process, signal.SIGSTOP)  # no sync completes: every Produce answer waits
    try:
        clients = [connect(broker) for _ in range(10)]
        for client in clients:
            client.sendall(produce + fetch)
        # each connection's socket, and its queued Fetch answer's region
        wait_until(lambda: open_fds(pid) >= baseline + 20, "the Fetch answers queued")
        for client in clients:
            reset(client)
        wait_until(lambda: open_fds(pid) <= baseline + FD_SLACK, "descriptors returned to their baseline")
    finally:
        os.kill(sync_process, signal.SIGCONT)
    assert_served(broker)


def test_descriptors_return_to_baseline_after_garbage(broker: OdradekProcess) -> None:
    with RawClient(broker.bootstrap) as admin:
        admin.create_topic("garbage")
    baseline = settled_baseline(broker)
    for round_ in range(5):
        clients = [connect(broker) for _ in GARBAGE] + [connect(broker) for _ in range(5)]
        for client, payload in zip(clients, GARBAGE + [parked_fetch("garbage")] * 5, strict=True):
            client.sendall(payload)
        for index, client in enumerate(clients):
            client.close() if (index + round_) % 2 else reset(client)
    pid = broker.process.pid
    wait_until(lambda: open_fds(pid) <= baseline + FD_SLACK, "descriptors returned to their baseline")
    assert_served(broker)


def test_slow_sender_is_closed_after_the_read_timeout(broker: OdradekProcess) -> None:
    """Old code: a frame trickling in was only bounded by connections.max.idle.ms (10 min)."""
    with connect(broker) as slow:
        slow.sendall(struct.pack(">i", 1000) + b"\x00" * 10)
        slow.settimeout(SETTLE_DEADLINE_S)
        assert closed_by_broker(slow)
    assert "socket.request.read.timeout.ms" in broker.log_text()


IDLE_LIMIT_MS = 1500


@pytest.fixture(scope="module")
def idle_limited(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OdradekProcess]:
    """A broker that closes connections idle (or stuck sending) for 1.5 s."""
    settings = {"connections.max.idle.ms": str(IDLE_LIMIT_MS)}
    with OdradekProcess(tmp_path_factory.mktemp("idle-limited"), settings) as process:
        yield process


def test_idle_connection_is_closed_and_a_busy_one_is_not(idle_limited: OdradekProcess) -> None:
    """connections.max.idle.ms closes a connection that sends nothing, as Kafka does; one
    sending a request every 0.3 s outlives that limit several times over."""
    idle, busy = connect(idle_limited), connect(idle_limited)
    idle.sendall(request_frame(ApiKey.API_VERSIONS, 3, {}))
    receive_response(idle)
    started = time.monotonic()
    correlation_id = 0
    while time.monotonic() - started < 4 * IDLE_LIMIT_MS / 1000:
        correlation_id += 1
        busy.sendall(request_frame(ApiKey.METADATA, 12, {"topics": []}, correlation_id))
        (answered,) = struct.unpack_from(">i", receive_response(busy))
        assert answered == correlation_id
        time.sleep(0.3)
    assert closed_by_broker(idle)
    busy.close()
    assert "closing idle connection" in idle_limited.log_text()


def test_a_client_that_stops_reading_its_responses_is_closed(idle_limited: OdradekProcess) -> None:
    """A client that asks for megabytes and never reads them holds the broker's send (and the
    file descriptors of its response) for connections.max.idle.ms at most."""
    topic = "unread"
    with RawClient(idle_limited.bootstrap) as client:
        client.create_topic(topic)
        for _ in range(8):
            client.produce(topic, 0, make_batch([os.urandom(100_000) for _ in range(10)]))
    baseline = settled_baseline(idle_limited)
    stuck = socket.socket()
    stuck.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # before connecting: a small window
    stuck.connect(("127.0.0.1", idle_limited.port))
    # 32 MB asked for in all: more than the kernel's socket buffers can take from the broker
    stuck.sendall(request_frame(ApiKey.FETCH, 12, fetch_body(topic, 0, 0)) * 32)
    pid = idle_limited.process.pid
    wait_until(lambda: "stopped reading its responses" in idle_limited.log_text(), "the stuck client closed")
    wait_until(lambda: open_fds(pid) <= baseline + FD_SLACK, "its descriptors released")
    stuck.close()
    assert_served(idle_limited)


def receive_response(sock: socket.socket) -> bytes:
    """One response frame's bytes after its size."""
    (size,) = struct.unpack(">i", receive_exactly(sock, 4))
    return receive_exactly(sock, size)


def test_length_prefixes_do_not_reserve_memory(broker: OdradekProcess) -> None:
    """Old code: twenty 100 MB prefixes followed by a trickle held about 2 GB."""
    assert_served(broker)
    pid = broker.process.pid
    before = rss_bytes(pid)
    clients = [connect(broker) for _ in range(20)]
    for client in clients:
        client.sendall(struct.pack(">i", 100_000_000) + b"\x00" * 1000)
    time.sleep(0.5)
    grown = rss_bytes(pid) - before
    assert_served(broker)  # the memory budget left room for small requests
    for client in clients:
        client.close()
    assert grown < 64 * 1024 * 1024, f"broker RSS grew by {grown} bytes"


def test_frame_larger_than_the_whole_budget_is_refused(tmp_path: Path) -> None:
    process = OdradekProcess(tmp_path / "broker", {"queued.max.request.bytes": str(1 << 20)}).start()
    try:
        with connect(process) as greedy:
            greedy.sendall(struct.pack(">i", 2 << 20) + b"\x00" * 100)
            assert closed_by_broker(greedy)
        assert "queued.max.request.bytes" in process.log_text()
        assert_served(process)
    finally:
        process.stop()


def test_descriptor_exhaustion_does_not_stop_the_broker(tmp_path: Path) -> None:
    """Old code: accept() raising EMFILE tore the listener's nursery down and the process exited."""
    process = OdradekProcess(tmp_path / "broker", {"max.connections": "100000"}).start()
    try:
        pid = process.process.pid
        assert_served(process)
        limit = open_fds(pid) + 20
        resource.prlimit(pid, resource.RLIMIT_NOFILE, (limit, limit))
        flood = [connect(process) for _ in range(60)]  # beyond the limit: the rest waits in the backlog
        wait_until(
            lambda: process.process.poll() is not None or "cannot accept connections" in process.log_text(),
            "accept hit EMFILE",
        )
        assert process.process.poll() is None, f"the broker exited: {process.log_text()[-2000:]}"
        for client in flood:
            client.close()
        assert_served(process)
        assert process.process.poll() is None
        assert "raise ulimit -n or lower max.connections" in process.log_text()
    finally:
        process.stop()


IDLE_CONNECTIONS = 10_000


def open_idle_connections(process: OdradekProcess, count: int) -> list[socket.socket]:
    """``count`` connections that each completed an ApiVersions round trip, then went quiet."""
    clients = []
    for index in range(count):
        client = connect(process)
        client.sendall(request_frame(ApiKey.API_VERSIONS, 3, {}, index))
        clients.append(client)
    for index, client in enumerate(clients):
        (correlation_id,) = struct.unpack_from(">i", receive_response(client))
        assert correlation_id == index
    return clients


def receive_exactly(sock: socket.socket, size: int) -> bytes:
    data = bytearray()
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        assert chunk, "the broker closed an idle connection"
        data += chunk
    return bytes(data)


def produce_and_time_acks(bootstrap: str, topic: str, count: int) -> list[float]:
    """Produce ``count`` records one at a time (acks=all); returns each one's ack latency in
    seconds. A send flushes, which sends at once whatever the producer's linger."""
    latencies: list[float] = []
    with ConfluentDriver(bootstrap).producer(ProducerSettings(acks="all")) as producer:
        for index in range(count):
            sent = time.perf_counter()
            producer.send(topic, [Message(b"v%d" % index)])  # a failed delivery raises
            latencies.append(time.perf_counter() - sent)
    return latencies


@pytest.mark.slow
def test_ten_thousand_idle_connections_stay_cheap(tmp_path: Path) -> None:
    """Each idle connection must cost well under 32 KB while normal clients keep being acked."""
    process = OdradekProcess(
        tmp_path / "broker", {"max.connections": str(IDLE_CONNECTIONS + 1000), "log.open.files.max": "1000"}
    ).start()
    try:
        pid = process.process.pid
        with RawClient(process.bootstrap) as admin:
            admin.create_topic("acks")
        produce_and_time_acks(process.bootstrap, "acks", 50)  # warm up the produce path
        open_idle_connections(process, 100)  # and the connection path
        before = rss_bytes(pid)
        clients = open_idle_connections(process, IDLE_CONNECTIONS)
        per_connection = (rss_bytes(pid) - before) / IDLE_CONNECTIONS
        latencies = sorted(produce_and_time_acks(process.bootstrap, "acks", 200))
        print(
            f"\n{IDLE_CONNECTIONS} idle connections: {per_connection / 1024:.1f} KiB each; acks meanwhile: "
            f"median {latencies[len(latencies) // 2] * 1000:.2f} ms, "
            f"p99 {latencies[int(len(latencies) * 0.99)] * 1000:.2f} ms"
        )
        assert per_connection < 32 * 1024
        for client in clients:
            client.close()
        assert_served(process)
    finally:
        process.stop()


def error_lines(process: OdradekProcess) -> list[str]:
    return [line for line in process.log_text().splitlines() if " ERROR " in line]


def test_handler_failure_is_logged_once_at_error_with_its_request(tmp_path: Path) -> None:
    """Old code: the line named the API and peer only; the client id and request were missing."""
    process = OdradekProcess(tmp_path / "broker").start()
    try:
        pid = process.process.pid
        with RawClient(process.bootstrap) as client:
            assert client.metadata([])["brokers"]
            exhausted = lowest_free_fd(pid)
            resource.prlimit(pid, resource.RLIMIT_NOFILE, (exhausted, exhausted))
            with pytest.raises(ConnectionError):
                client.create_topic("no-descriptor-left")
        wait_until(lambda: bool(error_lines(process)), "the failure was logged at ERROR")
        (line,) = error_lines(process)
        assert "CreateTopics v" in line and "correlation id 2" in line and "client id 'raw-test'" in line
        assert "EMFILE" in line
    finally:
        process.stop()


def test_vanishing_clients_are_not_logged_as_errors(broker: OdradekProcess) -> None:
    for _ in range(10):
        client = connect(broker)
        client.sendall(request_frame(ApiKey.API_VERSIONS, 3, {}))
        reset(client)
        client = connect(broker)
        client.sendall(parked_fetch("quiet")[:20])
        reset(client)
    assert_served(broker)
    assert error_lines(broker) == []


def test_a_request_parked_past_the_idle_limit_is_closed(idle_limited: OdradekProcess) -> None:
    """Kafka's idle expiry counts from a connection's last activity, whatever the connection
    waits for: a Fetch parked with max_wait_ms 2^31-1 by a client that then says nothing is
    reaped after connections.max.idle.ms, not after 24 days."""
    with RawClient(idle_limited.bootstrap) as admin:
        admin.create_topic("parked-idle")
    parked = connect(idle_limited)
    parked.sendall(parked_fetch("parked-idle"))
    assert closed_by_broker(parked)  # within the socket's timeout (20 s), or recv raises

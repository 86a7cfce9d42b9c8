"""Three, or hundreds of, idle or slow connections leave a healthy client as fast as it was alone.

The compatibility scenario (``compat_tests/test_hostile_connections.py``) holds Odradek and
Apache Kafka to this with three attackers; Kafka's heap does not survive hundreds of 100 MB
prefixes (it allocates each in full), so these counts are Odradek's own.  The broker runs with
its defaults (a 256 MiB request budget, 30 s read timeout), and the healthy librdkafka client
was connected before the attack, as in issue 25.
"""

from __future__ import annotations

import socket
import struct
from collections.abc import Iterator
from pathlib import Path

import pytest

from compat_tests.kit.brokers import RunningBroker, start_odradek
from compat_tests.kit.drivers.base import Message, ProducerSettings
from compat_tests.kit.drivers.confluent import ConfluentDriver
from compat_tests.kit.hostile import ATTACKS, HealthyClient, HostileConnections, Target, harm, summary
from compat_tests.kit.raw_protocol import request_frame
from compat_tests.kit.secured import make_tls_files
from tests.integration.test_hostile_connections import rss_bytes
from tests.integration.waiting import wait_until
from wire.api_keys import ApiKey

ROUNDS = 10
DATA_RECORDS = 64
DATA_RECORD_BYTES = 128 * 1024


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningBroker]:
    workdir = tmp_path_factory.mktemp("fair-admission")
    files = make_tls_files(workdir / "tls")
    tls = {"ssl.keystore.type": "PEM", "ssl.keystore.location": str(files.server)}
    running = start_odradek(workdir / "broker", tls, extra_listeners={"SSL": "SSL"})
    yield running
    running.stop()


@pytest.fixture(scope="module")
def healthy_and_target(broker: RunningBroker) -> Iterator[tuple[HealthyClient, Target]]:
    admin = ConfluentDriver(broker.bootstrap)
    admin.create_topic("data", 1)
    admin.create_topic("healthy", 1)
    records = [Message(bytes(DATA_RECORD_BYTES), partition=0) for _ in range(DATA_RECORDS)]
    admin.produce("data", records, ProducerSettings())
    healthy = HealthyClient(broker.bootstrap, "healthy")
    yield healthy, Target(broker.bootstrap, "data", broker.addresses["SSL"])
    healthy.close()


@pytest.mark.parametrize("attack", ATTACKS)
@pytest.mark.parametrize("attackers", [3, 300])
def test_hostile_connections_do_not_slow_a_healthy_client(
    broker: RunningBroker, healthy_and_target: tuple[HealthyClient, Target], attack: str, attackers: int
) -> None:
    healthy, target = healthy_and_target
    unloaded = healthy.measure(ROUNDS)
    assert broker.process is not None
    pid = broker.process.pid
    before = rss_bytes(pid)
    with HostileConnections(attack, attackers, target):
        loaded = healthy.measure(ROUNDS)
        grown = rss_bytes(pid) - before
    report = (
        f"{summary('alone', unloaded)}\n{summary(f'beside {attackers} x {attack}', loaded)}\n"
        f"broker RSS grew by {grown / 2**20:.1f} MiB"
    )
    print(report)
    assert harm(unloaded, loaded) == [], report
    if attack == "prefix":  # hundreds of 100 MB promises: the broker must not follow promises
        assert grown < 64 * 2**20, report


def api_versions_from(source_ip: str, bootstrap: str) -> int:
    """A raw ApiVersions v0 from ``source_ip`` (any 127.x address reaches a loopback broker);
    its correlation id back."""
    host, port = bootstrap.rsplit(":", 1)
    with socket.socket() as sock:
        sock.settimeout(20)
        sock.bind((source_ip, 0))
        sock.connect((host, int(port)))
        sock.sendall(request_frame(ApiKey.API_VERSIONS, 0, {}, 7))
        (size,) = struct.unpack(">i", sock.recv(4, socket.MSG_WAITALL))
        (correlation_id,) = struct.unpack_from(">i", sock.recv(size, socket.MSG_WAITALL))
        return correlation_id


def closed_count(sockets: list[socket.socket]) -> int:
    """How many of ``sockets`` the broker has closed (end of stream or reset)."""
    closed = 0
    for sock in sockets:
        sock.setblocking(False)
        try:
            closed += sock.recv(1, socket.MSG_PEEK) == b""
        except BlockingIOError:
            pass
        except ConnectionResetError:
            closed += 1
    return closed


def test_one_address_at_max_connections_cannot_lock_out_another(tmp_path: Path) -> None:
    """Thirty idle connections from 127.0.0.1 fill max.connections; a client from 127.0.0.2
    is still served, in the place of the flooder's least recently active connection."""
    running = start_odradek(tmp_path / "broker", {"max.connections": "30"})
    try:
        with HostileConnections("prefix", 30, Target(running.bootstrap), frame_bytes=100) as flood:
            assert api_versions_from("127.0.0.2", running.bootstrap) == 7
            wait_until(lambda: closed_count(flood.sockets) == 1, "one flood connection was closed")
        assert "to admit one from 127.0.0.2" in running.log_tail(100)
    finally:
        running.stop()

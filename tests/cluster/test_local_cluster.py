"""``odradek local-cluster`` starts brokers and an etcd in one command, restarts them one at a
time on request (``--rolling-restart``) and stops them on Ctrl-C."""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from compat_tests.kit.brokers import free_ports, odradek_command
from compat_tests.kit.drivers.confluent import ConfluentClient
from compat_tests.kit.fixtures import require_etcd


@pytest.mark.timeout(300)
def test_local_cluster_serves_two_brokers_restarts_them_in_turn_then_stops(tmp_path: Path) -> None:
    require_etcd()
    broker_port, etcd_port = free_ports(1)[0], free_ports(1)[0]
    command = [odradek_command(), "local-cluster", "--brokers", "2", "--data-dir", str(tmp_path)]
    command += ["--port", str(broker_port), "--etcd-port", str(etcd_port)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        table = []
        for line in process.stdout or ():  # the table, printed once every broker listens
            table.append(line)
            if line.startswith("Ctrl-C stops the cluster"):
                break
        admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{broker_port}"})
        deadline = time.monotonic() + 60
        brokers: set[int] = set()
        while time.monotonic() < deadline and brokers != {1, 2}:  # both registered in etcd
            brokers = set(admin.list_topics(timeout=5).brokers)
            time.sleep(0.5)
        assert brokers == {1, 2}
        _restarts_in_turn_keeping_the_records(tmp_path, process, f"127.0.0.1:{broker_port}")
    finally:
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=60)
    out = "".join(table) + out
    assert process.returncode == 0, err
    assert f"bootstrap.servers=127.0.0.1:{broker_port},127.0.0.1:{broker_port + 1}" in out
    assert "node  address" in out
    assert (tmp_path / "broker-1.log").exists() and (tmp_path / "etcd.log").exists()


def _restarts_in_turn_keeping_the_records(base: Path, process: subprocess.Popen[str], bootstrap: str) -> None:
    """A rolling restart of the running local cluster: requested by a second command, done by
    the first broker by broker (a controlled shutdown each), with the records kept."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic("rolled", 2, 2)])["rolled"].result(timeout=30)
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True})
    for i in range(20):
        producer.produce("rolled", str(i).encode(), partition=i % 2)
    assert producer.flush(30) == 0
    requested = subprocess.run(
        [odradek_command(), "local-cluster", "--data-dir", str(base), "--rolling-restart"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert requested.returncode == 0, requested.stderr
    progress = []
    for line in process.stderr or ():
        progress.append(line)
        if line.startswith("rolling restart done"):
            break
    assert sum("back and in sync" in line for line in progress) == 2, progress
    logs = [(base / f"broker-{n}.log").read_text() for n in (1, 2)]
    assert all("controlled shutdown: leaderships moved" in log for log in logs)
    client = ConfluentClient(bootstrap)
    ends = client.list_offsets("rolled", range(2), "latest")
    assert sum(ends.values()) == 20

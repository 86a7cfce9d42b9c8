"""``odradek local-cluster`` starts brokers and an etcd in one command and stops them on Ctrl-C."""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient

from compat_tests.kit.brokers import free_ports, odradek_command
from compat_tests.kit.fixtures import require_etcd


@pytest.mark.timeout(180)
def test_local_cluster_serves_two_brokers_then_stops(tmp_path: Path) -> None:
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
    finally:
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=60)
    out = "".join(table) + out
    assert process.returncode == 0, err
    assert f"bootstrap.servers=127.0.0.1:{broker_port},127.0.0.1:{broker_port + 1}" in out
    assert "node  address" in out
    assert (tmp_path / "broker-1.log").exists() and (tmp_path / "etcd.log").exists()

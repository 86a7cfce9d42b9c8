"""The ``odradek`` command line against a running broker: readable tables, helpful errors."""

from __future__ import annotations

import json
import socket
import struct
import threading

from compat_tests.kit.broker_process import OdradekProcess
from compat_tests.kit.brokers import free_ports
from compat_tests.kit.brokers import odradek_cli as odradek
from compat_tests.kit.drivers.base import ConsumerSettings, Message, ProducerSettings
from compat_tests.kit.drivers.confluent import ConfluentDriver


def test_topics_create_list_describe_delete(odradek_broker: OdradekProcess) -> None:
    bootstrap = ["--bootstrap", odradek_broker.bootstrap]
    created = odradek(
        "topics", "create", "clicks", "--partitions", "3", "--config", "retention.ms=3600000", *bootstrap
    )
    assert created.returncode == 0, created.stderr
    assert "created topic clicks with 3 partition(s)" in created.stdout
    clicks = [Message(b"x", partition=i % 3) for i in range(30)]
    ConfluentDriver(odradek_broker.bootstrap).produce("clicks", clicks, ProducerSettings())

    listed = odradek("topics", "list", *bootstrap)
    assert listed.returncode == 0, listed.stderr
    header, rule, row = listed.stdout.splitlines()[:3]
    assert header.split() == ["TOPIC", "PARTITIONS", "RECORDS", "INTERNAL"]
    assert set(rule) <= {"-", " "}
    assert row.split() == ["clicks", "3", "30"]

    described = odradek("topics", "describe", "clicks", *bootstrap)
    assert described.returncode == 0, described.stderr
    lines = described.stdout.splitlines()
    assert lines[0].split() == ["PARTITION", "EARLIEST", "LATEST", "RECORDS"]
    assert [line.split() for line in lines[2:5]] == [
        ["0", "0", "10", "10"],
        ["1", "0", "10", "10"],
        ["2", "0", "10", "10"],
    ]
    assert "retention.ms=3600000" in described.stdout

    again = odradek("topics", "create", "clicks", *bootstrap)
    assert again.returncode == 1
    assert "TOPIC_ALREADY_EXISTS" in again.stderr

    as_json = json.loads(odradek("topics", "describe", "clicks", "--output", "json", *bootstrap).stdout)
    assert as_json["partitions"][0] == {"partition": 0, "earliest": 0, "latest": 10, "records": 10}
    assert as_json["config_overrides"] == {"retention.ms": "3600000"}
    listed_json = json.loads(odradek("topics", "list", "--output", "json", *bootstrap).stdout)
    assert {"topic": "clicks", "partitions": 3, "records": 30, "internal": False} in listed_json

    deleted = odradek("topics", "delete", "clicks", *bootstrap)
    assert deleted.returncode == 0, deleted.stderr
    missing = odradek("topics", "describe", "clicks", *bootstrap)
    assert missing.returncode == 1
    assert "does not exist" in missing.stderr


def test_groups_show_committed_offsets_and_lag(odradek_broker: OdradekProcess) -> None:
    driver = ConfluentDriver(odradek_broker.bootstrap)
    driver.produce("orders", [Message(b"%d" % i, partition=0) for i in range(10)], ProducerSettings())
    with driver.consumer(ConsumerSettings(group="billing")) as consumer:
        consumer.commit({("orders", 0): 4})

    bootstrap = ["--bootstrap", odradek_broker.bootstrap]
    listed = odradek("groups", "list", *bootstrap)
    assert listed.returncode == 0, listed.stderr
    assert any(line.split()[:1] == ["billing"] for line in listed.stdout.splitlines()[2:])
    described = odradek("groups", "describe", "billing", *bootstrap)
    assert described.returncode == 0, described.stderr
    rows = [line.split() for line in described.stdout.splitlines()]
    assert ["TOPIC", "PARTITION", "COMMITTED", "LATEST", "LAG"] in rows
    assert ["orders", "0", "4", "10", "6"] in rows
    as_json = json.loads(odradek("groups", "describe", "billing", "--output", "json", *bootstrap).stdout)
    assert as_json["state"] == "Empty"
    assert as_json["offsets"] == [{"topic": "orders", "partition": 0, "committed": 4, "latest": 10, "lag": 6}]
    groups = json.loads(odradek("groups", "list", "--output", "json", *bootstrap).stdout)
    assert {
        "group": "billing",
        "type": "classic",
        "state": "Empty",
        "protocol_type": "",
    } in groups  # commits only


def test_unreachable_broker_says_what_to_do() -> None:
    (port,) = free_ports(1)
    result = odradek("topics", "list", "--bootstrap", f"127.0.0.1:{port}")
    assert result.returncode == 1
    assert "is `odradek serve` running there?" in result.stderr
    assert "Traceback" not in result.stderr


def test_an_oversized_answer_is_refused_not_allocated() -> None:
    """A peer announcing a 2 GiB response gets an error, not an attempt to read (or hold) it."""
    with socket.create_server(("127.0.0.1", 0)) as server:

        def answer_hugely() -> None:
            connection, _ = server.accept()
            with connection:
                connection.recv(65536)
                connection.sendall(struct.pack(">i", 2**31 - 1) + b"\x00" * 64)
                connection.recv(1)  # hold the connection until the client gives up

        peer = threading.Thread(target=answer_hugely, daemon=True)
        peer.start()
        result = odradek("topics", "list", "--bootstrap", f"127.0.0.1:{server.getsockname()[1]}")
        peer.join(timeout=30)
    assert result.returncode == 1
    assert "announced a 2147483647-byte response; refusing it" in result.stderr

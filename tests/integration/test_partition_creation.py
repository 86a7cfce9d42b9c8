"""Creating and opening partitions through a real broker process: other clients keep being
served during a big creation, a kill -9 in the middle leaves registry and disk in agreement, and
a partition that cannot be opened at start-up is served offline instead of keeping the broker
down.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from broker.client.admin_client import PRODUCE_VERSION, KafkaConnection, produce_body
from compat_tests.kit.broker_process import OdradekProcess
from compat_tests.kit.raw_protocol import make_batch
from tests.integration.fast_disk import fast_scratch_dir
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode

REQUEST_TIMEOUT_S = 120.0
BIG = 10_000  # the most partitions one request may add (max.partitions.per.request)

pytestmark = pytest.mark.timeout(300)


@pytest.fixture
def workdir(tmp_path: Path) -> Iterator[Path]:
    with fast_scratch_dir(tmp_path) as directory:
        yield directory


def until_killed(request: Callable[..., object], *args: object) -> Callable[[], None]:
    """A thread target sending ``request``; the broker being killed under it is expected."""

    def run() -> None:
        with contextlib.suppress(OSError):  # ConnectionError included
            request(*args)

    return run


def api_versions(client: KafkaConnection) -> None:
    assert (
        client.request(ApiKey.API_VERSIONS, 3, {"client_software_name": "t", "client_software_version": "1"})[
            "error_code"
        ]
        == 0
    )


def create_partitions(client: KafkaConnection, topic: str, count: int) -> dict[str, Any]:
    response = client.request(
        ApiKey.CREATE_PARTITIONS,
        3,
        {
            "topics": [{"name": topic, "count": count, "assignments": None}],
            "timeout_ms": 60_000,
            "validate_only": False,
        },
    )
    return response["results"][0]


def produce_to_all(client: KafkaConnection, topic: str, partitions: int) -> dict[int, int]:
    """One Produce request with a record for every partition; error code per partition."""
    batch = make_batch([b"v"])
    body = produce_body(topic, dict.fromkeys(range(partitions), batch))
    response = client.request(ApiKey.PRODUCE, PRODUCE_VERSION, body)
    return {p["index"]: p["error_code"] for t in response["responses"] for p in t["partition_responses"]}


def partition_dirs(data_dir: Path, topic: str) -> set[int]:
    prefix = f"{topic}-"
    return {
        int(entry.name[len(prefix) :])
        for entry in data_dir.iterdir()
        if entry.name.startswith(prefix) and entry.name[len(prefix) :].isdigit()
    }


def answered_during(bootstrap: str, admin_request: Callable[[KafkaConnection], None]) -> int:
    """How many ApiVersions another connection gets answered while ``admin_request`` runs.

    A handler blocking the event loop would have them all answered after it, at most one before.
    """
    done = threading.Event()

    def run() -> None:
        try:
            with KafkaConnection(bootstrap, timeout=REQUEST_TIMEOUT_S) as admin:
                admin_request(admin)
        finally:
            done.set()

    answered, longest_wait = 0, 0.0
    with KafkaConnection(bootstrap, timeout=REQUEST_TIMEOUT_S) as other:
        api_versions(other)  # connected and served before the admin request starts
        admin = threading.Thread(target=run)
        admin.start()
        while not done.is_set():
            started = time.monotonic()
            api_versions(other)
            longest_wait = max(longest_wait, time.monotonic() - started)
            answered += not done.is_set()
        admin.join()
    print(f"answered {answered} requests meanwhile; longest wait {longest_wait:.3f} s")
    return answered


@pytest.mark.slow
def test_other_clients_are_served_while_ten_thousand_partitions_come_and_go(workdir: Path) -> None:
    broker = OdradekProcess(workdir).start()
    try:
        with KafkaConnection(broker.bootstrap, timeout=REQUEST_TIMEOUT_S) as admin:
            assert admin.create_topic("grows", 1)["error_code"] == 0

        def grow(admin: KafkaConnection) -> None:
            assert create_partitions(admin, "grows", 1 + BIG)["error_code"] == 0

        assert answered_during(broker.bootstrap, grow) >= 10
        with KafkaConnection(broker.bootstrap, timeout=REQUEST_TIMEOUT_S) as client:
            assert len(client.metadata(["grows"])["topics"][0]["partitions"]) == 1 + BIG
            assert set(produce_to_all(client, "grows", 1 + BIG).values()) == {ErrorCode.NONE}

        def delete(admin: KafkaConnection) -> None:
            assert admin.delete_topic("grows")["error_code"] == 0

        assert answered_during(broker.bootstrap, delete) >= 10
        assert not partition_dirs(broker.data_dir, "grows")
    finally:
        broker.stop()


@pytest.mark.slow
def test_a_creation_whose_client_hangs_up_is_still_completed(workdir: Path) -> None:
    """The broker cancels requests of clients that closed their connection; a creation the
    registry already lists must finish anyway, or partitions would be listed but not served."""
    broker = OdradekProcess(workdir).start()
    try:
        with KafkaConnection(broker.bootstrap, timeout=REQUEST_TIMEOUT_S) as admin:
            assert admin.create_topic("abandoned", 1)["error_code"] == 0
        impatient = KafkaConnection(broker.bootstrap, timeout=0.5)
        with contextlib.suppress(OSError):  # the socket timeout: the client gives up and leaves
            create_partitions(impatient, "abandoned", 1 + BIG)
        impatient.close()
        deadline = time.monotonic() + REQUEST_TIMEOUT_S
        with KafkaConnection(broker.bootstrap, timeout=REQUEST_TIMEOUT_S) as client:
            while True:
                answers = produce_to_all(client, "abandoned", 1 + BIG)
                if set(answers.values()) == {ErrorCode.NONE} or time.monotonic() > deadline:
                    break
                time.sleep(0.5)
            missing = sorted(p for p, code in answers.items() if code != ErrorCode.NONE)
            assert not missing, f"{len(missing)} listed partitions are not served, e.g. {missing[:5]}"
    finally:
        broker.stop()


@pytest.mark.slow
def test_a_topic_recreated_while_its_deletion_runs_keeps_its_new_partitions(tmp_path: Path) -> None:
    """DeleteTopics removes directories in a worker thread after the registry forgot the topic;
    a CreateTopics of the same name meanwhile must wait for it, not race it for the directories.
    On the real disk (not tmpfs), where a deletion takes long enough to be caught in the act."""
    broker = OdradekProcess(tmp_path).start()
    try:
        with KafkaConnection(broker.bootstrap, timeout=REQUEST_TIMEOUT_S) as admin:
            assert admin.create_topic("again", 1_000)["error_code"] == 0
            assert set(produce_to_all(admin, "again", 1_000).values()) == {ErrorCode.NONE}
        deleting = threading.Thread(target=until_killed(delete_topic_quietly, broker.bootstrap, "again"))
        deleting.start()
        with KafkaConnection(broker.bootstrap, timeout=REQUEST_TIMEOUT_S) as admin:
            deadline = time.monotonic() + REQUEST_TIMEOUT_S
            while admin.create_topic("again", 1_000)["error_code"] != ErrorCode.NONE:
                assert time.monotonic() < deadline, "the name never became free again"
            deleting.join()
            assert set(produce_to_all(admin, "again", 1_000).values()) == {ErrorCode.NONE}
            offsets = admin.list_offsets("again", list(range(1_000)), -1)
            assert set(offsets.values()) == {1}, "every partition is new and holds only its new record"
        assert partition_dirs(broker.data_dir, "again") == set(range(1_000))
        errors = [line for line in broker.log_text().splitlines() if " ERROR " in line]
        assert not errors, errors
    finally:
        broker.stop()


def delete_topic_quietly(bootstrap: str, topic: str) -> None:
    with KafkaConnection(bootstrap, timeout=REQUEST_TIMEOUT_S) as admin:
        assert admin.delete_topic(topic)["error_code"] == 0


@pytest.mark.parametrize("how", ["CreateTopics", "CreatePartitions"])
@pytest.mark.slow
def test_kill_during_a_big_creation_leaves_registry_and_disk_in_agreement(workdir: Path, how: str) -> None:
    broker = OdradekProcess(workdir).start()
    wanted = 5_000
    client = KafkaConnection(broker.bootstrap, timeout=REQUEST_TIMEOUT_S)
    try:
        if how == "CreatePartitions":
            assert client.create_topic("crash", 1)["error_code"] == 0
            target = until_killed(create_partitions, client, "crash", wanted)
        else:
            target = until_killed(client.create_topic, "crash", wanted)
        request = threading.Thread(target=target, daemon=True)
        request.start()
        deadline = time.monotonic() + REQUEST_TIMEOUT_S
        while len(partition_dirs(broker.data_dir, "crash")) < 100 and time.monotonic() < deadline:
            time.sleep(0.005)
        broker.kill()
        on_disk_at_kill = len(partition_dirs(broker.data_dir, "crash"))
        assert 100 <= on_disk_at_kill < wanted, "the kill must come in the middle of the creation"
    finally:
        client.close()
    broker.start()
    try:
        with KafkaConnection(broker.bootstrap, timeout=REQUEST_TIMEOUT_S) as client:
            (topic,) = client.metadata(["crash"])["topics"]
            assert topic["error_code"] == ErrorCode.NONE
            count = len(topic["partitions"])
            assert count == wanted, "the registry was written first: start-up completes the creation"
            assert partition_dirs(broker.data_dir, "crash") == set(range(count))
            assert set(produce_to_all(client, "crash", count).values()) == {ErrorCode.NONE}
    finally:
        broker.stop()


def stopped_after_writing(workdir: Path, topic: str, partitions: int, written: list[int]) -> OdradekProcess:
    """A broker that created ``topic``, wrote a record to each partition of ``written`` and was
    shut down cleanly."""
    broker = OdradekProcess(workdir).start()
    with KafkaConnection(broker.bootstrap, timeout=REQUEST_TIMEOUT_S) as client:
        assert client.create_topic(topic, partitions)["error_code"] == 0
        for partition in written:
            assert client.produce(topic, partition, make_batch([b"before"]))["error_code"] == 0
    broker.stop()
    return broker


def test_a_partition_that_cannot_be_opened_is_served_offline_and_the_rest_still_serve(
    tmp_path: Path,
) -> None:
    broker = stopped_after_writing(tmp_path, "mixed", 3, [0, 1, 2])
    broken = broker.data_dir / "mixed-1"
    broken.rename(tmp_path / "mixed-1.moved")
    broken.write_bytes(b"a file where the partition directory should be")
    broker.start()
    try:
        with KafkaConnection(broker.bootstrap, timeout=REQUEST_TIMEOUT_S) as client:
            assert produce_to_all(client, "mixed", 3) == {
                0: ErrorCode.NONE,
                1: ErrorCode.KAFKA_STORAGE_ERROR,
                2: ErrorCode.NONE,
            }
            offsets = client.list_offsets("mixed", [0, 2], -1)
            assert offsets == {0: 2, 2: 2}, "the records from before the restart are still there"
            listed = {p["partition_index"]: p for p in client.metadata(["mixed"])["topics"][0]["partitions"]}
            assert listed[1]["offline_replicas"] == [listed[1]["leader_id"]], "Metadata says it is offline"
            assert listed[0]["offline_replicas"] == listed[2]["offline_replicas"] == []
        errors = [line for line in broker.log_text().splitlines() if " ERROR " in line and "mixed-1" in line]
        assert any("cannot open" in line and "EEXIST" in line for line in errors), (
            "the broker says at ERROR which partition is offline and why",
            errors,
        )
    finally:
        broker.stop()


def test_directories_of_unregistered_topics_are_removed_if_empty_and_set_aside_if_not(
    tmp_path: Path,
) -> None:
    broker = stopped_after_writing(tmp_path, "gone", 2, [0])
    # What a crash between the registry's deletion of the topic and of its directories leaves.
    registry = broker.data_dir / "odradek-topics.json"
    document = json.loads(registry.read_text())
    document["topics"] = [t for t in document["topics"] if t["name"] != "gone"]
    registry.write_text(json.dumps(document))
    broker.start()
    try:
        names = [entry.name for entry in broker.data_dir.iterdir() if entry.name.startswith("gone-")]
        (stray,) = names
        assert stray.startswith("gone-0.") and stray.endswith("-stray"), "data is kept, out of the way"
        assert (broker.data_dir / stray / "00000000000000000000.log").stat().st_size > 0
        with KafkaConnection(broker.bootstrap, timeout=REQUEST_TIMEOUT_S) as client:
            assert (
                client.metadata(["gone"])["topics"][0]["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            )
            assert client.create_topic("gone", 2)["error_code"] == 0
            assert client.list_offsets("gone", [0, 1], -1) == {0: 0, 1: 0}, "nothing comes back"
    finally:
        broker.stop()

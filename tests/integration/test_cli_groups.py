"""``odradek groups reset-offsets`` and ``groups delete`` against a real broker, as
kafka-consumer-groups.sh: scenarios, clamping with Kafka's warnings, dry run by default, and
Kafka's refusals while the group has members."""

from __future__ import annotations

import json
import os
import subprocess
from datetime import UTC, datetime

import pytest

from broker.cli.group_offsets import parse_datetime_ms
from compat_tests.kit.broker_process import OdradekProcess
from compat_tests.kit.brokers import odradek_cli as odradek
from compat_tests.kit.drivers.base import ConsumerSettings
from compat_tests.kit.drivers.confluent import ConfluentAdmin, ConfluentDriver

pytestmark = pytest.mark.timeout(120)

BASE_TIME = 1_700_000_000_000  # 2023-11-14T22:13:20Z


def prepare(broker: OdradekProcess, topic: str, group: str, partitions: int = 2, records: int = 10) -> None:
    """``records`` records per partition at BASE_TIME + i seconds; the group committed 5 on each."""
    bootstrap = ["--bootstrap", broker.bootstrap]
    assert odradek("topics", "create", topic, "--partitions", str(partitions), *bootstrap).returncode == 0
    lines = [
        json.dumps({"value": f"v{i}", "timestamp": BASE_TIME + i * 1000, "partition": partition})
        for partition in range(partitions)
        for i in range(records)
    ]
    produced = odradek("console-produce", topic, "--format", "json", *bootstrap, stdin="\n".join(lines))
    assert produced.returncode == 0, produced.stderr
    reset = reset_offsets(broker, group, "--topic", topic, "--to-offset", "5", "--execute")
    assert reset.returncode == 0, reset.stderr


def reset_offsets(broker: OdradekProcess, group: str, *args: str) -> subprocess.CompletedProcess[str]:
    return odradek("groups", "reset-offsets", group, *args, "--bootstrap", broker.bootstrap)


def committed(broker: OdradekProcess, group: str) -> dict[tuple[str, int], int]:
    described = odradek("groups", "describe", group, "--output", "json", "--bootstrap", broker.bootstrap)
    return {(o["topic"], o["partition"]): o["committed"] for o in json.loads(described.stdout)["offsets"]}


def new_offsets(stdout: str) -> dict[tuple[str, int], int]:
    rows = [line.split() for line in stdout.splitlines()[2:]]
    return {(topic, int(p)): int(offset) for _group, topic, p, offset in rows}


def test_dry_run_is_the_default(shared_broker: OdradekProcess) -> None:
    prepare(shared_broker, "dry", "dry-group")
    planned = reset_offsets(shared_broker, "dry-group", "--topic", "dry", "--to-earliest")
    assert planned.returncode == 0, planned.stderr
    assert planned.stdout.splitlines()[0].split() == ["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"]
    assert new_offsets(planned.stdout) == {("dry", 0): 0, ("dry", 1): 0}
    assert "No action will be performed as the --execute option is missing" in planned.stderr
    explicit = reset_offsets(shared_broker, "dry-group", "--topic", "dry", "--to-earliest", "--dry-run")
    assert explicit.returncode == 0 and "WARN" not in explicit.stderr
    assert committed(shared_broker, "dry-group") == {("dry", 0): 5, ("dry", 1): 5}


@pytest.mark.parametrize(
    ("scenario", "expected", "warning"),
    [
        (["--to-earliest"], 0, ""),
        (["--to-latest"], 10, ""),
        (["--to-current"], 5, ""),
        (["--shift-by", "-2"], 3, ""),
        (
            ["--shift-by", "20"],
            10,
            "New offset (25) is higher than latest offset for topic partition scenarios-0. Value will be set to 10",
        ),
        (
            ["--to-offset", "-3"],
            0,
            "New offset (-3) is lower than earliest offset for topic partition scenarios-0. Value will be set to 0",
        ),
        (["--to-datetime", "2023-11-14T22:13:23.500Z"], 4, ""),
        (["--to-datetime", "2023-11-14T23:13:23.000+01:00"], 3, ""),
        (
            ["--to-datetime", "2030-01-01T00:00:00.000Z"],
            10,
            "Warn: Partition 0 from topic scenarios is empty. Falling back to latest known offset.",
        ),
    ],
)
def test_scenarios_execute(
    shared_broker: OdradekProcess, scenario: list[str], expected: int, warning: str
) -> None:
    group = f"scenario-{abs(hash(tuple(scenario)))}"
    if "scenarios" not in odradek("topics", "list", "--bootstrap", shared_broker.bootstrap).stdout:
        prepare(shared_broker, "scenarios", group)
    else:
        assert (
            reset_offsets(
                shared_broker, group, "--topic", "scenarios", "--to-offset", "5", "--execute"
            ).returncode
            == 0
        )
    result = reset_offsets(shared_broker, group, "--topic", "scenarios:0", *scenario, "--execute")
    assert result.returncode == 0, result.stderr
    assert warning in result.stderr
    assert new_offsets(result.stdout) == {("scenarios", 0): expected}
    assert committed(shared_broker, group) == {("scenarios", 0): expected, ("scenarios", 1): 5}


@pytest.mark.slow
def test_all_topics_and_scope_errors(shared_broker: OdradekProcess) -> None:
    prepare(shared_broker, "scope-a", "scope-group", partitions=1)
    assert (
        reset_offsets(
            shared_broker, "scope-group", "--topic", "scope-a", "--to-offset", "7", "--execute"
        ).returncode
        == 0
    )
    everything = reset_offsets(
        shared_broker, "scope-group", "--all-topics", "--to-earliest", "--execute", "--output", "json"
    )
    assert json.loads(everything.stdout) == [
        {"group": "scope-group", "topic": "scope-a", "partition": 0, "new_offset": 0}
    ]
    no_scope = reset_offsets(shared_broker, "scope-group", "--to-earliest")
    assert no_scope.returncode == 1
    assert "One of the reset scopes should be defined: --all-topics, --topic." in no_scope.stderr
    no_partition = reset_offsets(shared_broker, "scope-group", "--topic", "scope-a:3", "--to-earliest")
    assert no_partition.returncode == 1 and "has no partition '3'" in no_partition.stderr
    no_commit = reset_offsets(shared_broker, "fresh-group", "--topic", "scope-a", "--shift-by", "1")
    assert no_commit.returncode == 1
    assert (
        "Cannot shift offset for partition scope-a-0 since there is no current committed offset"
        in no_commit.stderr
    )


def test_a_group_with_members_is_refused_then_deleted(shared_broker: OdradekProcess) -> None:
    prepare(shared_broker, "busy", "busy-group", partitions=1)
    with ConfluentDriver(shared_broker.bootstrap).consumer(ConsumerSettings(group="busy-group")) as consumer:
        consumer.subscribe(["busy"])
        while not consumer.assignment():
            consumer.poll(1, 0.2)
        refused = reset_offsets(shared_broker, "busy-group", "--topic", "busy", "--to-earliest", "--execute")
        assert refused.returncode == 1
        assert (
            "Error: Assignments can only be reset if the group 'busy-group' is inactive, "
            "but the current state is Stable." in refused.stderr
        )
        not_empty = odradek("groups", "delete", "busy-group", "--bootstrap", shared_broker.bootstrap)
        assert not_empty.returncode == 1
        assert "* Group 'busy-group' could not be deleted due to: NON_EMPTY_GROUP" in not_empty.stderr
    assert committed(shared_broker, "busy-group") == {("busy", 0): 5}
    deleted = odradek("groups", "delete", "busy-group", "--bootstrap", shared_broker.bootstrap)
    assert deleted.returncode == 0, deleted.stderr
    assert deleted.stdout.strip() == "Deletion of requested consumer groups ('busy-group') was successful."
    again = odradek("groups", "delete", "busy-group", "--bootstrap", shared_broker.bootstrap)
    assert again.returncode == 1 and "GROUP_ID_NOT_FOUND" in again.stderr
    with ConfluentAdmin(shared_broker.bootstrap) as admin:
        assert admin.group_offsets("busy-group") == {}  # the committed offsets went with the group


def test_progress_bar_only_on_a_terminal(shared_broker: OdradekProcess) -> None:
    """A reset over many partitions draws a bar on a terminal's stderr, and nothing into a pipe."""
    prepare(shared_broker, "wide", "wide-group", partitions=64, records=1)
    primary, secondary = os.openpty()
    try:
        on_tty = odradek(
            "groups",
            "reset-offsets",
            "wide-group",
            "--topic",
            "wide",
            "--to-earliest",
            "--execute",
            "--bootstrap",
            shared_broker.bootstrap,
            stderr=secondary,
        )
        os.close(secondary)
        drawn = b""
        while chunk := _read_available(primary):
            drawn += chunk
    finally:
        os.close(primary)
    assert on_tty.returncode == 0
    assert b"committing offsets [" in drawn and b"100% 64/64" in drawn
    piped = reset_offsets(shared_broker, "wide-group", "--topic", "wide", "--to-earliest", "--execute")
    assert piped.returncode == 0 and "[" not in piped.stderr
    assert len(new_offsets(piped.stdout)) == 64


def _read_available(fd: int) -> bytes:
    try:
        return os.read(fd, 65536)
    except OSError:  # EIO: the terminal's other side is closed and drained
        return b""


def test_datetime_without_zone_is_local_time() -> None:
    """The parser's own contract, which the broker tests above exercise with explicit zones."""
    naive = "2023-11-14T22:13:20.000"
    assert parse_datetime_ms(naive) == int(datetime.fromisoformat(naive).astimezone().timestamp() * 1000)
    assert parse_datetime_ms("2023-11-14T22:13:20.123Z") == BASE_TIME + 123
    assert parse_datetime_ms("2023-11-14T22:13:20.000Z") == int(
        datetime(2023, 11, 14, 22, 13, 20, tzinfo=UTC).timestamp() * 1000
    )


def test_by_duration_counts_back_from_now(shared_broker: OdradekProcess) -> None:
    bootstrap = ["--bootstrap", shared_broker.bootstrap]
    assert odradek("topics", "create", "recent", "--partitions", "1", *bootstrap).returncode == 0
    now = int(datetime.now(UTC).timestamp() * 1000)
    hour = 3_600_000
    lines = [
        json.dumps({"value": f"v{i}", "timestamp": now - (10 - i) * hour - hour // 2}) for i in range(10)
    ]
    produced = odradek("console-produce", "recent", "--format", "json", *bootstrap, stdin="\n".join(lines))
    assert produced.returncode == 0, produced.stderr
    result = reset_offsets(
        shared_broker, "recent-group", "--topic", "recent", "--by-duration", "PT5H", "--execute"
    )
    assert result.returncode == 0, result.stderr
    assert new_offsets(result.stdout) == {("recent", 0): 6}  # the first record of the last 5 hours
    two_days = reset_offsets(shared_broker, "recent-group", "--topic", "recent", "--by-duration", "P2DT0.5S")
    assert new_offsets(two_days.stdout) == {("recent", 0): 0}
    bad = reset_offsets(shared_broker, "recent-group", "--topic", "recent", "--by-duration", "5 hours")
    assert bad.returncode == 1 and "use the format PnDTnHnMnS" in bad.stderr


def test_delete_offsets(shared_broker: OdradekProcess) -> None:
    prepare(shared_broker, "pruned", "pruned-group")
    result = odradek(
        "groups",
        "delete-offsets",
        "pruned-group",
        "--topic",
        "pruned:0",
        "--bootstrap",
        shared_broker.bootstrap,
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "Request succeeded for deleting offsets from group pruned-group."
    assert [line.split() for line in lines[2:]] == [
        ["TOPIC", "PARTITION", "STATUS"],
        ["------", "---------", "----------"],
        ["pruned", "0", "Successful"],
    ]
    assert committed(shared_broker, "pruned-group") == {("pruned", 1): 5}
    no_scope = odradek("groups", "delete-offsets", "pruned-group", "--bootstrap", shared_broker.bootstrap)
    assert no_scope.returncode == 1
    assert (
        "Option --delete-offsets requires either --all-topics or --topic to be specified." in no_scope.stderr
    )
    everything = odradek(
        "groups",
        "delete-offsets",
        "pruned-group",
        "--all-topics",
        "--output",
        "json",
        "--bootstrap",
        shared_broker.bootstrap,
    )
    assert json.loads(everything.stdout) == [{"topic": "pruned", "partition": 1, "status": "Successful"}]
    assert committed(shared_broker, "pruned-group") == {}

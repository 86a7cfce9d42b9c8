"""Failures around a group: a member dies, the broker restarts (cleanly or by kill -9)."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

from compat_tests.kit.broker_process import OdradekProcess
from compat_tests.kit.drivers.base import ConsumerSettings
from compat_tests.kit.drivers.confluent import ConfluentAdmin
from compat_tests.kit.drivers.kafka_python import KafkaPythonDriver
from tests.integration import test_groups_sharing as sharing
from tests.integration.group_victim import CLASSIC_SESSION_MS
from tests.integration.test_groups_sharing import produce, values, wait_for_all
from tests.integration.waiting import wait_until

REPO_ROOT = Path(__file__).resolve().parents[2]


class Victim:
    """A member of ``client`` in a process of its own (:mod:`tests.integration.group_victim`), so
    that the test can SIGKILL it: no LeaveGroup, no goodbye, only the session timeout tells the
    coordinator it is gone. ``owned`` follows the partitions it reports owning."""

    def __init__(
        self, client: str, bootstrap: str, topic: str, group: str, protocol: str = "classic"
    ) -> None:
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.integration.group_victim",
                client,
                bootstrap,
                topic,
                group,
                protocol,
            ],
            stdout=subprocess.PIPE,
            text=True,
            cwd=REPO_ROOT,  # where the module and the drivers it uses are found
        )
        self.owned: set[int] = set()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            if line.startswith("OWNS"):
                self.owned = {int(p) for p in line.split()[1:]}

    def kill(self) -> None:
        self.process.kill()
        self.process.wait()


# Longer than the members' session timeout (6 s): a member that stopped heartbeating would have
# been expelled within it, so a split that lasts this long is between two live members.
STEADY_S = 7.0


class SteadySplit:
    """Whether the two members have split the topic, the same way, for ``STEADY_S``.

    kafka-python 3.0.x may drop a JoinGroup answer that arrives between polls and stop
    heartbeating until the coordinator expels it (see ``compat_tests.kit.drivers.kafka_python``);
    a split seen just before that happens would make the survivor's takeover look immediate.
    """

    def __init__(self, victim: Victim, survivor: sharing.Member) -> None:
        self.victim, self.survivor = victim, survivor
        self.split: tuple[frozenset[int], frozenset[int]] | None = None
        self.since = 0.0

    def held(self) -> bool:
        split = (frozenset(self.victim.owned), frozenset(self.survivor.assignment))
        if not (split[0] and split[1] and split[0] | split[1] == set(range(6))):
            self.split = None
            return False
        if split != self.split:
            self.split, self.since = split, time.monotonic()
        return time.monotonic() - self.since >= STEADY_S


def check_survivor_takes_over_after_the_session(
    bootstrap: str, topic: str, victim: Victim, survivor: sharing.Member, messages: int
) -> None:
    """Once both share the topic, kill the victim: the survivor gets every partition and message."""
    sharing.start(survivor)
    try:
        wait_until(
            SteadySplit(victim, survivor).held, "the victim and the survivor to share the topic steadily"
        )
        killed_at = time.monotonic()
        victim.kill()
        wait_until(lambda: survivor.assignment == set(range(6)), "the survivor to take over every partition")
        # Nothing told the coordinator but the missing heartbeats: it took a session timeout.
        assert time.monotonic() - killed_at > 3
        expected = values("after-kill", messages)
        produce(bootstrap, topic, expected)
        assert set(wait_for_all([survivor], expected).values()) == {1}
    finally:
        victim.kill()
        sharing.stop(survivor)


def test_partitions_of_a_killed_member_move_after_its_session_timeout(odradek_broker: OdradekProcess) -> None:
    bootstrap, topic, group = odradek_broker.bootstrap, "failover", "failover-group"
    sharing.create_topic(bootstrap, topic)
    victim = Victim("kafka-python", bootstrap, topic, group)
    survivor = sharing.Member(
        KafkaPythonDriver, bootstrap, topic, group, "survivor", session_timeout_ms=CLASSIC_SESSION_MS
    )
    check_survivor_takes_over_after_the_session(bootstrap, topic, victim, survivor, 120)


def _consume(bootstrap: str, topic: str, group: str, count: int) -> list[bytes]:
    """Read ``count`` records as a member of ``group``, then commit the positions reached."""
    settings = ConsumerSettings(group=group, reset="earliest")
    got: list[bytes] = []
    positions: dict[tuple[str, int], int] = {}
    with KafkaPythonDriver(bootstrap).consumer(settings) as consumer:
        consumer.subscribe([topic])
        deadline = time.monotonic() + 60
        while len(got) < count and time.monotonic() < deadline:
            for record in consumer.poll(500, 0.2):
                got.append(record.value)
                positions[record.topic, record.partition] = record.offset + 1
        consumer.commit(positions)
    return got


def test_a_group_resumes_from_its_committed_offsets_after_a_broker_restart(
    odradek_broker: OdradekProcess,
) -> None:
    bootstrap, topic, group = odradek_broker.bootstrap, "resume", "resume-group"
    before = sharing.filled_topic(bootstrap, topic, 3, "before", 300)
    assert sorted(_consume(bootstrap, topic, group, 300)) == sorted(before)

    odradek_broker.restart()
    after = values("after", 150)
    produce(bootstrap, topic, after, 3)
    assert sorted(_consume(bootstrap, topic, group, 150)) == sorted(after)

    odradek_broker.restart(crash=True)  # a crash must not lose acknowledged commits either
    with ConfluentAdmin(bootstrap) as admin:
        assert admin.group_offsets(group) == {(topic, p): 150 for p in range(3)}


def test_a_live_member_rides_through_a_broker_crash(odradek_broker: OdradekProcess) -> None:
    """The group comes back Stable from the log: members heartbeat on with their generation."""
    bootstrap, topic, group = odradek_broker.bootstrap, "ride", "ride-group"
    sharing.create_topic(bootstrap, topic, 2)
    member = sharing.Member(KafkaPythonDriver, bootstrap, topic, group, "rider")
    sharing.start(member)
    try:
        wait_until(lambda: member.assignment == {0, 1}, "the member to own both partitions")
        first = values("first", 100)
        produce(bootstrap, topic, first, 2)
        wait_for_all([member], first)
        with ConfluentAdmin(bootstrap) as admin:
            wait_until(
                lambda: admin.group_offsets(group) == {(topic, 0): 50, (topic, 1): 50},
                "the auto-commit of everything consumed",
            )
        odradek_broker.restart(crash=True)
        second = values("second", 100)
        produce(bootstrap, topic, second, 2)
        counts = wait_for_all([member], first + second)
        assert set(counts.values()) == {1}
    finally:
        sharing.stop(member)

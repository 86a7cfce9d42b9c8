"""Streams groups (KIP-1071): a real Kafka Streams 4.3.1 application against the broker.

Not parametrized over the clients: Kafka Streams is a Java library on kafka-clients. A word count
(``java/StreamsApp.java``, driven through ``kit/drivers/java_streams.py``, one application
instance per JVM so that one can be SIGKILLed) reads lines from a source topic, re-keys the words
through the repartition topic ``<application.id>-words-repartition``, counts them in the state
store ``counts`` (changelog ``<application.id>-counts-changelog``) and writes each new count to
the output topic, with ``processing.guarantee=exactly_once_v2``. Lines are produced with
confluent-kafka (the suite's setup client), and the output topic is read ``read_committed``.

What every count scenario asserts is exactly-once: each word's counts on the output topic rise
strictly (no count is repeated, lost or rolled back, which a duplicate or lost record, or an
aborted transaction made visible, would cause) and end at the number of times the word was
produced. The other assertions are what Apache Kafka 4.3.1 does: the broker creates the internal
topics with the configs the application asks for, refuses a topology change under the same
application.id, and reports a missing source topic in its heartbeat answer, which the application
turns into MissingSourceTopicException.

Apache Kafka 4.3.1 finalizes ``streams.version=1`` on a new cluster, so nothing is switched on; the
broker settings these scenarios rely on (no initial rebalance delay, 500 ms heartbeats, a 10 s
session) are in ``kit/brokers.py: SUITE_OVERRIDES``.
"""

from __future__ import annotations

import random
import re
import shutil
import time
import uuid
from collections import Counter
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

import pytest

from compat_tests.helpers import eventually
from compat_tests.kafka_tools import ok, run_tool
from compat_tests.kit.brokers import RunningBroker
from compat_tests.kit.drivers.admin import ConfigValue
from compat_tests.kit.drivers.base import ClientError, ConsumerSettings, Driver, Message, ProducerSettings
from compat_tests.kit.drivers.confluent import ConfluentAdmin
from compat_tests.kit.drivers.java_streams import AppSettings, StreamsInstance
from compat_tests.kit.raw_groups import find_coordinator, streams_join
from compat_tests.kit.raw_protocol import ask
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode

STREAMS_GROUPS = "org.apache.kafka.tools.streams.StreamsGroupCommand"
PARTITIONS = 4
ALL_TASKS = {f"{subtopology}_{partition}" for subtopology in (0, 1) for partition in range(PARTITIONS)}
"""The word count's tasks: subtopology 0 (source -> repartition) and 1 (repartition -> count)."""
VOCABULARY = [
    "kafka",
    "streams",
    "group",
    "task",
    "state",
    "store",
    "changelog",
    "repartition",
    "topic",
    "offset",
    "commit",
    "epoch",
    "member",
    "broker",
    "record",
]
STOP_WORD = "kafka"
START_S = 120.0
"""A JVM's start, the group's first assignment and the internal topics' creation, on a loaded
two-core machine."""
RESULT_S = 90.0
"""How long the last count may take to show: a SIGKILLed instance's tasks move after the 10 s
session and its open transaction blocks read_committed until it times out (10 s, Streams' default
transaction.timeout.ms under exactly-once)."""
MISSING_SOURCE_TOPICS = "org.apache.kafka.streams.errors.MissingSourceTopicException"
TOPOLOGY_UPDATE_REFUSED = (
    "org.apache.kafka.streams.errors.StreamsException: "
    "org.apache.kafka.common.errors.InvalidRequestException: Topology updates are not supported yet."
)


class Scenario:
    """A scenario's application id and topics (a source and an output topic of four partitions
    each, of ``replicas`` replicas; the application's own topics are not created yet), its
    application instances and readers of its outputs, closed when it ends."""

    def __init__(
        self, name: str, broker: RunningBroker, admin: Driver, workdir: Path, replicas: int = 1
    ) -> None:
        self.application_id = f"app-{name}"
        self.source = f"{name}-lines"
        self.output = f"{name}-counts"
        self.repartition = f"{self.application_id}-words-repartition"
        self.changelog = f"{self.application_id}-counts-changelog"
        self.bootstrap = broker.bootstrap
        self.admin = admin
        """The setup client (confluent-kafka): topics and lines."""
        self.inspect = ConfluentAdmin(broker.bootstrap)
        """confluent-kafka's admin client: what the broker made of the application's topics."""
        self.workdir = workdir
        self.instances: list[StreamsInstance] = []
        self.readers: list[OutputReader] = []
        for topic in (self.source, self.output):
            self.inspect.create_topic(topic, PARTITIONS, replication_factor=replicas)

    def settings(self, **changes: object) -> AppSettings:
        """The word count's settings (group.protocol=streams, exactly_once_v2), with ``changes``."""
        return replace(AppSettings(self.application_id, self.source, self.output), **changes)  # type: ignore[arg-type]

    def instance(self, name: str) -> StreamsInstance:
        """An application instance in a JVM of its own (started by its ``start``), its log and
        state directory under the scenario's directory."""
        instance = StreamsInstance(
            self.workdir / f"{name}.log", self.bootstrap, self.workdir / f"state-{name}"
        )
        self.instances.append(instance)
        return instance

    def reader(self, topic: str) -> OutputReader:
        self.readers.append(OutputReader(self.admin, topic))
        return self.readers[-1]

    def produce(self, text: Sequence[str], settings: ProducerSettings | None = None) -> Counter[int]:
        """Each line as a record of the source topic, round-robin over the partitions; how many
        went to each."""
        messages = [
            Message(line.encode(), key=str(i).encode(), partition=i % PARTITIONS)
            for i, line in enumerate(text)
        ]
        self.admin.produce(self.source, messages, settings or ProducerSettings())
        return Counter(message.partition for message in messages)

    def close(self) -> None:
        for instance in self.instances:
            instance.close()
        for reader in self.readers:
            reader.close()
        self.inspect.close()


@pytest.fixture
def streams(topic: str, broker: RunningBroker, admin: Driver, tmp_path: Path) -> Iterator[Scenario]:
    scenario = Scenario(topic, broker, admin, tmp_path)
    yield scenario
    scenario.close()


def start_running(
    instances: Sequence[StreamsInstance], settings: AppSettings | Sequence[AppSettings]
) -> None:
    """Start the instances side by side (each JVM starts in seconds on a loaded machine), with
    the same settings or each with its own, and wait until each is RUNNING."""
    each = [settings] * len(instances) if isinstance(settings, AppSettings) else list(settings)
    with ThreadPoolExecutor(len(instances)) as pool:
        list(pool.map(lambda pair: pair[0].start(pair[1]), zip(instances, each, strict=True)))
    for instance in instances:
        instance.wait_for_state("RUNNING", START_S)


def lines(count: int, seed: int) -> list[str]:
    """``count`` lines of three to seven words of the vocabulary, mixed case (the application
    lowercases), reproducible from ``seed``."""
    chosen = random.Random(seed)
    return [
        " ".join(chosen.choice(VOCABULARY).capitalize() for _ in range(chosen.randint(3, 7)))
        for _ in range(count)
    ]


def words_of(text: Sequence[str]) -> Counter[str]:
    return Counter(word.lower() for line in text for word in line.split())


class OutputReader:
    """An output topic read from its start ``read_committed``, as it grows."""

    def __init__(self, admin: Driver, topic: str) -> None:
        self.consumer = admin.consumer(ConsumerSettings(isolation="read_committed"))
        self.consumer.assign({(topic, p): 0 for p in range(PARTITIONS)})
        self.records: list[tuple[str, bytes]] = []

    def read(self) -> None:
        for record in self.consumer.poll(1000, 0.5):
            assert record.key is not None and record.value is not None
            self.records.append((record.key.decode(), record.value))

    def history(self) -> dict[str, list[int]]:
        """Each word's counts (values as 8-byte longs) in the order they were written."""
        seen: dict[str, list[int]] = {}
        for word, value in self.records:
            seen.setdefault(word, []).append(int.from_bytes(value, "big"))
        return seen

    def counts(self) -> dict[str, int]:
        return {word: seen[-1] for word, seen in self.history().items()}

    def wait_for(self, expected: Counter[str], timeout_s: float = RESULT_S) -> None:
        """Until every word's last count is the expected one (and no other word showed up), then
        check that each word's counts rose strictly."""
        deadline = time.monotonic() + timeout_s
        while self.counts() != dict(expected):
            assert time.monotonic() < deadline, (
                f"counts after {timeout_s}s: {self.counts()}, expected {dict(expected)}"
            )
            self.read()
        not_rising = {word: seen for word, seen in self.history().items() if seen != sorted(set(seen))}
        assert not not_rising, f"counts that did not rise strictly (not exactly once): {not_rising}"

    def wait_for_values(self, count: int, timeout_s: float = RESULT_S) -> Counter[str]:
        """Until ``count`` records were read: their values as text, counted."""
        deadline = time.monotonic() + timeout_s
        while len(self.records) < count:
            assert time.monotonic() < deadline, f"{len(self.records)} of {count} records in {timeout_s}s"
            self.read()
        return Counter(value.decode() for _, value in self.records)

    def close(self) -> None:
        self.consumer.close()


def run_once(streams: Scenario, instance: StreamsInstance, seed: int) -> tuple[OutputReader, Counter[str]]:
    """The application's first run: started, 200 lines counted exactly, closed (which leaves the
    group); the output's reader and the counts so far."""
    start_running([instance], streams.settings())
    text = lines(200, seed)
    streams.produce(text)
    reader = streams.reader(streams.output)
    reader.wait_for(words_of(text))
    assert instance.stop() is True
    return reader, words_of(text)


def states(instance: StreamsInstance) -> list[tuple[str, str]]:
    """The instance's state changes as (from, to)."""
    return [(event["from"], event["state"]) for event in instance.events() if "state" in event]


def test_word_count_exactly_once(streams: Scenario) -> None:
    """One instance, group.protocol=streams, exactly_once_v2: exact counts, the group as
    StreamsGroupDescribe shows it, and the internal topics the broker created."""
    instance = streams.instance("single")
    start_running([instance], streams.settings())
    assert states(instance)[:2] == [("CREATED", "REBALANCING"), ("REBALANCING", "RUNNING")]
    text = lines(300, seed=1)
    streams.produce(text)
    streams.reader(streams.output).wait_for(words_of(text))

    group = instance.describe_group(streams.application_id)
    assert group["state"] == "Stable"
    assert group["topology_epoch"] == 0
    assert group["target_assignment_epoch"] == group["group_epoch"]
    assert group["subtopologies"] == [
        {
            "id": "0",
            "source_topics": [streams.source],
            "repartition_sink_topics": [streams.repartition],
            "state_changelog_topics": [],
            "repartition_source_topics": [],
        },
        {
            "id": "1",
            "source_topics": [],
            "repartition_sink_topics": [],
            "state_changelog_topics": [streams.changelog],
            "repartition_source_topics": [streams.repartition],
        },
    ]
    (member,) = group["members"]
    everything = {"active": sorted(ALL_TASKS), "standby": [], "warmup": []}
    assert member["assignment"] == everything
    assert member["target_assignment"] == everything
    assert member["member_epoch"] == group["group_epoch"]
    assert member["topology_epoch"] == 0
    assert member["is_classic"] is False
    assert member["client_id"] == "streams-compat-StreamThread-1-consumer"
    assert instance.tasks() == (ALL_TASKS, set())

    # Created by the broker (KIP-1071), with the source's partition count and the configs the
    # application's topology asks for.
    for internal in (streams.repartition, streams.changelog):
        assert streams.inspect.describe_topic(internal).partitions == PARTITIONS
    asked = {
        streams.repartition: {
            "cleanup.policy": "delete",
            "message.timestamp.type": "CreateTime",
            "retention.ms": "-1",
            "segment.bytes": "52428800",
        },
        streams.changelog: {"cleanup.policy": "compact", "message.timestamp.type": "CreateTime"},
    }
    for internal, configs in asked.items():
        found = streams.inspect.topic_configs(internal)
        assert {key: found[key] for key in configs} == {
            key: ConfigValue(value, "DYNAMIC_TOPIC_CONFIG") for key, value in configs.items()
        }
        dynamic = {key for key, entry in found.items() if entry.source == "DYNAMIC_TOPIC_CONFIG"}
        assert dynamic == set(configs)


@pytest.mark.slow
def test_instances_join_and_one_is_killed(streams: Scenario) -> None:
    """Two instances share the tasks, a third joins (rebalance), one is SIGKILLed mid-stream:
    the survivors take its tasks after the session timeout and the counts stay exact."""
    first, second, third = (streams.instance(name) for name in ("first", "second", "third"))
    start_running([first, second], streams.settings())
    text = lines(200, seed=2)
    streams.produce(text)
    reader = streams.reader(streams.output)
    reader.wait_for(words_of(text))
    assert sorted(map(len, spread(first, streams, 2))) == [4, 4]

    start_running([third], streams.settings())
    tasks = spread(first, streams, 3)
    assert sorted(map(len, tasks)) == [2, 3, 3]
    more = lines(200, seed=3)
    streams.produce(more)
    second.kill()
    last = lines(200, seed=4)
    streams.produce(last)
    reader.wait_for(words_of(text) + words_of(more) + words_of(last))
    assert sorted(map(len, spread(first, streams, 2))) == [4, 4]
    assert first.state() == third.state() == "RUNNING"


def spread(instance: StreamsInstance, streams: Scenario, members: int) -> list[set[str]]:
    """Each member's active tasks once StreamsGroupDescribe (through ``instance``) shows the group
    Stable with ``members`` members, each holding its target assignment and every task held once."""

    def settled() -> list[set[str]]:
        group = instance.describe_group(streams.application_id)
        assert group["state"] == "Stable", group
        assert len(group["members"]) == members, group
        assert all(m["assignment"] == m["target_assignment"] for m in group["members"]), group
        tasks = [set(m["assignment"]["active"]) for m in group["members"]]
        assert sorted(task for held in tasks for task in held) == sorted(ALL_TASKS), group
        return tasks

    return eventually(settled, RESULT_S)


def test_interactive_query_metadata(streams: Scenario) -> None:
    """Two instances with application.server set (nothing listens there): once the group is
    Stable, each instance's metadataForAllStreamsClients lists both host:ports, each with the
    source and repartition partitions of that instance's active tasks, every partition once."""
    servers = ("localhost:7101", "localhost:7102")
    instances = [streams.instance(f"iq-{i}") for i in range(len(servers))]
    start_running(instances, [streams.settings(application_server=server) for server in servers])
    text = lines(100, seed=11)
    streams.produce(text)
    streams.reader(streams.output).wait_for(words_of(text))
    spread(instances[0], streams, 2)
    inputs = {"0": streams.source, "1": streams.repartition}

    def served() -> dict[str, set[str]]:
        expected = {}
        for server, instance in zip(servers, instances, strict=True):
            active, _standby = instance.tasks()
            expected[server] = {f"{inputs[task.split('_')[0]]}-{task.split('_')[1]}" for task in active}
        for instance in instances:
            known = instance.metadata()
            assert {server: active for server, (active, _standby) in known.items()} == expected, known
        return expected

    expected = eventually(served, RESULT_S)
    assert all(expected.values()), expected  # both instances hold tasks
    every = sorted(partition for held in expected.values() for partition in held)
    assert every == sorted(f"{topic}-{p}" for topic in inputs.values() for p in range(PARTITIONS))


def test_empty_state_directory_restores_from_the_changelog(streams: Scenario) -> None:
    """An instance restarted with its state directory emptied rebuilds the counts from the
    changelog: they continue from where they were, not from zero."""
    instance = streams.instance("restarted")
    reader, counted = run_once(streams, instance, seed=5)
    shutil.rmtree(instance.state_dir)
    start_running([instance], streams.settings())
    more = lines(200, seed=6)
    streams.produce(more)
    reader.wait_for(counted + words_of(more))


@pytest.mark.slow
def test_topology_change_under_the_same_application_id(streams: Scenario) -> None:
    """A new version of the application restarted under the same application.id: a filter and
    a second output (the subtopologies and their topics unchanged) are accepted and counting
    goes on; a new subtopology (a second count, with internal topics of its own) is refused by
    Apache Kafka 4.3.1 with INVALID_REQUEST "Topology updates are not supported yet.", even with
    the group empty, and the group keeps its topology."""
    words_out = f"{streams.output}-words"
    lengths_out = f"{streams.output}-lengths"
    for name in (words_out, lengths_out):
        streams.admin.create_topic(name, PARTITIONS)
    instance = streams.instance("versions")
    reader, first = run_once(streams, instance, seed=7)

    start_running([instance], streams.settings(stop_word=STOP_WORD, output2=words_out))
    more = lines(150, seed=8)
    streams.produce(more)
    counted = Counter({word: n for word, n in words_of(more).items() if word != STOP_WORD})
    reader.wait_for(first + counted)
    assert streams.reader(words_out).wait_for_values(sum(counted.values())) == counted
    assert instance.stop() is True

    group_before = instance.describe_group(streams.application_id)
    assert group_before["state"] == "Empty"
    instance.start(streams.settings(stop_word=STOP_WORD, lengths_output=lengths_out))
    instance.wait_for_state("ERROR", START_S)
    events = instance.events()
    errors = [event["error"] for event in events if "error" in event]
    assert errors == [TOPOLOGY_UPDATE_REFUSED]
    assert states(instance) == [
        ("CREATED", "REBALANCING"),
        ("REBALANCING", "PENDING_ERROR"),
        ("PENDING_ERROR", "ERROR"),
    ]
    group = instance.describe_group(streams.application_id)
    assert group["state"] == "Empty" and group["members"] == []
    assert group["subtopologies"] == group_before["subtopologies"]
    internal = {name for name in streams.inspect.list_topics() if name.startswith(streams.application_id)}
    assert internal == {streams.repartition, streams.changelog}
    assert (
        "StreamsGroupHeartbeatRequest failed due to INVALID_REQUEST: Topology updates are not supported yet."
        in (instance.log_path.read_text())
    )


def test_missing_source_topic(streams: Scenario) -> None:
    """A source topic that does not exist: the broker's heartbeat answer carries status
    MISSING_SOURCE_TOPICS (1, "Source topics <topic> are missing."), the application fails with
    MissingSourceTopicException after two heartbeat intervals and goes to ERROR, leaving the group;
    the group keeps the topology it was given, and neither the source nor the internal topics are
    created."""
    missing = f"{streams.source}-missing"
    instance = streams.instance("missing")
    instance.start(streams.settings(source=missing))
    instance.wait_for_state("ERROR", START_S)
    errors = [event["error"] for event in instance.events() if "error" in event]
    assert len(errors) == 1
    assert re.fullmatch(
        rf"{MISSING_SOURCE_TOPICS}: Missing source topics: Source topics {missing} are missing\.\. "
        r"Timeout exceeded after \d+ms\.",
        errors[0],
    ), errors
    assert states(instance) == [
        ("CREATED", "REBALANCING"),
        ("REBALANCING", "PENDING_ERROR"),
        ("PENDING_ERROR", "ERROR"),
    ]
    log = instance.log_path.read_text()
    assert f"Membership is in the following statuses: (1) Source topics {missing} are missing." in log
    group = instance.describe_group(streams.application_id)
    assert group["state"] == "Empty"
    assert group["members"] == []
    assert [s["source_topics"] for s in group["subtopologies"]] == [[missing], []]
    assert [s["state_changelog_topics"] for s in group["subtopologies"]] == [[], [streams.changelog]]
    existing = streams.inspect.list_topics()
    assert missing not in existing
    assert not {streams.repartition, streams.changelog} & existing


def test_classic_protocol_word_count(streams: Scenario) -> None:
    """The same application with group.protocol=classic (a consumer group, the Streams assignor
    in the client): exact counts; StreamsGroupDescribe refuses the group as not a streams group."""
    instance = streams.instance("classic")
    start_running([instance], streams.settings(group_protocol="classic"))
    text = lines(300, seed=9)
    streams.produce(text)
    streams.reader(streams.output).wait_for(words_of(text))
    assert instance.tasks() == (ALL_TASKS, set())
    refused = f"GroupIdNotFoundException: Group {streams.application_id} is not a streams group."
    with pytest.raises(ClientError, match=re.escape(refused)):
        instance.describe_group(streams.application_id)


@pytest.mark.slow
def test_streams_groups_tool(streams: Scenario, tool_classpath: str) -> None:
    """Kafka 4.3's kafka-streams-groups.sh on a running application: --list (with --state),
    --describe with its members, state and offsets views."""
    instance = streams.instance("described")
    start_running([instance], streams.settings())
    text = lines(120, seed=10)
    per_partition = streams.produce(text)
    streams.reader(streams.output).wait_for(words_of(text))
    app = streams.application_id

    def tool(*args: str) -> list[list[str]]:
        return [
            line.split()
            for line in ok(run_tool(tool_classpath, streams.bootstrap, STREAMS_GROUPS, *args)).splitlines()
            if line.strip()
        ]

    assert [app] in tool("--list")
    listed = tool("--list", "--state")
    assert listed[0] == ["GROUP", "STATE"]
    assert [app, "Stable"] in listed[1:]

    group = instance.describe_group(app)
    (member,) = group["members"]
    state = tool("--describe", "--group", app, "--state")
    assert state[0] == ["GROUP", "COORDINATOR", "(ID)", "STATE", "#MEMBERS"]
    assert state[1][0] == app and state[1][3:] == ["Stable", "1"]

    members = tool("--describe", "--group", app, "--members")
    assert members == [
        ["GROUP", "MEMBER", "PROCESS", "CLIENT-ID", "ASSIGNMENTS"],
        [
            app,
            member["member_id"],
            member["process_id"],
            member["client_id"],
            "ACTIVE:",
            "0:[0,1,2,3];",
            "1:[0,1,2,3];",
        ],
    ]
    verbose = tool("--describe", "--group", app, "--members", "--verbose")
    assert verbose[0] == [
        "GROUP",
        "TARGET-ASSIGNMENT-EPOCH",
        "TOPOLOGY-EPOCH",
        "MEMBER",
        "MEMBER-PROTOCOL",
        "MEMBER-EPOCH",
        "PROCESS",
        "CLIENT-ID",
        "ASSIGNMENTS",
    ]
    epoch = str(group["target_assignment_epoch"])
    assert verbose[1] == [
        app,
        epoch,
        "0",
        member["member_id"],
        "streams",
        str(member["member_epoch"]),
        member["process_id"],
        member["client_id"],
        "ACTIVE:",
        "0:[0,1,2,3];",
        "1:[0,1,2,3];",
        "TARGET-ACTIVE:",
        "0:[0,1,2,3];",
        "1:[0,1,2,3];",
    ]

    def offsets_caught_up() -> list[list[str]]:
        rows = tool("--describe", "--group", app, "--offsets", "--verbose")
        assert all(row[-1] == "0" for row in rows[1:]), rows
        return rows

    rows = eventually(offsets_caught_up, RESULT_S)
    assert rows[0] == [
        "GROUP",
        "TOPIC",
        "PARTITION",
        "CURRENT-OFFSET",
        "LEADER-EPOCH",
        "LOG-END-OFFSET",
        "OFFSET-LAG",
    ]
    by_partition = {(row[1], int(row[2])): row for row in rows[1:]}
    assert set(by_partition) == {
        (t, p) for t in (streams.source, streams.repartition) for p in range(PARTITIONS)
    }
    for partition in range(PARTITIONS):
        produced = str(per_partition[partition])
        assert by_partition[streams.source, partition] == [
            app,
            streams.source,
            str(partition),
            produced,
            "0",
            produced,
            "0",
        ]
        repartitioned = by_partition[streams.repartition, partition]
        if repartitioned[5] == "0":  # no word hashed to it
            assert repartitioned[3:] == ["-", "-", "0", "0"]
        else:
            assert repartitioned[3] == repartitioned[5]
    default = tool("--describe", "--group", app)
    assert default[0] == ["GROUP", "TOPIC", "PARTITION", "OFFSET-LAG"]
    assert sorted(default[1:]) == sorted([row[0], row[1], row[2], row[6]] for row in rows[1:])


@pytest.mark.parametrize(
    ("changes", "refusal"),
    [
        ({"task_offsets": []}, "TaskOffsets are not supported yet."),
        ({"task_end_offsets": []}, "TaskEndOffsets are not supported yet."),
        (
            {"warmup_tasks": [{"subtopology_id": "0", "partitions": [0]}]},
            "WarmupTasks are not supported yet.",
        ),
        ({"instance_id": "static-1"}, "Static membership is not yet supported."),
    ],
    ids=["task-offsets", "task-end-offsets", "warmup-tasks", "static-member"],
)
def test_what_kafka_4_3_does_not_support_yet_is_refused(
    broker: RunningBroker, changes: dict[str, object], refusal: str
) -> None:
    """A heartbeat using a KIP-1071 feature Kafka 4.3 has not built (task offsets for warm-ups,
    warm-up tasks, static members) is INVALID_REQUEST with Kafka's message."""
    group = f"unsupported-{uuid.uuid4().hex[:8]}"
    answer = ask(broker.bootstrap, ApiKey.STREAMS_GROUP_HEARTBEAT, 0, streams_join(group, **changes), 10.0)
    assert (answer["error_code"], answer["error_message"]) == (ErrorCode.INVALID_REQUEST, refusal)


GROUP_RESOURCE = 32
"""ConfigResource type of a group (KIP-848's group configs)."""


def test_a_new_group_waits_its_initial_rebalance_delay(broker: RunningBroker, admin: Driver) -> None:
    """With the group config ``streams.initial.rebalance.delay.ms`` set (the suite's brokers
    default to 0), a joining member of a new streams group gets no tasks yet and the status
    ASSIGNMENT_DELAYED with Kafka's message."""
    group = f"delayed-{uuid.uuid4().hex[:8]}"
    source = f"{group}-words"
    admin.create_topic(source, PARTITIONS)
    altered = ask(
        broker.bootstrap,
        ApiKey.INCREMENTAL_ALTER_CONFIGS,
        1,
        {
            "resources": [
                {
                    "resource_type": GROUP_RESOURCE,
                    "resource_name": group,
                    "configs": [
                        {
                            "name": "streams.initial.rebalance.delay.ms",
                            "config_operation": 0,
                            "value": "60000",
                        }
                    ],
                }
            ],
            "validate_only": False,
        },
        10.0,
    )
    assert altered["responses"][0]["error_code"] == ErrorCode.NONE, altered
    join = streams_join(group, source)

    def joined() -> dict[str, object]:
        find_coordinator(broker.bootstrap, group)
        answer = ask(broker.bootstrap, ApiKey.STREAMS_GROUP_HEARTBEAT, 0, join, 10.0)
        assert answer["error_code"] == ErrorCode.NONE, answer  # NOT_COORDINATOR while it loads
        return answer

    answer = eventually(joined, START_S)
    assert answer["active_tasks"] == []
    statuses = [(s["status_code"], s["status_detail"]) for s in answer["status"] or ()]
    assert statuses == [(5, "Assignment delayed due to the configured initial rebalance delay.")]

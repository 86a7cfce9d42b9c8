"""Client metrics (KIP-714): Kafka's ``kafka-client-metrics`` tool and the Java client's pushes.

Operators manage metrics subscriptions with ``kafka-client-metrics`` (the main class
``org.apache.kafka.tools.ClientMetricsCommand`` of the kafka-tools jar), which uses
ListConfigResources, DescribeConfigs and IncrementalAlterConfigs on CLIENT_METRICS resources;
its output is compared line for line. A Java client with ``enable.metrics.push`` then gets a
subscription (the instance id the broker assigned proves GetTelemetrySubscriptions) and pushes
its metrics, which both brokers log per push: Apache Kafka through the suite's
``TelemetryRecorder`` exporter (without an exporter Kafka does not serve client telemetry at
all), Odradek at DEBUG.

These scenarios start their own broker, once per module: Kafka needs the exporter configured,
Odradek the DEBUG log, and both a log this process can read.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from compat_tests.helpers import eventually
from compat_tests.kafka_tools import ToolRun, run_tool
from compat_tests.kit.brokers import (
    TELEMETRY_REPORTER,
    RunningBroker,
    kafka_tools_jars,
    start_apache_kafka,
    start_odradek,
)
from compat_tests.kit.drivers.java import JavaDriver
from compat_tests.maven import classpath
from compat_tests.pools import JAVA_CLIENTS, DriverPool


@pytest.fixture(scope="module")
def telemetry_broker(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RunningBroker]:
    if request.config.getoption("--bootstrap") is not None:
        pytest.skip("reads the broker's log: drop --bootstrap to let the suite start the broker")
    workdir = tmp_path_factory.mktemp("telemetry-broker")
    if request.config.getoption("--broker") == "apache-kafka":
        broker = start_apache_kafka(workdir, TELEMETRY_REPORTER)
    else:
        broker = start_odradek(workdir, log_level="DEBUG")
    try:
        yield broker
    finally:
        broker.stop()


def client_metrics_tool(broker: RunningBroker, *args: str) -> ToolRun:
    """``kafka-client-metrics --bootstrap-server BROKER ARGS`` from the kafka-tools jar, in the
    suite's tool runner (:func:`compat_tests.kafka_tools.run_tool`: one JVM for every tool)."""
    return run_tool(
        classpath(kafka_tools_jars()), broker.bootstrap, "org.apache.kafka.tools.ClientMetricsCommand", *args
    )


def listed(broker: RunningBroker) -> list[str]:
    result = client_metrics_tool(broker, "--list")
    assert result.code == 0, result.out + result.err
    return result.out.split()


def test_kafka_client_metrics_alters_describes_lists_and_deletes(telemetry_broker: RunningBroker) -> None:
    name = f"compat-tool-{uuid.uuid4().hex[:8]}"
    altered = client_metrics_tool(
        telemetry_broker,
        "--alter",
        "--name",
        name,
        "--metrics",
        "org.apache.kafka.producer.,org.apache.kafka.consumer.",
        "--interval",
        "1000",
        "--match",
        "client_id=nobody-here,client_software_name=apache-kafka-java",
    )
    assert (altered.code, altered.out) == (0, f"Altered client metrics config for {name}.\n")
    assert name in listed(telemetry_broker)
    described = client_metrics_tool(telemetry_broker, "--describe", "--name", name)
    assert described.out == (
        f"Client metrics configs for {name} are:\n"
        "  interval.ms=1000\n"
        "  match=client_id=nobody-here,client_software_name=apache-kafka-java\n"
        "  metrics=org.apache.kafka.producer.,org.apache.kafka.consumer.\n"
    )

    refused = client_metrics_tool(telemetry_broker, "--alter", "--name", name, "--interval", "50")
    assert (refused.code, refused.out) == (
        1,
        "Error while executing client metrics command : Invalid value 50 for interval.ms, "
        "interval must be between 100 and 3600000 (1 hour)\n",
    )
    illegal = client_metrics_tool(telemetry_broker, "--alter", "--name", name, "--match", "nonsense=1")
    assert (illegal.code, illegal.out) == (
        1,
        "Error while executing client metrics command : Illegal client matching pattern: nonsense=1\n",
    )
    reset = client_metrics_tool(telemetry_broker, "--alter", "--name", name, "--interval", "")
    assert reset.code == 0, reset.out + reset.err
    assert "  interval.ms=300000\n" in client_metrics_tool(telemetry_broker, "--describe", "--name", name).out

    deleted = client_metrics_tool(telemetry_broker, "--delete", "--name", name)
    assert (deleted.code, deleted.out) == (0, f"Deleted client metrics config for {name}.\n")
    assert name not in listed(telemetry_broker)
    gone = client_metrics_tool(telemetry_broker, "--describe", "--name", name)
    assert gone.out == f"The client metric resource {name} doesn't exist and doesn't have dynamic config.\n"


def test_java_client_pushes_its_metrics(
    client: str, telemetry_broker: RunningBroker, drivers: DriverPool
) -> None:
    """With a subscription matching its client id, a Java producer gets an instance id and pushes."""
    if client not in JAVA_CLIENTS:
        pytest.skip(f"{client}: the driver exposes no client telemetry (KIP-714) instance id")
    driver = drivers.get(client, telemetry_broker.bootstrap)
    assert isinstance(driver, JavaDriver)
    client_id = f"compat-telemetry-{uuid.uuid4().hex[:8]}"
    topic = f"{client_id}-topic"
    drivers.get("confluent-kafka", telemetry_broker.bootstrap).create_topic(topic, 1)
    subscribed = client_metrics_tool(
        telemetry_broker,
        "--alter",
        "--name",
        client_id,
        "--metrics",
        "*",
        "--interval",
        "500",
        "--match",
        f"client_id={client_id}",
    )
    assert subscribed.code == 0, subscribed.out + subscribed.err
    producer = driver.telemetry_producer(client_id, topic)
    try:
        line = f"client telemetry pushed by client instance {producer.instance_id}: "

        def pushed_twice() -> None:
            pushes = [entry for entry in telemetry_broker.log_tail(100_000).splitlines() if line in entry]
            assert len(pushes) >= 2, f"{len(pushes)} pushes of {producer.instance_id} in the broker log"

        eventually(pushed_twice)
    finally:
        producer.close()
        client_metrics_tool(telemetry_broker, "--delete", "--name", client_id)

"""Spark's Kafka source reads from a SASL_SSL listener, configured as a Spark user would: the
client's Kafka keys with Spark's ``kafka.`` prefix (``kafka.security.protocol``,
``kafka.sasl.mechanism``, ``kafka.sasl.jaas.config``, a PEM truststore).

The broker is the compat suite's secured broker (:mod:`compat_tests.kit.secured`: a throwaway CA,
the same ``server.properties`` keys for Odradek and Apache Kafka), started for this module
with ``--broker``'s kind; records are written over its plaintext listener and read by Spark
over SASL_SSL, where a client that ignored the security options could not even connect. PLAIN
logs in as a user of the broker's JAAS line, SCRAM-SHA-512 as one made with ``odradek users``.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession

from compat_tests.kit.brokers import RunningBroker, odradek_cli
from compat_tests.kit.secured import PLAIN_USERS, ClientSecurity, TlsFiles, start_secured_broker
from spark_integration.publish import create_topic
from spark_integration.tests.support import numbered_records, produce, spark_records


@pytest.fixture(scope="module")
def secured(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[RunningBroker, TlsFiles]]:
    broker, files = start_secured_broker(request, tmp_path_factory)
    try:
        yield broker, files
    finally:
        broker.stop()


def _scram_user(broker: RunningBroker) -> ClientSecurity:
    """A SCRAM-SHA-512 user made for the test with ``odradek users set`` (any broker's admin API)."""
    user = f"spark-{uuid.uuid4().hex[:6]}"
    made = odradek_cli(
        "users",
        "set",
        user,
        "--mechanism",
        "SCRAM-SHA-512",
        "--bootstrap",
        broker.bootstrap,
        stdin="spark-secret\n",
    )
    assert made.returncode == 0, made.stderr
    return ClientSecurity("SASL_SSL", "SCRAM-SHA-512", user, "spark-secret")


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-512"])
def test_batch_read_over_sasl_ssl(
    spark: SparkSession, secured: tuple[RunningBroker, TlsFiles], mechanism: str
) -> None:
    broker, files = secured
    if mechanism == "PLAIN":
        security = ClientSecurity("SASL_SSL", "PLAIN", "alice", PLAIN_USERS["alice"])
    else:  # made first: Kafka applies a new credential a moment after answering
        security = _scram_user(broker)
    topic = f"spark-secured-{uuid.uuid4().hex[:10]}"
    create_topic(broker.bootstrap, topic, 2)
    produced = produce(broker.bootstrap, topic, numbered_records(20, partitions=2))
    client = {f"kafka.{key}": value for key, value in security.java(files).items()}
    assert set(client) == {
        "kafka.security.protocol",
        "kafka.ssl.truststore.type",
        "kafka.ssl.truststore.location",
        "kafka.sasl.mechanism",
        "kafka.sasl.jaas.config",
    }

    frame = (
        spark.read.format("kafka")
        .option("kafka.bootstrap.servers", broker.addresses["SASL_SSL"])
        .options(**client)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .option("endingOffsets", "latest")
        .load()
    )

    assert spark_records(frame) == produced

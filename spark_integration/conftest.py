"""Fixtures for the Spark tests: one broker and one SparkSession for the whole run.

Starting a JVM with the Kafka connector takes tens of seconds on this machine, so the session is
shared and every test isolates itself with its own freshly named topics and directories.

Under pytest-xdist every test that uses the SparkSession is put in one ``xdist_group`` (run with
``--dist loadgroup``, as CI does), so one worker starts one Spark JVM for all of them instead of
each worker starting its own.

Broker choice: ``--bootstrap HOST:PORT`` uses a running broker; otherwise ``--broker`` starts one
through :mod:`compat_tests.kit.brokers` (Odradek by default, ``apache-kafka`` for the reference).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator

import pytest
from pyspark.sql import SparkSession

from compat_tests.kit.brokers import BROKER_KINDS, running_broker
from spark_integration.publish import create_topic
from spark_integration.session import build_session


def pytest_addoption(parser: pytest.Parser) -> None:
    """Broker options; tolerated if the compatibility suite already defined the same ones.

    Both suites may be collected in one run, and pytest refuses to register an option twice;
    they mean the same thing in both, so the first definition serves both.
    """
    group = parser.getgroup("spark_integration", "Spark tests")
    for flag, options in {
        "--bootstrap": {
            "default": None,
            "help": "use this running broker (host:port) instead of starting one",
        },
        "--broker": {
            "default": "odradek",
            "choices": sorted(BROKER_KINDS),
            "help": "broker to start when --bootstrap is not given (default: odradek)",
        },
    }.items():
        try:
            group.addoption(flag, **options)
        except ValueError:
            continue


SPARK_GROUP = "spark-session"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests that share the SparkSession share a worker (the mark means nothing without xdist)."""
    for item in items:
        if "spark" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.xdist_group(SPARK_GROUP))


@pytest.fixture(scope="session")
def bootstrap(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The bootstrap address of the broker under test, started for this run if needed."""
    given = request.config.getoption("bootstrap")
    if given:
        yield given
        return
    kind = request.config.getoption("broker")
    with running_broker(kind, tmp_path_factory.mktemp(kind)) as broker:
        yield broker.bootstrap


TEST_CONF = {"spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1"}
"""The tests' Spark driver (the whole local[2] Spark) compiles with C1 only, as the suites' other
JVMs do (``compat_tests.kit.brokers.KAFKA_TEST_JIT``): the tests' jobs are a few hundred records,
and on the loaded two-core machine the session started in 60 s instead of 120-175 s and its first
job ran in 22-26 s instead of 53-67 s. The package's own jobs (``pipeline.py``) keep the full JIT."""


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    """The one SparkSession of the run (local[2], Kafka connector on the classpath)."""
    session = build_session("odradek-spark-tests", TEST_CONF)
    yield session
    for query in session.streams.active:
        query.stop()
    session.stop()


@pytest.fixture
def new_topic(bootstrap: str) -> Callable[..., str]:
    """Create a uniquely named topic (default two partitions) and return its name."""

    def create(partitions: int = 2, prefix: str = "spark") -> str:
        name = f"{prefix}-{uuid.uuid4().hex[:10]}"
        create_topic(bootstrap, name, partitions)
        return name

    return create

"""Build the SparkSession that every job and test of this package uses.

The Kafka source and sink are not part of pyspark: they live in Spark's own connector
``spark-sql-kafka-0-10``, which must be the exact Spark release that runs it (the connector uses
Spark internals that move between minor releases; a 4.0 connector on a 4.3 runtime fails with
``NoSuchMethodError`` as soon as a streaming query starts). So the coordinate is derived from the
installed pyspark and resolved through ``spark.jars.packages`` into an Ivy cache that outlives
the run.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import pyspark
from pyspark.errors import PySparkRuntimeError
from pyspark.sql import SparkSession

from compat_tests.maven import file_lock

IVY_SETTINGS = Path(__file__).with_name("ivysettings.xml")

LOCAL_CONF: Mapping[str, str] = {
    # Two cores are all there is: two task slots, two shuffle partitions (the default 200 would
    # turn every aggregation into 200 near-empty tasks and dominate the run time).
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.driver.memory": "768m",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    # Event times, windows and report days are UTC whatever the machine's zone is.
    "spark.sql.session.timeZone": "UTC",
}


def connector_coordinate() -> str:
    """The Maven coordinate of Spark's Kafka connector built for the installed pyspark."""
    return f"org.apache.spark:spark-sql-kafka-0-10_2.13:{pyspark.__version__}"


def ivy_dir() -> Path:
    """Where resolved connector jars are cached between runs (``$ODRADEK_CACHE/ivy``)."""
    root = Path(os.environ.get("ODRADEK_CACHE") or Path.home() / ".cache" / "odradek")
    return root / "ivy"


def build_session(app_name: str, extra_conf: Mapping[str, str] | None = None) -> SparkSession:
    """Start (or reuse) a local SparkSession with the Kafka connector on its classpath, with
    :data:`LOCAL_CONF` and ``extra_conf`` (the tests' settings).

    Only one SparkContext can live in a JVM, so a second call returns the running session.
    """
    builder = (
        SparkSession.builder.master("local[2]")
        .appName(app_name)
        .config("spark.jars.packages", connector_coordinate())
        .config("spark.jars.ivy", str(ivy_dir()))
        .config("spark.jars.ivySettings", str(IVY_SETTINGS))
    )
    for key, value in {**LOCAL_CONF, **(extra_conf or {})}.items():
        builder = builder.config(key, value)
    try:
        # One Ivy resolution at a time: two JVMs starting at once (parallel test workers, a job
        # beside the tests) would both write the shared Ivy cache; the second then finds it warm.
        with file_lock(ivy_dir().parent / "ivy.lock"):
            session = builder.getOrCreate()
    except PySparkRuntimeError as exc:
        raise RuntimeError(
            f"Spark did not start with {connector_coordinate()}; the JVM output above says why "
            "(UNRESOLVED DEPENDENCIES: that connector release cannot be downloaded; see "
            "spark_integration/README.md, 'The connector')"
        ) from exc
    session.sparkContext.setLogLevel("WARN")
    return session

"""Resolve everything the test suites fetch from Maven Central, once, before they start.

    python -m compat_tests.prepare

Apache Kafka's broker jars (with the compiled telemetry recorder), its command-line tools and
the Java client of every version the suite drives, the share-group client and the Kafka Streams
application go into the cache under ``$ODRADEK_CACHE``
(``compat_tests/maven.py``): each set is resolved by one process under a file lock and marked
complete, so the suites CI then runs side by side, and every pytest-xdist worker in them, find
it ready instead of each waiting for (or repeating) a resolution. Spark's Kafka connector goes
to its own Ivy cache when the first SparkSession starts (``spark_integration/session.py``,
under a lock too). A warm cache makes this a no-op.
"""

from __future__ import annotations

import sys
import time

from compat_tests.kit.brokers import kafka_jvm, kafka_tools_jars
from compat_tests.kit.drivers.java import JAVA_CLIENT_VERSIONS, build_java_client, build_share_client
from compat_tests.kit.drivers.java_share import SHARE_CLIENT_VERSION
from compat_tests.kit.drivers.java_streams import build_streams_app


def main() -> int:
    started = time.monotonic()
    try:
        kafka_jvm()
        kafka_tools_jars()
        for version in JAVA_CLIENT_VERSIONS:
            build_java_client(version)
        build_share_client(SHARE_CLIENT_VERSION)  # the share-group scenarios' client
        build_streams_app()  # the streams-group scenarios' Kafka Streams application
    except RuntimeError as exc:
        print(f"cannot prepare the Java dependencies: {exc}", file=sys.stderr)
        return 1
    print(f"Java dependencies ready in {time.monotonic() - started:.1f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Settings for every test suite of the repository (unit, compatibility and Spark tests).

Under pytest-xdist (CI runs the main suite with ``-n 2``), tests marked ``slow`` (25 s or more
on the 2-core machine) run first, so the longest start at once on the workers instead of
forming the tail of the run while the other workers idle. Nothing is deselected by it.
"""

import pytest

# Fixtures of external services every suite may use (etcd clusters for cluster mode), and each
# test's CPU seconds with the ten most CPU-hungry printed at the end (CI is CPU-bound).
pytest_plugins = ["compat_tests.kit.fixtures", "compat_tests.kit.cpu_report"]


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under xdist, slow tests first, in their collection order; the rest keep theirs (a stable
    sort, the same on every worker, which must collect the same order). A run without workers
    keeps the files' order: the 3-node sessions rely on it (their failover scenarios start on a
    fresh cluster, before the chaos rounds; run after them, Apache Kafka's acks=all refusal
    timed out in two CI runs)."""
    if getattr(config.option, "numprocesses", None) or hasattr(config, "workerinput"):
        items.sort(key=lambda item: item.get_closest_marker("slow") is None)

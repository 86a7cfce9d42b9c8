"""Settings for every test suite of the repository (unit, compatibility and Spark tests).

Tests marked ``slow`` (25 s or more on the 2-core machine) run first. Nothing is deselected by
it: under pytest-xdist (CI runs the main suite with ``-n 2``) the longest tests then start at
once on the workers instead of forming the tail of the run while the other workers idle.
"""

import pytest

# Fixtures of external services every suite may use (etcd clusters for cluster mode).
pytest_plugins = ["compat_tests.kit.fixtures"]


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Slow tests first, in their collection order; the rest keep theirs (a stable sort, the
    same on every xdist worker, which must collect the same order)."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)

"""Pytest fixtures for real etcd clusters (registered for every suite by the root conftest.py).

Without `etcd` on the machine the tests that need it are skipped, except in CI (``CI`` set),
where .ci/run installs it and its absence is a failure, not a silent skip.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from compat_tests.kit.etcd_cluster import EtcdCluster, etcd_binary


def require_etcd() -> None:
    """Skip (or, in CI, fail) a test that needs etcd when it is not installed."""
    if etcd_binary() is not None:
        return
    if os.environ.get("CI"):
        pytest.fail("etcd is not installed but CI is set: .ci/run must install etcd-server")
    pytest.skip("etcd is not installed (apt-get install etcd-server); cluster tests need a real etcd")


@pytest.fixture(scope="module")
def etcd_cluster() -> Iterator[EtcdCluster]:
    """A one-member etcd cluster shared by a module's tests (give each test its own key prefix)."""
    require_etcd()
    with EtcdCluster(1) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def etcd_cluster3() -> Iterator[EtcdCluster]:
    """A three-member etcd cluster shared by a module's tests; a test that kills a member restarts it."""
    require_etcd()
    with EtcdCluster(3) as cluster:
        yield cluster

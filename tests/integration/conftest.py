"""Fixtures that run a real broker process for integration tests through stock clients."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from compat_tests.kit.broker_process import OdradekProcess


@pytest.fixture
def odradek_broker(tmp_path: Path) -> Iterator[OdradekProcess]:
    """A fresh broker for one test (its own port and data directory)."""
    with OdradekProcess(tmp_path / "broker") as broker:
        yield broker


@pytest.fixture(scope="module")
def shared_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OdradekProcess]:
    """One broker shared by a module's tests (each test uses its own topics)."""
    with OdradekProcess(tmp_path_factory.mktemp("shared-broker")) as broker:
        yield broker

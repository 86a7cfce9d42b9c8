"""LogManager: discovery, creation across log directories, deletion."""

from __future__ import annotations

import os

import pytest

from log import LogConfig, LogManager
from log.manager import parse_partition_dir
from tests.log.conftest import append, produced_batch


def test_parse_partition_dir() -> None:
    assert parse_partition_dir("orders-3") == ("orders", 3)
    assert parse_partition_dir("my-topic-12") == ("my-topic", 12)
    assert parse_partition_dir("__consumer_offsets-49") == ("__consumer_offsets", 49)
    for name in ("orders", "orders-x", "-1", "orders-3.abc-future", "lost+found"):
        assert parse_partition_dir(name) is None


def test_create_discover_and_delete(tmp_path) -> None:
    dirs = [os.fspath(tmp_path / "a"), os.fspath(tmp_path / "b")]
    configs: list[str] = []

    def config_for(topic: str) -> LogConfig:
        configs.append(topic)
        return LogConfig(segment_bytes=1024)

    manager = LogManager(dirs, config_for)
    assert manager.get("t", 0) is None
    logs = [manager.get_or_create("t", p) for p in range(4)]
    assert manager.get_or_create("t", 0) is logs[0]
    assert {os.path.dirname(log.directory) for log in logs} == set(dirs), "spread over log dirs"
    for log in logs:
        append(log, produced_batch(count=3))
    assert logs[0].config.segment_bytes == 1024 and configs == ["t"] * 4
    manager.close()

    os.makedirs(os.path.join(dirs[0], "gone-0.0123abcd-delete"))
    os.makedirs(os.path.join(dirs[1], "not a partition"))
    manager = LogManager(dirs, config_for)
    assert not os.path.exists(os.path.join(dirs[0], "gone-0.0123abcd-delete"))
    assert sorted(key for key, _ in manager.partitions()) == [("t", p) for p in range(4)]
    assert manager.get("t", 2).log_end_offset == 3

    directory = manager.get("t", 1).directory
    assert manager.delete("t", 1)
    assert not manager.delete("t", 1)
    assert not os.path.exists(directory)
    assert not any(name.endswith("-delete") for d in dirs for name in os.listdir(d))
    assert manager.get_or_create("t", 1).log_end_offset == 0, "a re-created partition starts empty"
    manager.checkpoint()
    manager.close()


def test_duplicate_partition_across_dirs_is_refused(tmp_path) -> None:
    for d in ("a", "b"):
        os.makedirs(tmp_path / d / "t-0")
    with pytest.raises(RuntimeError, match="two log directories"):
        LogManager([os.fspath(tmp_path / "a"), os.fspath(tmp_path / "b")], lambda topic: LogConfig())

"""Deleting partitions: Kafka's ``-delete`` names stay legal for 249-character topic names,
and nothing of a deleted partition can come back, whether a deletion failed or was cut short.
"""

from __future__ import annotations

import errno
import os

import pytest

from log import LogConfig, LogManager
from log.deletion import MAX_NAME_BYTES, deletion_name
from tests.log.conftest import append, produced_batch

LONGEST_TOPIC = "t" * 249  # Kafka's limit on topic names


@pytest.mark.parametrize("partition", [0, 7, 99_999])
def test_deletion_names_fit_in_255_bytes_by_truncating_the_topic(partition: int) -> None:
    name = deletion_name(f"{LONGEST_TOPIC}-{partition}")
    stem, _, unique = name.removesuffix("-delete").rpartition(".")
    assert len(name.encode()) == MAX_NAME_BYTES and name.endswith("-delete")
    assert stem.endswith(f"-{partition}") and LONGEST_TOPIC.startswith(stem.removesuffix(f"-{partition}"))
    assert len(unique) == 32 and int(unique, 16) >= 0


def test_short_names_are_kept_whole_and_unique() -> None:
    first, second = deletion_name("orders-3"), deletion_name("orders-3")
    assert first.startswith("orders-3.") and first.endswith("-delete") and first != second


def test_a_partition_of_the_longest_topic_name_is_deleted(tmp_path) -> None:
    manager = LogManager([os.fspath(tmp_path)], lambda topic: LogConfig())
    append(manager.get_or_create(LONGEST_TOPIC, 0), produced_batch())
    assert manager.delete(LONGEST_TOPIC, 0)
    assert os.listdir(tmp_path) == []
    assert manager.get_or_create(LONGEST_TOPIC, 0).log_end_offset == 0
    manager.close()


def test_a_directory_left_by_a_failed_deletion_does_not_come_back(tmp_path, monkeypatch, caplog) -> None:
    manager = LogManager([os.fspath(tmp_path)], lambda topic: LogConfig())
    append(manager.get_or_create("t", 0), produced_batch())
    real_replace = os.replace

    def failing_replace(source: str, target: str) -> None:
        raise OSError(errno.EIO, "Input/output error", source)

    monkeypatch.setattr(os, "replace", failing_replace)
    assert manager.delete("t", 0)
    assert "EIO" in caplog.text and os.listdir(tmp_path) == ["t-0"]
    monkeypatch.setattr(os, "replace", real_replace)
    assert manager.get_or_create("t", 0).log_end_offset == 0, "the old records stay deleted"
    manager.close()


def test_start_up_removes_interrupted_deletions_of_long_names(tmp_path) -> None:
    manager = LogManager([os.fspath(tmp_path)], lambda topic: LogConfig())
    append(manager.get_or_create(LONGEST_TOPIC, 0), produced_batch())
    manager.close()
    leftover = tmp_path / deletion_name(f"{LONGEST_TOPIC}-0")
    os.rename(tmp_path / f"{LONGEST_TOPIC}-0", leftover)  # a crash right after the rename
    manager = LogManager([os.fspath(tmp_path)], lambda topic: LogConfig())
    assert os.listdir(tmp_path) == [] and manager.get(LONGEST_TOPIC, 0) is None
    manager.close()

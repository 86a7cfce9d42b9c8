"""The bounded LRU of segment descriptors (``log.open_files``) and what the logs build on it.

Real files and real descriptors throughout: descriptor counts are read from ``/proc/self/fd``.
"""

from __future__ import annotations

import errno
import logging
import os
import threading
from pathlib import Path

import pytest

from log import KafkaStorageError, LogConfig, PartitionLog, open_files
from log.manager import LogManager
from log.open_files import LazyFile, OpenFiles
from tests.log.conftest import append, produced_batch
from wire.record_batch import decode_records, scan_batches

CAPACITY = 4


def open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.fixture
def files() -> OpenFiles:
    return OpenFiles(CAPACITY)


@pytest.fixture
def small_lru(monkeypatch: pytest.MonkeyPatch) -> OpenFiles:
    """A broker-wide LRU of ``CAPACITY`` for one test (a fresh one: logs other tests left
    unclosed may hold pinned files in the real one)."""
    lru = OpenFiles(CAPACITY)
    monkeypatch.setattr(open_files, "OPEN_FILES", lru)
    return lru


def lazy_files(directory: Path, files: OpenFiles, count: int) -> list[LazyFile]:
    """``count`` new files, each holding its own number."""
    made = []
    for n in range(count):
        file = LazyFile(str(directory / f"f{n}"), files)
        os.pwrite(file.create(), b"%d" % n, 0)
        made.append(file)
    return made


def test_descriptors_stay_within_capacity_and_evicted_files_reopen(tmp_path: Path, files: OpenFiles) -> None:
    before = open_descriptors()
    made = lazy_files(tmp_path, files, 10)
    assert files.open_count == CAPACITY
    assert open_descriptors() - before == CAPACITY
    assert [os.pread(f.fd, 8, 0) for f in reversed(made)] == [b"%d" % n for n in reversed(range(10))]
    assert open_descriptors() - before == CAPACITY
    assert files.opens == 10 + 10 - CAPACITY, "the last four were still open when read again"


def test_the_least_recently_used_file_is_the_one_closed(tmp_path: Path, files: OpenFiles) -> None:
    first, *rest = lazy_files(tmp_path, files, CAPACITY)
    assert first.fd >= 0  # now the most recently used
    LazyFile(str(tmp_path / "new"), files).create()
    assert first.is_open and not rest[0].is_open


def test_a_pinned_file_keeps_its_descriptor(tmp_path: Path, files: OpenFiles) -> None:
    (pinned,) = lazy_files(tmp_path, files, 1)
    with pinned.pinned() as fd:
        inode = os.fstat(fd).st_ino
        for n in range(3 * CAPACITY):
            LazyFile(str(tmp_path / f"other{n}"), files).create()
        assert pinned.fd == fd and os.fstat(fd).st_ino == inode
        assert files.open_count == CAPACITY
    for n in range(CAPACITY):
        LazyFile(str(tmp_path / f"after{n}"), files).create()
    assert not pinned.is_open, "unpinned, it is evictable again"


def test_a_file_a_worker_thread_opened_stays_open_until_released(tmp_path: Path, files: OpenFiles) -> None:
    worker_file = LazyFile(str(tmp_path / "built-by-worker"), files)
    thread = threading.Thread(target=worker_file.create)
    thread.start()
    thread.join()
    fd = worker_file._fd
    for n in range(3 * CAPACITY):
        LazyFile(str(tmp_path / f"main{n}"), files).create()
    assert worker_file.is_open and worker_file._fd == fd, "the main thread must not close it under the worker"
    worker_file.release()
    assert not worker_file.is_open
    assert os.fstat(worker_file.fd).st_size == 0, "a released file reopens on use"


def test_a_closed_file_is_never_reopened(tmp_path: Path, files: OpenFiles) -> None:
    (file,) = lazy_files(tmp_path, files, 1)
    file.close()
    with pytest.raises(OSError) as raised:
        file.fd  # noqa: B018
    assert raised.value.errno == errno.EBADF


def test_an_evicted_file_reopens_under_its_new_name(tmp_path: Path, files: OpenFiles) -> None:
    (file,) = lazy_files(tmp_path, files, 1)
    os.rename(file.path, tmp_path / "renamed")
    file.path = str(tmp_path / "renamed")
    for n in range(CAPACITY):
        LazyFile(str(tmp_path / f"other{n}"), files).create()
    assert not file.is_open
    assert os.pread(file.fd, 8, 0) == b"0"


def test_an_evicted_file_is_not_recreated(tmp_path: Path, files: OpenFiles) -> None:
    (file,) = lazy_files(tmp_path, files, 1)
    file.release()
    os.unlink(file.path)
    with pytest.raises(FileNotFoundError):
        file.fd  # noqa: B018
    assert not os.path.exists(file.path)


def test_many_partition_logs_work_within_the_bound(tmp_path: Path, small_lru: OpenFiles) -> None:
    config = LogConfig(segment_bytes=1024, index_interval_bytes=128)
    logs = [PartitionLog.open(os.fspath(tmp_path / f"t-{n}"), config) for n in range(12)]
    for round_ in range(6):
        for n, log in enumerate(logs):
            append(log, produced_batch(count=2, value_size=100 + n + round_))
            assert small_lru.open_count <= CAPACITY
    for n, log in enumerate(logs):
        assert len(log.segment_base_offsets) > 1, "rolled: several segments per log"
        assert log.log_end_offset == 12
        for round_, offset in enumerate(range(0, 12, 2)):
            data = log.read(offset, 1)
            (batch,) = scan_batches(data, from_client=False)
            records = decode_records(data, batch)
            assert [(r.offset, len(r.value)) for r in records] == [
                (offset + i, 100 + n + round_) for i in (0, 1)
            ]
            assert small_lru.open_count <= CAPACITY
    for log in logs:
        log.close()


@pytest.mark.usefixtures("small_lru")
def test_a_file_slice_reads_its_own_file_after_its_descriptor_was_evicted(tmp_path: Path) -> None:
    config = LogConfig()
    first, *others = [PartitionLog.open(os.fspath(tmp_path / f"t-{n}"), config) for n in range(6)]
    append(first, produced_batch(value_size=50))
    (located,) = first.read_slices(0, 10**6)
    for other in others:  # what a Fetch of several partitions does before sending any of them
        append(other, produced_batch(value_size=60))
        other.read_slices(0, 10**6)
    assert not located.file.is_open, "evicted meanwhile: a raw descriptor could now be another file"
    assert os.pread(located.fd, located.length, located.position) == first.read(0, 10**6)
    for log in (first, *others):
        log.close()


def test_start_up_serves_what_opens_and_reports_what_does_not(tmp_path: Path, caplog) -> None:
    config = LogConfig()
    good = PartitionLog.open(os.fspath(tmp_path / "t-0"), config)
    append(good, produced_batch())
    good.close()
    os.makedirs(tmp_path / "t-1" / "00000000000000000000.log")  # a directory where data belongs
    (tmp_path / "t-2").write_bytes(b"a file where a partition directory belongs")
    with caplog.at_level(logging.ERROR, logger="log.manager"):
        manager = LogManager([os.fspath(tmp_path)], lambda topic: config)
    try:
        assert manager.get("t", 0).is_online and manager.get("t", 0).log_end_offset == 1
        for partition, errno_name in ((1, "EISDIR"), (2, "EEXIST")):
            offline = manager.get("t", partition)
            assert not offline.is_online
            with pytest.raises(KafkaStorageError):
                append(offline, produced_batch())
            assert any(
                f"t-{partition}" in r.getMessage() and errno_name in r.getMessage() for r in caplog.records
            ), caplog.text
    finally:
        manager.close()

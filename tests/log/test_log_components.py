"""The components ``PartitionLog`` is built from, each with only the parts it is given.

``PartitionLog``'s own tests cover them through the facade; these pin down what each one owns,
so that a change to one is caught where it is made: the segment list (``LocalLog``), the high
watermark, the state of service, the checkpoint file, the truncation guard of data syncs and the
cleaning claim.
"""

from __future__ import annotations

import errno
import logging
import os
from collections.abc import Iterator

import pytest

from log import KafkaStorageError, LogConfig, PartitionLog
from log.availability import Availability
from log.checkpoint import CHECKPOINT_FILE, PartitionCheckpoint
from log.checkpoint_writer import CheckpointWriter
from log.cleaning_claim import CleaningClaim
from log.flusher import Flusher
from log.high_watermark import HighWatermark
from log.loader import close_all, load
from log.local_log import LocalLog
from tests.log.conftest import BASE_TS, append, produced_batch

CONFIG = LogConfig(segment_bytes=1024, index_interval_bytes=256, file_delete_delay_ms=1000)
BATCHES = 20


@pytest.fixture
def local(log_dir: str) -> Iterator[LocalLog]:
    """A LocalLog over ``BATCHES`` one-record batches written to several segments."""
    written = PartitionLog.open(log_dir, CONFIG)
    for _ in range(BATCHES):
        append(written, produced_batch(value_size=200))
    written.close()
    loaded = load(log_dir, CONFIG, BASE_TS)
    local = LocalLog(log_dir, CONFIG)
    local.start_from(loaded.segments, loaded.log_start_offset, loaded.recovery_point, loaded.epochs)
    yield local
    close_all(local.segments + [segment for _, segment in local.deleted])


# --------------------------------------------------------------------------------------------
# LocalLog


def test_the_local_log_finds_the_segment_and_batch_of_every_offset(local: LocalLog) -> None:
    assert len(local.segments) > 2 and local.log_end_offset == BATCHES
    for offset in range(BATCHES):
        index = local.index_for(offset)
        segment = local.segments[index]
        assert segment.base_offset <= offset < segment.next_offset
        assert local.holds(segment, offset) and not local.holds(local.segments[index - 1], offset)
        mark = local.mark_at(offset)
        assert (mark.offset, mark.segment, mark.position) == (
            offset,
            segment,
            segment.find_batch(offset).position,
        )
    end = local.end_mark()
    assert (end.offset, end.segment, end.position) == (BATCHES, local.segments[-1], local.segments[-1].size)


def test_removed_segments_keep_their_files_until_the_delete_delay_has_passed(local: LocalLog) -> None:
    first, second = local.segments[0], local.segments[1]
    local.remove([first], BASE_TS)
    assert local.segments[0] is second and local.bases[0] == second.base_offset
    assert first.log_path.endswith(".deleted") and os.path.exists(first.log_path)
    assert local.next_purge_ms == BASE_TS + CONFIG.file_delete_delay_ms
    local.purge_deleted(BASE_TS + CONFIG.file_delete_delay_ms - 1)
    assert os.path.exists(first.log_path)
    local.purge_deleted(BASE_TS + CONFIG.file_delete_delay_ms)
    assert not os.path.exists(first.log_path) and local.next_purge_ms is None


def test_restarting_the_local_log_leaves_one_empty_segment_at_the_offset(local: LocalLog) -> None:
    old = list(local.segments)
    local.restart_at(1000, BASE_TS)
    assert local.bases == [1000] and local.log_end_offset == 1000 and local.size_in_bytes == 0
    assert all(segment.log_path.endswith(".deleted") for segment in old)


# --------------------------------------------------------------------------------------------
# HighWatermark


def test_the_high_watermark_stops_at_appends_waiting_for_a_sync(local: LocalLog) -> None:
    high_watermark = HighWatermark(local)
    assert high_watermark.offset == BATCHES and high_watermark.visible_limit() is None
    high_watermark.last_append = local.mark_at(15)
    high_watermark.hide_last_append()
    high_watermark.last_append = local.mark_at(18)
    high_watermark.hide_last_append()  # the first waiting append still bounds what is visible
    assert high_watermark.offset == 15 and high_watermark.visible_limit() == local.mark_at(15)
    high_watermark.reveal(local.mark_at(17))  # a sync that covered the first only
    assert high_watermark.offset == 17
    high_watermark.reveal(local.end_mark())
    assert high_watermark.offset == BATCHES


def test_the_replicated_high_watermark_is_clamped_to_the_log(local: LocalLog) -> None:
    high_watermark = HighWatermark(local)
    high_watermark.set_replicated(7)
    assert high_watermark.offset == 7 and high_watermark.visible_limit() == local.mark_at(7)
    high_watermark.set_replicated(10 * BATCHES)
    assert high_watermark.replicated == BATCHES
    local.log_start_offset = 3
    high_watermark.set_replicated(0)
    assert high_watermark.replicated == 3
    high_watermark.set_replicated(None)
    assert high_watermark.offset == BATCHES


def test_a_truncation_forgets_marks_past_the_new_end(local: LocalLog) -> None:
    high_watermark = HighWatermark(local)
    high_watermark.last_append = local.mark_at(15)
    high_watermark.hide_last_append()
    high_watermark.set_replicated(18)
    local.remove(local.segments[local.index_for(14) + 1 :], BASE_TS)
    local.segments[-1].truncate_to(14)
    end = local.log_end_offset
    assert end == 14
    high_watermark.after_truncation(end)
    assert high_watermark.last_append is None and high_watermark.replicated == end == high_watermark.offset


# --------------------------------------------------------------------------------------------
# Availability


def test_a_disk_error_is_logged_once_under_the_logger_given(caplog: pytest.LogCaptureFixture) -> None:
    availability = Availability("/data/t-0", logging.getLogger("a.partition"))
    availability.check_online()
    with caplog.at_level(logging.DEBUG, logger="a.partition"):
        error = availability.went_offline(OSError(errno.EIO, "Input/output error"), "/data/t-0/0.log")
        availability.went_offline(OSError(errno.EIO, "Input/output error"))
    assert isinstance(error, KafkaStorageError) and not availability.is_online
    assert [(r.name, r.levelname) for r in caplog.records] == [
        ("a.partition", "ERROR"),
        ("a.partition", "DEBUG"),
    ]
    assert "EIO" in caplog.records[0].getMessage() and "/data/t-0/0.log" in caplog.records[0].getMessage()
    with pytest.raises(KafkaStorageError, match="offline after a disk error"):
        availability.check_online()
    availability.offline, availability.closed = None, True
    with pytest.raises(KafkaStorageError, match="is closed"):
        availability.check_online()


# --------------------------------------------------------------------------------------------
# CheckpointWriter


def test_the_checkpoint_is_rewritten_only_when_what_it_says_changes(local: LocalLog) -> None:
    path = os.path.join(local.directory, CHECKPOINT_FILE)
    writer = CheckpointWriter(local, HighWatermark(local))
    writer.start_from(PartitionCheckpoint.read(local.directory), True, 0)
    writer.mark_unclean()
    assert PartitionCheckpoint.read(local.directory) == PartitionCheckpoint(0, BATCHES, False, 0, -1)
    assert not writer.clean_on_disk
    os.remove(path)
    writer.write(clean_shutdown=False)
    assert not os.path.exists(path), "nothing changed: nothing written"
    local.log_start_offset, writer.first_dirty_offset = 4, 9
    writer.write(clean_shutdown=False)
    assert PartitionCheckpoint.read(local.directory) == PartitionCheckpoint(4, BATCHES, False, 9, -1)


# --------------------------------------------------------------------------------------------
# Flusher


def test_a_data_sync_begun_before_a_truncation_claims_nothing(local: LocalLog) -> None:
    flusher = Flusher(local, Availability(local.directory, logging.getLogger(__name__)), fsyncs=0)
    started = flusher.begin_data_sync()
    assert started is not None and started.target == BATCHES
    flusher.lower_to(5)
    flusher.end_data_sync(started, None)
    assert (flusher.synced_offset, local.recovery_point, flusher.fsyncs) == (5, 5, 1)
    started = flusher.begin_data_sync()
    assert started is not None
    flusher.end_data_sync(started, None)
    assert flusher.synced_offset == BATCHES and flusher.synced_past_recovery_point


# --------------------------------------------------------------------------------------------
# CleaningClaim


def test_a_truncation_during_a_cleaning_pass_makes_its_end_stale(local: LocalLog) -> None:
    claim = CleaningClaim(local, Availability(local.directory, logging.getLogger(__name__)), lambda: BASE_TS)
    assert claim.begin() and not claim.begin(), "one pass at a time"
    with claim.stopped():
        assert claim.aborted.is_set() and claim.lock.locked()
    assert claim.release(12) is None and not claim.aborted.is_set()
    assert claim.begin()
    assert claim.release(12) == 12 and not claim.active
    with claim.stopped():  # no pass: nothing to stop
        assert not claim.aborted.is_set()

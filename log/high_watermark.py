"""What consumers may read up to -- the high watermark -- and where in the files their reads stop.

On a single node the high watermark is the log end, except while appends wait for the sync
their acknowledgement needs (``flush.messages``): they stay invisible to consumers until it is
done (the high watermark stops at the first of them), as Kafka moves its high watermark only
after the flush an append triggered, so nothing read can vanish in a power cut.  A clustered
partition's high watermark is the one its leader computed (``set_replicated``): consumers then
read below the smaller of it and the sync limit, and followers read past it (``limit_at``).

Reads stop at a ``SyncMark`` (an offset and its place in a segment) rather than an offset, so
that cutting a read short costs a comparison of positions, not an index lookup per read.
"""

from __future__ import annotations

from log.local_log import LocalLog, SyncMark


class HighWatermark:
    """The high watermark of one log and the read limits that follow from it."""

    def __init__(self, local: LocalLog) -> None:
        self._local = local
        # A clustered partition's high watermark as replication computed it; None on a single
        # node, where the log end (less what waits for a sync) is the high watermark.
        self.replicated: int | None = None
        self._replicated_mark: SyncMark | None = None  # where ``replicated`` is in the files
        self.last_append: SyncMark | None = None  # where the newest append starts
        self._hidden: SyncMark | None = None  # the first append waiting for its sync
        self._hidden_until = 0  # the end of the last one

    @property
    def offset(self) -> int:
        """What consumers may read up to: the log end, except appends still waiting for the sync
        their acknowledgement needs (``hide_last_append``), and in a cluster at most the
        replicated high watermark."""
        synced = self._hidden.offset if self._hidden is not None else self._local.log_end_offset
        replicated = self.replicated
        return synced if replicated is None else min(synced, replicated)

    def set_replicated(self, offset: int | None) -> None:
        """Set the high watermark replication computed (the leader: the smallest log end in
        the ISR; a follower: its leader's), clamped to [log start, log end] as Kafka's
        updateHighWatermark does; None returns to single-node behaviour.  It is checkpointed
        with the partition and restored, clamped, at open."""
        if offset is not None:
            local = self._local
            offset = min(max(offset, local.log_start_offset), local.log_end_offset)
        self.replicated = offset

    # ----------------------------------------------------------------------------------------
    # Read limits

    def visible_limit(self) -> SyncMark | None:
        """Where consumers' reads stop in the files (None: the log end): see ``offset``."""
        hidden, replicated = self._hidden, self.replicated
        if replicated is None or replicated >= (
            hidden.offset if hidden is not None else self._local.log_end_offset
        ):
            return hidden
        mark = self._replicated_mark
        if mark is None or mark.offset != replicated or not self._local.holds(mark.segment, replicated):
            mark = self._replicated_mark = self._local.mark_at(replicated)
        return mark

    def limit_at(self, offset: int) -> SyncMark | None:
        """A read limit at ``offset`` (None at or past the log end): a leader serving a
        follower reads up to its log end, past the high watermark."""
        return None if offset >= self._local.log_end_offset else self._local.mark_at(offset)

    # ----------------------------------------------------------------------------------------
    # Appends waiting for a sync

    def hide_last_append(self) -> None:
        """The newest append waits for a sync: keep it, and all after it, from consumers until
        ``reveal`` is given a mark at or past its end."""
        if self._hidden is None:
            self._hidden = self.last_append
        self._hidden_until = self._local.log_end_offset

    def reveal(self, mark: SyncMark) -> None:
        """A sync that started when the log ended at ``mark`` has completed: consumers may read
        up to it."""
        if self._hidden is None:
            return
        if self._hidden_until <= mark.offset:
            self._hidden = None
        elif mark.offset > self._hidden.offset:
            self._hidden = mark

    def after_truncation(self, end: int) -> None:
        """The log now ends at ``end``: forget marks past it, clamp the replicated high watermark."""
        if self.last_append is not None and self.last_append.offset >= end:
            self.last_append = None
        if self._hidden is not None and self._hidden.offset >= end:
            self._hidden = None
        self._hidden_until = min(self._hidden_until, end)
        self._replicated_mark = None
        if self.replicated is not None:
            self.set_replicated(self.replicated)

"""A follower's side of a fetch session (KIP-227; Kafka's ``FetchSessionHandler``).

Why: a follower fetches every partition it follows from one leader in one request, and an
idle cluster's leader leads dozens (``__consumer_offsets`` alone has 50). Without a session each
fetch names all of them and each answer carries all of them, so a one-record produce costs both
sides a pass over every partition to encode, decode and apply. In a session the request names
only the partitions whose position changed (and forgets those left out), and the leader answers
only the partitions with something new (records, another high watermark or log start, an error
or a diverging epoch); the leader still reads and records every partition of the session.

A session lives as long as its connection. Any doubt (the leader declined or closed it, or
answered a session error) starts over with a full fetch, which also asks for a new one.
"""

from __future__ import annotations

from wire.error_codes import ErrorCode
from wire.fetch_session_epochs import INITIAL_EPOCH, INVALID_SESSION_ID, next_epoch

PartitionKey = tuple[str, int]
Position = dict[str, int]
"""One partition of a Fetch request as the fetcher builds it (offsets, epochs, size)."""

SESSION_ERRORS = frozenset({ErrorCode.FETCH_SESSION_ID_NOT_FOUND, ErrorCode.INVALID_FETCH_SESSION_EPOCH})
"""Answers that end the session: the next fetch is a full one."""


class FollowerSession:
    """The session of one fetcher connection: what the leader was last sent, per partition."""

    def __init__(self) -> None:
        self.id = INVALID_SESSION_ID
        self.epoch = INITIAL_EPOCH
        self._sent: dict[PartitionKey, Position] = {}

    def request(
        self, wanted: dict[PartitionKey, Position]
    ) -> tuple[dict[PartitionKey, Position], list[PartitionKey]]:
        """What a fetch of ``wanted`` names: (partitions, forgotten ones). A full fetch names
        every partition; an incremental one those added or changed since the last answered
        fetch, and forgets those no longer wanted. An entry is compared by identity: the fetcher
        builds a partition's entry again only when its log moved
        (``FollowedPartition.position_in``), so an idle partition costs no comparison of dicts,
        and an equal entry that is another object is at worst named once more."""
        if self.id == INVALID_SESSION_ID:
            return wanted, []
        sent = self._sent
        changed = {key: position for key, position in wanted.items() if sent.get(key) is not position}
        return changed, [key for key in self._sent if key not in wanted]

    def answered(self, session_id: int, wanted: dict[PartitionKey, Position]) -> None:
        """The leader answered a fetch of ``wanted`` without error, naming ``session_id``: the
        session goes on (or begins, after a full fetch) at the next epoch; an id of 0 means the
        leader keeps none, so the next fetch is full again."""
        if session_id == INVALID_SESSION_ID or self.id not in (INVALID_SESSION_ID, session_id):
            self.reset()
            return
        self.id, self.epoch = session_id, next_epoch(self.epoch)  # a new session's first epoch is 1
        self._sent = dict(wanted)

    def reset(self) -> None:
        """Forget the session: the next fetch is a full one asking for a new session."""
        self.id, self.epoch, self._sent = INVALID_SESSION_ID, INITIAL_EPOCH, {}

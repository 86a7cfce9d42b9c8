"""Share sessions: ShareFetch's own session protocol (KIP-932), Kafka's ``ShareSessionCache``.

A share consumer keeps one session per broker, keyed by its group and member id. Epoch 0
opens it with the partitions to fetch; each later ShareFetch or ShareAcknowledge names the
next epoch and adds or forgets partitions; epoch -1 closes it. Unlike a Fetch session the
partitions of a share session hold records the member acquired, so closing a session, or the
connection it lives on going away, releases them at once (Kafka 4.1's behaviour), rather
than after their acquisition locks run out.

The cache is bounded by ``group.share.max.share.sessions`` (Kafka's default 2000): a new
session beyond it is SHARE_SESSION_LIMIT_REACHED.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from wire.error_codes import ErrorCode

INITIAL_EPOCH = 0
FINAL_EPOCH = -1

SessionKey = tuple[str, str]
"""(group id, member id)."""
SharePartitionId = tuple[bytes, int]
"""(topic id, partition)."""


@dataclass(eq=False)
class ShareSession:
    group_id: str
    member_id: str
    connection: object
    partitions: dict[SharePartitionId, None] = field(default_factory=dict)  # insertion-ordered set
    epoch: int = 1
    """The epoch the next request must carry."""


class ShareSessionError(Exception):
    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code


class ShareSessions:
    """Every open share session of this broker."""

    def __init__(self, max_sessions: int) -> None:
        self.max_sessions = max_sessions
        self._sessions: dict[SessionKey, ShareSession] = {}
        # The sessions of each connection: every connection's close asks, share consumer or not.
        self._by_connection: dict[object, set[SessionKey]] = {}

    def __len__(self) -> int:
        return len(self._sessions)

    def open(
        self, group_id: str, member_id: str, connection: object
    ) -> tuple[ShareSession, ShareSession | None]:
        """A new session (epoch 0), and the member's previous one it replaces (to release)."""
        key = (group_id, member_id)
        replacing = key in self._sessions
        if not replacing and len(self._sessions) >= self.max_sessions:
            raise ShareSessionError(
                ErrorCode.SHARE_SESSION_LIMIT_REACHED,
                f"The share session cache is full ({self.max_sessions} sessions).",
            )
        previous = self._remove(key) if replacing else None
        session = ShareSession(group_id, member_id, connection)
        self._sessions[key] = session
        self._by_connection.setdefault(connection, set()).add(key)
        return session, previous

    def next(self, group_id: str, member_id: str, epoch: int) -> ShareSession:
        """The session a request with ``epoch`` (> 0) continues; its epoch moves on."""
        session = self._sessions.get((group_id, member_id))
        if session is None:
            raise ShareSessionError(
                ErrorCode.SHARE_SESSION_NOT_FOUND, f"Share session for member {member_id} was not found."
            )
        if epoch != session.epoch:
            raise ShareSessionError(
                ErrorCode.INVALID_SHARE_SESSION_EPOCH,
                f"Share session epoch {epoch} does not match the expected epoch {session.epoch}.",
            )
        session.epoch = session.epoch + 1 if session.epoch < 2**31 - 1 else 1
        return session

    def close(self, group_id: str, member_id: str) -> ShareSession:
        session = self._remove((group_id, member_id))
        if session is None:
            raise ShareSessionError(
                ErrorCode.SHARE_SESSION_NOT_FOUND, f"Share session for member {member_id} was not found."
            )
        return session

    def of_connection(self, connection: object) -> list[ShareSession]:
        """Remove and return the sessions opened on ``connection`` (it closed)."""
        keys = self._by_connection.pop(connection, set())
        return [self._sessions.pop(key) for key in keys]

    def _remove(self, key: SessionKey) -> ShareSession | None:
        session = self._sessions.pop(key, None)
        if session is not None:
            keys = self._by_connection.get(session.connection)
            if keys is not None:
                keys.discard(key)
                if not keys:
                    del self._by_connection[session.connection]
        return session

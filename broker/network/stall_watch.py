"""Closing a connection that waits too long: for its next request, or for its client to take
a response.

Kafka closes a connection idle for ``connections.max.idle.ms``, counting from its last
request, whatever state it is in: a Fetch parked with a huge ``max_wait_ms`` by a client that
then stays silent is reaped too.  Odradek does the same (``reading_since`` is when the
connection's last request arrived, or when it began waiting for one), and also closes a
connection whose client stops reading its responses for as long (its response would hold
buffers and file descriptors forever).  A trio timer is a cancel scope with a deadline, and two of them per
request (one around the wait for it, one around sending its answer) cost more of the event
loop than parsing the request does.  So the connection only notes when each wait began, two
clock reads per request, and this one task per connection looks at those notes, sleeping
until the earliest moment a wait could have gone on too long.
"""

from __future__ import annotations

import logging

import trio

log = logging.getLogger(__name__)


class StallWatch:
    """When the connection's last request arrived (or it began waiting for one) and when it
    began sending a response (trio time, None while it is not); :meth:`run` cancels the
    connection when either lasts ``limit_s``."""

    __slots__ = ("limit_s", "reading_since", "sending_since")

    def __init__(self, limit_s: float) -> None:
        self.limit_s = limit_s
        self.reading_since: float | None = None
        self.sending_since: float | None = None

    async def run(self, peer: str, connection: trio.CancelScope) -> None:
        """Until the connection ends: cancel ``connection`` once a wait has lasted ``limit_s``.

        A wait seen in progress is checked again at the moment it would expire; with none in
        progress the next look is half a limit away, so a wait is caught at most that late."""
        limit = self.limit_s
        while True:
            now = trio.current_time()
            sending, reading = self.sending_since, self.reading_since
            if sending is not None and now - sending >= limit:
                log.info("closing connection from %s: it stopped reading its responses", peer)
                break
            if sending is None and reading is not None and now - reading >= limit:
                log.info("closing idle connection from %s: no request for connections.max.idle.ms", peer)
                break
            started = sending if sending is not None else reading
            await trio.sleep_until(now + limit / 2 if started is None else started + limit)
        connection.cancel()

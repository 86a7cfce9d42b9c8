"""The console's own sampling: end offsets per topic and committed offsets and lag per group.

Brokers keep no history a client can ask for, so the console samples what the charts need
every ``INTERVAL_S`` seconds into a :class:`History`: per topic the sum of its partitions' end
offsets (whose growth is the produce rate) and of every group's committed offsets on it (the
consume rate), per group the lag summed over its partitions.  One round costs one ListOffsets
per leader, one ListGroups per broker and one OffsetFetch per group coordinator, sent one at a
time on the console's connections, after a Metadata saying who leads what.  On a cluster of
more than ``SMALL_CLUSTER`` partitions that Metadata is a large answer to build and read, so
it is asked again only every ``METADATA_EVERY_S`` (as clients keep theirs for
metadata.max.age.ms): a new topic shows in the charts within a minute there, at once elsewhere.
The ListOffsets of every partition costs the broker about 25 us per partition (Odradek, 0.25 s
at 10,054 partitions), so on large clusters the rounds space out to at least ``PAUSE_PER_PARTITION_S`` per
partition: 25 s at 10,000 partitions, under 1% of a core.  Share groups have no committed offsets and are not
sampled (their page shows their lag as the broker reports it).
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from broker.cli.registry import AdminError
from broker.cli.web.errors import Gone, NotAuthorized
from broker.cli.web.groups_data import committed_offsets, list_groups
from broker.cli.web.history import History, Key
from broker.cli.web.links import BrokerLinks, Session
from broker.cli.web.offsets import leaders, log_offsets
from broker.client.admin_client import LATEST

INTERVAL_S = 5.0
METADATA_EVERY_S = 60.0
SMALL_CLUSTER = 1000
PAUSE_PER_PARTITION_S = 0.0025
MAX_SAMPLED_GROUPS = 500
log = logging.getLogger("odradek.console")


def collect(s: Session, metadata: dict[str, Any]) -> dict[Key, int]:
    """One round's values of every series, for the topics and brokers in ``metadata``."""
    latest = log_offsets(s, leaders(metadata), LATEST)
    values: dict[Key, int] = {}
    for (topic, _), offset in latest.items():
        values[("end", topic)] = values.get(("end", topic), 0) + offset
    groups = [g.group_id for g in list_groups(s, metadata) if g.type != "share"][:MAX_SAMPLED_GROUPS]
    for group, committed in committed_offsets(s, groups).items():
        lag = 0
        for partition, offset in committed.items():
            topic = partition[0]
            values[("committed", topic)] = values.get(("committed", topic), 0) + offset
            lag += max(latest.get(partition, offset) - offset, 0)
        values[("lag", group)] = lag
    return values


class Sampler:
    """A daemon thread sampling into ``history`` until :meth:`stop`."""

    def __init__(self, links: BrokerLinks, history: History, interval_s: float = INTERVAL_S) -> None:
        self.links, self.history, self.interval_s = links, history, interval_s
        self.last_error: str | None = None
        self._metadata: dict[str, Any] | None = None
        self._metadata_at = 0.0
        self._small = True
        self._partitions = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="console-sampler", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=self.links.timeout_s + self.interval_s)

    def sample(self) -> None:
        """One round now (the first one runs at start, so charts have a point at once)."""
        try:
            self.history.record(time.time(), self.links.run(self._collect))
            self.last_error = None
        except (ConnectionError, AdminError, NotAuthorized, Gone) as exc:
            self._metadata = None  # the cluster may have changed: ask again next round
            # The pages report the same failure where it matters; the sampler tries again later.
            self.last_error = str(exc)
            log.warning("sampling failed: %s", exc)

    def _collect(self, s: Session) -> dict[Key, int]:
        if self._metadata is None or self._small or time.monotonic() - self._metadata_at >= METADATA_EVERY_S:
            self._metadata, self._metadata_at = s.metadata(), time.monotonic()
            self._partitions = sum(len(t["partitions"]) for t in self._metadata["topics"])
            self._small = self._partitions <= SMALL_CLUSTER
        return collect(s, self._metadata)

    def _loop(self) -> None:
        self.sample()
        while not self._stop.wait(max(self.interval_s, self._partitions * PAUSE_PER_PARTITION_S)):
            self.sample()

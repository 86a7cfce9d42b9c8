"""Protocol rules several request paths share: versions from which a field changes meaning,
and field values with a name."""

READ_COMMITTED = 1
"""``isolation_level`` of a read_committed Fetch or ListOffsets (0 is read_uncommitted)."""

FIRST_TOPIC_ID_VERSION = 13
"""Fetch and Produce address topics by id, not name, from version 13 on (KIP-516)."""

"""OffsetForLeaderEpoch (key 23): end offset of a leader epoch (log truncation detection).

Quirks clients rely on (see KAFKA-FACTS.md):

- The Java consumer validates its position with this API only if the broker advertises it
  with max version >= 3, the position carries an epoch (a batch's partitionLeaderEpoch)
  and Metadata v9+ reports a changed leader epoch.  The answer is the end offset of the
  largest epoch <= the requested ``leader_epoch`` (and that epoch); unknown epochs give
  offset -1 / epoch -1.
- ``replica_id`` (v3+) defaults to -2 ("debug" consumer); followers send their broker id.
- ``current_leader_epoch`` (v2+) fences stale requests (``FENCED_LEADER_EPOCH`` /
  ``UNKNOWN_LEADER_EPOCH``).  Kafka 4.x accepts only versions >= 2; v0-1 are declared for
  error responses.  Note the response puts ``error_code`` before ``partition``.
"""

from wire.api_keys import ApiKey
from wire.schema import F, api

OFFSET_FOR_LEADER_EPOCH = api(
    ApiKey.OFFSET_FOR_LEADER_EPOCH,
    "0-4",
    flexible="4+",
    request=(
        F("replica_id", "int32", "3+", default=-2),
        F(
            "topics",
            "[]",
            "0+",
            F("topic", "string"),
            F(
                "partitions",
                "[]",
                "0+",
                F("partition", "int32"),
                F("current_leader_epoch", "int32", "2+", default=-1),
                F("leader_epoch", "int32"),
            ),
        ),
    ),
    response=(
        F("throttle_time_ms", "int32", "2+"),
        F(
            "topics",
            "[]",
            "0+",
            F("topic", "string"),
            F(
                "partitions",
                "[]",
                "0+",
                F("error_code", "int16"),
                F("partition", "int32"),
                F("leader_epoch", "int32", "1+", default=-1),
                F("end_offset", "int64", default=-1),
            ),
        ),
    ),
)

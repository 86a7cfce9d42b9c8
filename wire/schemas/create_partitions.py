"""CreatePartitions (key 37): raise the partition count of existing topics.

Quirks clients rely on:

- ``count`` is the new total number of partitions, not the number to add; a count that
  does not increase is ``INVALID_PARTITIONS``.
- ``assignments`` is null to let the broker place the new partitions, else one entry (a
  list of broker ids) per new partition.  ``validate_only`` checks without changing.
- Version 3 may return ``THROTTLING_QUOTA_EXCEEDED`` (KIP-599).
- Spark's failOnDataLoss treats a new partition that does not start at offset 0 as loss.
"""

from wire.api_keys import ApiKey
from wire.schema import F, api

CREATE_PARTITIONS = api(
    ApiKey.CREATE_PARTITIONS,
    "0-3",
    flexible="2+",
    request=(
        F(
            "topics",
            "[]",
            "0+",
            F("name", "string"),
            F("count", "int32"),
            F(
                "assignments",
                "[]",
                "0+",
                F("broker_ids", "[]int32"),
                nullable="0+",
            ),
        ),
        F("timeout_ms", "int32"),
        F("validate_only", "bool"),
    ),
    response=(
        F("throttle_time_ms", "int32"),
        F(
            "results",
            "[]",
            "0+",
            F("name", "string"),
            F("error_code", "int16"),
            F("error_message", "string", "0+", nullable="0+", default=None),
        ),
    ),
)

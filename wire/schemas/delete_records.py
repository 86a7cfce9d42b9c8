"""DeleteRecords (key 21): advance partitions' log start offsets (AdminClient.deleteRecords).

Quirks clients rely on:

- ``offset`` is the new log start offset; -1 means "up to the high watermark".  An offset
  above the high watermark is ``OFFSET_OUT_OF_RANGE``.
- The response's ``low_watermark`` is the resulting log start offset.  Afterwards
  ListOffsets earliest must return it, and fetches below it ``OFFSET_OUT_OF_RANGE``.
"""

from wire.api_keys import ApiKey
from wire.schema import F, api

DELETE_RECORDS = api(
    ApiKey.DELETE_RECORDS,
    "0-2",
    flexible="2+",
    request=(
        F(
            "topics",
            "[]",
            "0+",
            F("name", "string"),
            F(
                "partitions",
                "[]",
                "0+",
                F("partition_index", "int32"),
                F("offset", "int64"),
            ),
        ),
        F("timeout_ms", "int32"),
    ),
    response=(
        F("throttle_time_ms", "int32"),
        F(
            "topics",
            "[]",
            "0+",
            F("name", "string"),
            F(
                "partitions",
                "[]",
                "0+",
                F("partition_index", "int32"),
                F("low_watermark", "int64"),
                F("error_code", "int16"),
            ),
        ),
    ),
)

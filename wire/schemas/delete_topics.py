"""DeleteTopics (key 20): delete topics by name (v0-5) or by name or topic id (v6+).

Quirks clients rely on:

- Versions 0-5 send a plain ``topic_names`` array; version 6 replaces it with ``topics``
  entries carrying a nullable ``name`` and a ``topic_id`` (zero uuid when deleting by name).
  Unknown ids are answered ``UNKNOWN_TOPIC_ID``, unknown names
  ``UNKNOWN_TOPIC_OR_PARTITION``.
- Version 3+ may return ``TOPIC_DELETION_DISABLED``; version 5 adds ``error_message`` and
  ``THROTTLING_QUOTA_EXCEEDED``.  Kafka 4.x accepts only DeleteTopics >= 1; v0 is declared
  for error responses.
"""

from wire.api_keys import ApiKey
from wire.schema import F, api

DELETE_TOPICS = api(
    ApiKey.DELETE_TOPICS,
    "0-6",
    flexible="4+",
    request=(
        F(
            "topics",
            "[]",
            "6+",
            F("name", "string", "6+", nullable="6+", default=None),
            F("topic_id", "uuid", "6+"),
        ),
        F("topic_names", "[]string", "0-5"),
        F("timeout_ms", "int32"),
    ),
    response=(
        F("throttle_time_ms", "int32", "1+"),
        F(
            "responses",
            "[]",
            "0+",
            F("name", "string", "0+", nullable="6+"),
            F("topic_id", "uuid", "6+"),
            F("error_code", "int16"),
            F("error_message", "string", "5+", nullable="5+", default=None),
        ),
    ),
)

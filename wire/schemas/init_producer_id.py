"""InitProducerId (key 22): allocate a producer id and epoch (idempotence, transactions).

Quirks clients rely on (see KAFKA-FACTS.md):

- The Java producer (>= 3.0) is idempotent by default: if InitProducerId is not advertised,
  every send fails fatally.  kafka-python 3.x enables idempotence by default too.
- ``transactional_id`` is null for an idempotent-only producer (no coordinator lookup).
- Version 3 adds ``producer_id``/``producer_epoch`` in the request (-1/-1 for a fresh id) so
  a producer can bump its epoch after ``INVALID_PRODUCER_EPOCH``; version 4 may return
  ``PRODUCER_FENCED``; version 5 ``TRANSACTION_ABORTABLE`` (KIP-890).
- Version 6 (KIP-939 two-phase commit, unstable in Kafka 4.x) is not declared.
"""

from wire.api_keys import ApiKey
from wire.schema import F, api

INIT_PRODUCER_ID = api(
    ApiKey.INIT_PRODUCER_ID,
    "0-5",
    flexible="2+",
    request=(
        F("transactional_id", "string", "0+", nullable="0+"),
        F("transaction_timeout_ms", "int32"),
        F("producer_id", "int64", "3+", default=-1),
        F("producer_epoch", "int16", "3+", default=-1),
    ),
    response=(
        F("throttle_time_ms", "int32"),
        F("error_code", "int16"),
        F("producer_id", "int64", default=-1),
        F("producer_epoch", "int16"),
    ),
)

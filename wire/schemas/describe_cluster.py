"""DescribeCluster (key 60): cluster id, controller and brokers (AdminClient.describeCluster).

Quirks clients rely on (see KAFKA-FACTS.md):

- Always flexible (v0+).  The Java admin client (and Spark's driver through it) prefers
  this API and falls back to Metadata when it is not advertised.
- ``endpoint_type`` (v1+, KIP-919): 1 = brokers, 2 = controllers; a mismatch with the
  listener is ``MISMATCHED_ENDPOINT_TYPE``.  ``controller_id`` is -1 when unknown.
- Version 2 (KIP-1073) adds ``include_fenced_brokers`` and per-broker ``is_fenced``.
- ``cluster_authorized_operations`` defaults to INT32_MIN ("not requested").
"""

from wire.api_keys import ApiKey
from wire.schema import F, api

DESCRIBE_CLUSTER = api(
    ApiKey.DESCRIBE_CLUSTER,
    "0-2",
    flexible="0+",
    request=(
        F("include_cluster_authorized_operations", "bool"),
        F("endpoint_type", "int8", "1+", default=1),
        F("include_fenced_brokers", "bool", "2+"),
    ),
    response=(
        F("throttle_time_ms", "int32"),
        F("error_code", "int16"),
        F("error_message", "string", "0+", nullable="0+", default=None),
        F("endpoint_type", "int8", "1+", default=1),
        F("cluster_id", "string"),
        F("controller_id", "int32", default=-1),
        F(
            "brokers",
            "[]",
            "0+",
            F("broker_id", "int32"),
            F("host", "string"),
            F("port", "int32"),
            F("rack", "string", "0+", nullable="0+", default=None),
            F("is_fenced", "bool", "2+"),
        ),
        F("cluster_authorized_operations", "int32", default=-(2**31)),
    ),
)

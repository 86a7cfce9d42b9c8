"""ConsumerGroupDescribe (key 69): describe KIP-848 consumer groups (epochs, assignments).

v1 adds each member's type (0 classic, 1 consumer) for groups mixing both protocols.
"""

from wire.api_keys import ApiKey
from wire.schema import F, Field, api
from wire.schemas.describe_groups import AUTHORIZED_OPERATIONS_OMITTED


def _assignment(name: str) -> Field:
    """Current and target assignment share one shape: topics with id, name and partitions."""
    return F(
        name,
        "{}",
        "0+",
        F(
            "topic_partitions",
            "[]",
            "0+",
            F("topic_id", "uuid"),
            F("topic_name", "string"),
            F("partitions", "[]int32"),
        ),
    )


CONSUMER_GROUP_DESCRIBE = api(
    ApiKey.CONSUMER_GROUP_DESCRIBE,
    "0-1",
    flexible="0+",
    request=(
        F("group_ids", "[]string"),
        F("include_authorized_operations", "bool"),
    ),
    response=(
        F("throttle_time_ms", "int32"),
        F(
            "groups",
            "[]",
            "0+",
            F("error_code", "int16"),
            F("error_message", "string", "0+", nullable="0+", default=None),
            F("group_id", "string"),
            F("group_state", "string"),
            F("group_epoch", "int32"),
            F("assignment_epoch", "int32"),
            F("assignor_name", "string"),
            F(
                "members",
                "[]",
                "0+",
                F("member_id", "string"),
                F("instance_id", "string", "0+", nullable="0+", default=None),
                F("rack_id", "string", "0+", nullable="0+", default=None),
                F("member_epoch", "int32"),
                F("client_id", "string"),
                F("client_host", "string"),
                F("subscribed_topic_names", "[]string"),
                F("subscribed_topic_regex", "string", "0+", nullable="0+", default=None),
                _assignment("assignment"),
                _assignment("target_assignment"),
                F("member_type", "int8", "1+", default=-1),
            ),
            F("authorized_operations", "int32", "0+", default=AUTHORIZED_OPERATIONS_OMITTED),
        ),
    ),
)

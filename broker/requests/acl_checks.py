"""What each API must be allowed to do, in one table, and the helpers handlers ask.

``CHECKS`` lists, per API, every (resource type, operation) Kafka's ``KafkaApis``,
``ControllerApis``, ``AclApis`` and ``ConfigHelper`` check for it; a handler names only the
resource (and the operation where its API checks more than one on that resource type) and
these helpers find the operation here, so the table is the single statement of who may do
what.  Without an authorizer (``authorizer.class.name`` empty) everything is allowed, as in
Kafka, at the cost of one attribute test.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

from broker.services.security.acl_model import CLUSTER_NAME, SUPPORTED_OPERATIONS, AclOperation, ResourceType
from wire.api_keys import ApiKey, api_name
from wire.error_codes import ErrorCode

if TYPE_CHECKING:
    from broker.requests.context import RequestContext

R, Op = ResourceType, AclOperation


class Check(NamedTuple):
    resource_type: ResourceType
    operation: AclOperation


def _checks(*pairs: tuple[ResourceType, AclOperation]) -> tuple[Check, ...]:
    return tuple(Check(*pair) for pair in pairs)


_GROUP_MEMBER = _checks((R.GROUP, Op.READ))
_CLUSTER_DESCRIBE = _checks((R.CLUSTER, Op.DESCRIBE))
_CLUSTER_ALTER = _checks((R.CLUSTER, Op.ALTER))
_CONFIGS_ALTER = _checks(
    (R.CLUSTER, Op.ALTER_CONFIGS), (R.TOPIC, Op.ALTER_CONFIGS), (R.GROUP, Op.ALTER_CONFIGS)
)

CHECKS: dict[ApiKey, tuple[Check, ...]] = {
    ApiKey.API_VERSIONS: (),
    # A transactional produce needs WRITE on its id, every topic WRITE.
    ApiKey.PRODUCE: _checks((R.TRANSACTIONAL_ID, Op.WRITE), (R.TOPIC, Op.WRITE)),
    # A follower's fetch needs CLUSTER_ACTION, a consumer's READ on each topic.
    ApiKey.FETCH: _checks((R.CLUSTER, Op.CLUSTER_ACTION), (R.TOPIC, Op.READ)),
    ApiKey.LIST_OFFSETS: _checks((R.TOPIC, Op.DESCRIBE)),
    ApiKey.OFFSET_FOR_LEADER_EPOCH: _checks((R.CLUSTER, Op.CLUSTER_ACTION), (R.TOPIC, Op.DESCRIBE)),
    # Topics are listed if DESCRIBE is allowed; auto-creation needs CREATE on the cluster or the
    # topic; the cluster's authorized operations are filled only with DESCRIBE on it.
    ApiKey.METADATA: _checks(
        (R.TOPIC, Op.DESCRIBE), (R.TOPIC, Op.CREATE), (R.CLUSTER, Op.CREATE), (R.CLUSTER, Op.DESCRIBE)
    ),
    ApiKey.DESCRIBE_TOPIC_PARTITIONS: _checks((R.TOPIC, Op.DESCRIBE)),
    ApiKey.DESCRIBE_CLUSTER: _CLUSTER_DESCRIBE,
    ApiKey.DESCRIBE_LOG_DIRS: _CLUSTER_DESCRIBE,
    ApiKey.CREATE_TOPICS: _checks(
        (R.CLUSTER, Op.CREATE), (R.TOPIC, Op.CREATE), (R.TOPIC, Op.DESCRIBE_CONFIGS)
    ),
    ApiKey.DELETE_TOPICS: _checks((R.CLUSTER, Op.DELETE), (R.TOPIC, Op.DESCRIBE), (R.TOPIC, Op.DELETE)),
    ApiKey.CREATE_PARTITIONS: _checks((R.TOPIC, Op.ALTER)),
    ApiKey.DELETE_RECORDS: _checks((R.TOPIC, Op.DELETE)),
    ApiKey.DESCRIBE_CONFIGS: _checks(
        (R.CLUSTER, Op.DESCRIBE_CONFIGS), (R.TOPIC, Op.DESCRIBE_CONFIGS), (R.GROUP, Op.DESCRIBE_CONFIGS)
    ),
    ApiKey.ALTER_CONFIGS: _CONFIGS_ALTER,
    ApiKey.INCREMENTAL_ALTER_CONFIGS: _CONFIGS_ALTER,
    ApiKey.FIND_COORDINATOR: _checks((R.GROUP, Op.DESCRIBE), (R.TRANSACTIONAL_ID, Op.DESCRIBE)),
    ApiKey.JOIN_GROUP: _GROUP_MEMBER,
    ApiKey.SYNC_GROUP: _GROUP_MEMBER,
    ApiKey.HEARTBEAT: _GROUP_MEMBER,
    ApiKey.LEAVE_GROUP: _GROUP_MEMBER,
    ApiKey.DESCRIBE_GROUPS: _checks((R.GROUP, Op.DESCRIBE)),
    # Every group with DESCRIBE on the cluster, else those with DESCRIBE on the group.
    ApiKey.LIST_GROUPS: _checks((R.CLUSTER, Op.DESCRIBE), (R.GROUP, Op.DESCRIBE)),
    ApiKey.DELETE_GROUPS: _checks((R.GROUP, Op.DELETE)),
    ApiKey.OFFSET_COMMIT: _checks((R.GROUP, Op.READ), (R.TOPIC, Op.READ)),
    ApiKey.OFFSET_FETCH: _checks((R.GROUP, Op.DESCRIBE), (R.TOPIC, Op.DESCRIBE)),
    ApiKey.OFFSET_DELETE: _checks((R.GROUP, Op.DELETE), (R.TOPIC, Op.READ)),
    ApiKey.CONSUMER_GROUP_HEARTBEAT: _checks((R.GROUP, Op.READ), (R.TOPIC, Op.DESCRIBE)),
    ApiKey.CONSUMER_GROUP_DESCRIBE: _checks((R.GROUP, Op.DESCRIBE)),
    ApiKey.SHARE_GROUP_HEARTBEAT: _checks((R.GROUP, Op.READ), (R.TOPIC, Op.DESCRIBE)),
    # A streams member's heartbeat creates the topology's internal topics: CREATE on the cluster
    # or on each topic, as Kafka checks.
    ApiKey.STREAMS_GROUP_HEARTBEAT: _checks(
        (R.GROUP, Op.READ), (R.TOPIC, Op.DESCRIBE), (R.CLUSTER, Op.CREATE), (R.TOPIC, Op.CREATE)
    ),
    ApiKey.STREAMS_GROUP_DESCRIBE: _checks((R.GROUP, Op.DESCRIBE)),
    ApiKey.SHARE_GROUP_DESCRIBE: _checks((R.GROUP, Op.DESCRIBE)),
    ApiKey.SHARE_FETCH: _checks((R.GROUP, Op.READ), (R.TOPIC, Op.READ)),
    ApiKey.SHARE_ACKNOWLEDGE: _checks((R.GROUP, Op.READ), (R.TOPIC, Op.READ)),
    # The share-group offset APIs, as Kafka checks them (altering or deleting needs READ on the
    # group and the topic; describing, DESCRIBE on both).
    ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS: _checks((R.GROUP, Op.DESCRIBE), (R.TOPIC, Op.DESCRIBE)),
    ApiKey.ALTER_SHARE_GROUP_OFFSETS: _checks((R.GROUP, Op.READ), (R.TOPIC, Op.READ)),
    ApiKey.DELETE_SHARE_GROUP_OFFSETS: _checks((R.GROUP, Op.DELETE), (R.TOPIC, Op.READ)),
    # Brokers' calls to the share coordinator.
    ApiKey.INITIALIZE_SHARE_GROUP_STATE: _checks((R.CLUSTER, Op.CLUSTER_ACTION)),
    ApiKey.READ_SHARE_GROUP_STATE: _checks((R.CLUSTER, Op.CLUSTER_ACTION)),
    ApiKey.WRITE_SHARE_GROUP_STATE: _checks((R.CLUSTER, Op.CLUSTER_ACTION)),
    ApiKey.DELETE_SHARE_GROUP_STATE: _checks((R.CLUSTER, Op.CLUSTER_ACTION)),
    ApiKey.READ_SHARE_GROUP_STATE_SUMMARY: _checks((R.CLUSTER, Op.CLUSTER_ACTION)),
    # A transactional id needs WRITE; without one, IDEMPOTENT_WRITE on the cluster or WRITE on
    # any topic (KIP-679).
    ApiKey.INIT_PRODUCER_ID: _checks(
        (R.TRANSACTIONAL_ID, Op.WRITE), (R.CLUSTER, Op.IDEMPOTENT_WRITE), (R.TOPIC, Op.WRITE)
    ),
    # v4+ is the broker-to-broker verification, CLUSTER_ACTION; clients' v0-3 WRITE.
    ApiKey.ADD_PARTITIONS_TO_TXN: _checks(
        (R.CLUSTER, Op.CLUSTER_ACTION), (R.TRANSACTIONAL_ID, Op.WRITE), (R.TOPIC, Op.WRITE)
    ),
    ApiKey.ADD_OFFSETS_TO_TXN: _checks((R.TRANSACTIONAL_ID, Op.WRITE), (R.GROUP, Op.READ)),
    # A transaction coordinator's markers to a partition leader (broker to broker).
    ApiKey.WRITE_TXN_MARKERS: _checks((R.CLUSTER, Op.CLUSTER_ACTION)),
    ApiKey.TXN_OFFSET_COMMIT: _checks((R.TRANSACTIONAL_ID, Op.WRITE), (R.GROUP, Op.READ), (R.TOPIC, Op.READ)),
    ApiKey.END_TXN: _checks((R.TRANSACTIONAL_ID, Op.WRITE)),
    ApiKey.DESCRIBE_TRANSACTIONS: _checks((R.TRANSACTIONAL_ID, Op.DESCRIBE), (R.TOPIC, Op.DESCRIBE)),
    ApiKey.LIST_TRANSACTIONS: _checks((R.TRANSACTIONAL_ID, Op.DESCRIBE)),
    ApiKey.DESCRIBE_PRODUCERS: _checks((R.TOPIC, Op.READ)),
    ApiKey.SASL_HANDSHAKE: (),
    ApiKey.SASL_AUTHENTICATE: (),
    ApiKey.DESCRIBE_QUORUM: _CLUSTER_DESCRIBE,
    ApiKey.LIST_PARTITION_REASSIGNMENTS: _CLUSTER_DESCRIBE,
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: _CLUSTER_ALTER,
    ApiKey.ELECT_LEADERS: _CLUSTER_ALTER,
    ApiKey.UPDATE_FEATURES: _CLUSTER_ALTER,
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: _CLUSTER_DESCRIBE,
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: _CLUSTER_ALTER,
    # Clients push their own metrics unchecked, as in Kafka (KIP-714).
    ApiKey.GET_TELEMETRY_SUBSCRIPTIONS: (),
    ApiKey.PUSH_TELEMETRY: (),
    ApiKey.LIST_CONFIG_RESOURCES: _checks((R.CLUSTER, Op.DESCRIBE_CONFIGS)),
    # No delegation tokens: every token request is refused before anything is checked.
    ApiKey.CREATE_DELEGATION_TOKEN: (),
    ApiKey.RENEW_DELEGATION_TOKEN: (),
    ApiKey.EXPIRE_DELEGATION_TOKEN: (),
    ApiKey.DESCRIBE_DELEGATION_TOKEN: (),
    ApiKey.DESCRIBE_ACLS: _CLUSTER_DESCRIBE,
    ApiKey.CREATE_ACLS: _CLUSTER_ALTER,
    ApiKey.DELETE_ACLS: _CLUSTER_ALTER,
    ApiKey.DESCRIBE_CLIENT_QUOTAS: _checks((R.CLUSTER, Op.DESCRIBE_CONFIGS)),
    ApiKey.ALTER_CLIENT_QUOTAS: _checks((R.CLUSTER, Op.ALTER_CONFIGS)),
}

DENIED: dict[ResourceType, ErrorCode] = {
    R.TOPIC: ErrorCode.TOPIC_AUTHORIZATION_FAILED,
    R.GROUP: ErrorCode.GROUP_AUTHORIZATION_FAILED,
    R.CLUSTER: ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
    R.TRANSACTIONAL_ID: ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
    R.DELEGATION_TOKEN: ErrorCode.DELEGATION_TOKEN_AUTHORIZATION_FAILED,
}
"""The error Kafka answers when the check on a resource of this type fails (``AclEntry.authorizationError``)."""


def _operations_by_resource() -> dict[tuple[int, ResourceType], tuple[AclOperation, ...]]:
    """``CHECKS`` indexed by (API, resource type), for one dict lookup per check."""
    table: dict[tuple[int, ResourceType], tuple[AclOperation, ...]] = {}
    for api, checks in CHECKS.items():
        for check in checks:
            table[api, check.resource_type] = (*table.get((api, check.resource_type), ()), check.operation)
    return table


_OPERATIONS = _operations_by_resource()


def operation_for(
    api: int, resource_type: ResourceType, operation: AclOperation | None = None
) -> AclOperation:
    """The operation ``api`` checks on ``resource_type``: the one in the table, or ``operation``,
    which must be one of the table's when the API checks several on that type."""
    listed = _OPERATIONS.get((api, resource_type), ())
    if operation is None and len(listed) == 1:
        return listed[0]
    if operation is not None and operation in listed:
        return operation
    raise LookupError(f"{api_name(api)} checks {listed} on {resource_type.name}, not {operation}")


def authorized(
    ctx: RequestContext, resource_type: ResourceType, name: str, operation: AclOperation | None = None
) -> bool:
    """Whether the request's principal, from its host, may do the API's operation on ``name``."""
    authorizer = ctx.broker.authorizer
    if authorizer is None:
        return True
    op = operation_for(ctx.header.api_key, resource_type, operation)
    return authorizer.allowed(ctx.principal, ctx.host, op, resource_type, name)


def cluster_authorized(ctx: RequestContext, operation: AclOperation | None = None) -> bool:
    return authorized(ctx, ResourceType.CLUSTER, CLUSTER_NAME, operation)


def unauthorized_names(
    ctx: RequestContext,
    resource_type: ResourceType,
    names: Iterable[str | None],
    operation: AclOperation | None = None,
) -> set[str]:
    """The names (each decided once) the check refuses; None entries (unknown ids) are skipped."""
    if ctx.broker.authorizer is None:
        return set()
    return {
        name
        for name in set(names)
        if name is not None and not authorized(ctx, resource_type, name, operation)
    }


def authorized_operations(ctx: RequestContext, resource_type: ResourceType, name: str) -> int:
    """Kafka's ``*_authorized_operations`` bitfield for the resource (all its operations without
    an authorizer)."""
    authorizer = ctx.broker.authorizer
    if authorizer is None:
        return sum(1 << op for op in SUPPORTED_OPERATIONS[resource_type])
    return authorizer.allowed_operations(ctx.principal, ctx.host, resource_type, name)


def authorized_on_any(ctx: RequestContext, resource_type: ResourceType, operation: AclOperation) -> bool:
    """Whether the operation is allowed on some resource of the type (Kafka's
    ``authorizeByResourceType``)."""
    authorizer = ctx.broker.authorizer
    if authorizer is None:
        return True
    op = operation_for(ctx.header.api_key, resource_type, operation)
    return authorizer.allowed_on_any(ctx.principal, ctx.host, op, resource_type)


OPERATIONS_OMITTED = -2147483648
"""The ``*_authorized_operations`` value when the client did not ask for them (the schema default)."""


def operations_field(ctx: RequestContext, resource_type: ResourceType, name: str, requested: bool) -> int:
    """An ``*_authorized_operations`` field: the bitfield when the client asked for it."""
    return authorized_operations(ctx, resource_type, name) if requested else OPERATIONS_OMITTED


def cluster_operations_field(ctx: RequestContext, requested: bool) -> int:
    """``cluster_authorized_operations``: as Kafka, 0 unless DESCRIBE on the cluster is allowed."""
    if not requested:
        return OPERATIONS_OMITTED
    if not cluster_authorized(ctx, AclOperation.DESCRIBE):
        return 0
    return authorized_operations(ctx, ResourceType.CLUSTER, CLUSTER_NAME)


_Answer = TypeVar("_Answer")


def answer_each(
    ctx: RequestContext,
    resource_type: ResourceType,
    names: list[str],
    answer: Callable[[list[str]], list[_Answer]],
    refused: Callable[[str], _Answer],
) -> list[_Answer]:
    """Per-resource answers in request order: the allowed names answered by one ``answer`` call
    (one entry each, in order), the others by ``refused(name)``."""
    denied = unauthorized_names(ctx, resource_type, names)
    answered = iter(answer([name for name in names if name not in denied]))
    return [refused(name) if name in denied else next(answered) for name in names]


_Described = TypeVar("_Described", bound=Any)


def described_groups(
    ctx: RequestContext,
    group_ids: list[str],
    describe: Callable[[list[str]], list[_Described]],
    refused: Callable[[str], _Described],
    include_operations: bool,
) -> list[_Described]:
    """The answer of a group-describing API (ConsumerGroupDescribe, ShareGroupDescribe,
    StreamsGroupDescribe): each group the principal may describe, with the operations it may
    do on it when asked, the others ``refused``."""
    groups = answer_each(ctx, ResourceType.GROUP, group_ids, describe, refused)
    for group in groups:
        if group["error_code"] == ErrorCode.NONE:
            group["authorized_operations"] = operations_field(
                ctx, ResourceType.GROUP, group["group_id"], include_operations
            )
    return groups


CONFIG_RESOURCES: dict[int, ResourceType] = {
    2: R.TOPIC,
    4: R.CLUSTER,
    8: R.CLUSTER,
    16: R.CLUSTER,
    32: R.GROUP,
}
"""The ACL resource behind each DescribeConfigs/AlterConfigs resource type (TOPIC, BROKER,
BROKER_LOGGER, CLIENT_METRICS, GROUP): broker-wide configs are the cluster's."""


def config_refusal(
    ctx: RequestContext, config_resource_type: int, name: str
) -> tuple[ErrorCode, None] | None:
    """The authorization error of one config resource, or None when allowed (or unknown: the
    handler refuses those types itself)."""
    resource_type = CONFIG_RESOURCES.get(config_resource_type)
    if resource_type is None:
        return None
    resource_name = CLUSTER_NAME if resource_type == R.CLUSTER else name
    return None if authorized(ctx, resource_type, resource_name) else (DENIED[resource_type], None)

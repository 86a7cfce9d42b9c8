"""Kafka's ACL vocabulary: resource, pattern, operation and permission codes, bindings, filters.

Sans-IO and broker-agnostic, so the matching rules can be tested with values alone.  The
codes are Kafka's (``org.apache.kafka.common.acl`` / ``common.resource``), and so are the
rules: a filter matches a binding as ``AclBindingFilter.matches`` does (MATCH finds the
literal, wildcard and prefixed bindings that would apply to a name, ANY every pattern type),
and a new binding is validated as the KRaft controller's ``AclControlManager`` does, with
the same messages.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import IntEnum
from typing import TypeVar


class ResourceType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class AclOperation(IntEnum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14
    TWO_PHASE_COMMIT = 15


class AclPermissionType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


E = TypeVar("E", bound=IntEnum)

WILDCARD = "*"
"""A literal resource name, or a host, that matches every name or host."""
WILDCARD_PRINCIPAL = "User:*"
CLUSTER_NAME = "kafka-cluster"
"""The one name of the CLUSTER resource."""

SUPPORTED_OPERATIONS: dict[ResourceType, tuple[AclOperation, ...]] = {
    ResourceType.TOPIC: (
        AclOperation.READ,
        AclOperation.WRITE,
        AclOperation.CREATE,
        AclOperation.DESCRIBE,
        AclOperation.DELETE,
        AclOperation.ALTER,
        AclOperation.DESCRIBE_CONFIGS,
        AclOperation.ALTER_CONFIGS,
    ),
    ResourceType.GROUP: (
        AclOperation.READ,
        AclOperation.DESCRIBE,
        AclOperation.DELETE,
        AclOperation.DESCRIBE_CONFIGS,
        AclOperation.ALTER_CONFIGS,
    ),
    ResourceType.CLUSTER: (
        AclOperation.CREATE,
        AclOperation.CLUSTER_ACTION,
        AclOperation.DESCRIBE_CONFIGS,
        AclOperation.ALTER_CONFIGS,
        AclOperation.IDEMPOTENT_WRITE,
        AclOperation.ALTER,
        AclOperation.DESCRIBE,
    ),
    ResourceType.TRANSACTIONAL_ID: (AclOperation.DESCRIBE, AclOperation.WRITE, AclOperation.TWO_PHASE_COMMIT),
    ResourceType.DELEGATION_TOKEN: (AclOperation.DESCRIBE,),
    ResourceType.USER: (AclOperation.CREATE_TOKENS, AclOperation.DESCRIBE_TOKENS),
}
"""The operations an ACL on each resource type can grant (Kafka's ``AclEntry.supportedOperations``):
what ``*_authorized_operations`` bitfields are made of."""


def _enum_or_unknown(kind: type[E], code: int) -> E:
    """A code a newer client may send that this broker does not know reads as UNKNOWN, as in Kafka."""
    try:
        return kind(code)
    except ValueError:
        return kind(0)


@dataclass(frozen=True, slots=True)
class AclBinding:
    """One ACL: who may (or may not) do what, from where, on which resources."""

    resource_type: ResourceType
    resource_name: str
    pattern_type: PatternType
    principal: str
    host: str
    operation: AclOperation
    permission: AclPermissionType

    @classmethod
    def from_codes(
        cls,
        resource_type: int,
        resource_name: str,
        pattern_type: int,
        principal: str,
        host: str,
        operation: int,
        permission: int,
    ) -> AclBinding:
        return cls(
            _enum_or_unknown(ResourceType, resource_type),
            resource_name,
            _enum_or_unknown(PatternType, pattern_type),
            principal,
            host,
            _enum_or_unknown(AclOperation, operation),
            _enum_or_unknown(AclPermissionType, permission),
        )

    def validation_error(self) -> str | None:
        """Why Kafka refuses to create this binding (INVALID_REQUEST), or None."""
        if self.resource_type in (ResourceType.UNKNOWN, ResourceType.ANY):
            return f"Invalid resourceType {self.resource_type.name}"
        if self.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
            return f"Invalid patternType {self.pattern_type.name}"
        if self.operation in (AclOperation.UNKNOWN, AclOperation.ANY):
            return f"Invalid operation {self.operation.name}"
        if self.permission not in (AclPermissionType.ALLOW, AclPermissionType.DENY):
            return f"Invalid permissionType {self.permission.name}"
        if self.resource_type == ResourceType.CLUSTER and self.resource_name != CLUSTER_NAME:
            return f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}"
        if not self.resource_name:
            return "Invalid empty resource name"
        if ":" not in self.principal:
            return (
                f"Could not parse principal from `{self.principal}` "
                "(no colon is present separating the principal type from the principal name)"
            )
        return None


@dataclass(frozen=True, slots=True)
class AclFilter:
    """What DescribeAcls and DeleteAcls select: a None name, principal or host matches any."""

    resource_type: ResourceType
    resource_name: str | None
    pattern_type: PatternType
    principal: str | None
    host: str | None
    operation: AclOperation
    permission: AclPermissionType

    @classmethod
    def from_request(cls, entry: Mapping[str, object]) -> AclFilter:
        """The filter of a DescribeAcls request or of one DeleteAcls filter."""
        return cls(
            _enum_or_unknown(ResourceType, int(entry["resource_type_filter"])),  # type: ignore[call-overload]
            entry["resource_name_filter"],  # type: ignore[arg-type]
            _enum_or_unknown(PatternType, int(entry["pattern_type_filter"])),  # type: ignore[call-overload]
            entry["principal_filter"],  # type: ignore[arg-type]
            entry["host_filter"],  # type: ignore[arg-type]
            _enum_or_unknown(AclOperation, int(entry["operation"])),  # type: ignore[call-overload]
            _enum_or_unknown(AclPermissionType, int(entry["permission_type"])),  # type: ignore[call-overload]
        )

    def validation_error(self) -> str | None:
        """Kafka refuses a filter with an UNKNOWN element (INVALID_REQUEST), with these messages."""
        if self.resource_type == ResourceType.UNKNOWN or self.pattern_type == PatternType.UNKNOWN:
            return "Unknown patternFilter."
        if self.operation == AclOperation.UNKNOWN or self.permission == AclPermissionType.UNKNOWN:
            return "Unknown entryFilter."
        return None

    def matches(self, acl: AclBinding) -> bool:
        return self._matches_resource(acl) and self._matches_entry(acl)

    def _matches_resource(self, acl: AclBinding) -> bool:
        if self.resource_type != ResourceType.ANY and self.resource_type != acl.resource_type:
            return False
        if (
            self.pattern_type not in (PatternType.ANY, PatternType.MATCH)
            and self.pattern_type != acl.pattern_type
        ):
            return False
        if self.resource_name is None:
            return True
        if self.pattern_type in (PatternType.ANY, acl.pattern_type):
            return self.resource_name == acl.resource_name
        # MATCH: the bindings that apply to this name.
        if acl.pattern_type == PatternType.LITERAL:
            return acl.resource_name in (self.resource_name, WILDCARD)
        return self.resource_name.startswith(acl.resource_name)

    def _matches_entry(self, acl: AclBinding) -> bool:
        if self.principal is not None and self.principal != acl.principal:
            return False
        if self.host is not None and self.host != acl.host:
            return False
        if self.operation != AclOperation.ANY and self.operation != acl.operation:
            return False
        return self.permission == AclPermissionType.ANY or self.permission == acl.permission

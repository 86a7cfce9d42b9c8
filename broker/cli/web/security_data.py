"""What the security page shows: every ACL binding (DescribeAcls) and every SCRAM user
(DescribeUserScramCredentials), in Kafka's words, as ``kafka-acls.sh --list`` and
``kafka-configs.sh --describe --entity-type users`` print them.

A broker without an authorizer answers DescribeAcls with SECURITY_DISABLED: the page then says
that every client may do everything, rather than showing an empty list that would suggest
nobody may do anything.
"""

from __future__ import annotations

from dataclasses import dataclass

from broker.cli.users import credential_rows
from broker.cli.web.errors import require
from broker.cli.web.links import Session
from broker.services.security.acl_model import AclOperation, AclPermissionType, PatternType, ResourceType
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode

ANY = 1
DESCRIBE_ACLS_VERSION = (1, 3)


@dataclass(frozen=True)
class AclRow:
    principal: str
    permission: str
    operation: str
    resource_type: str
    resource: str
    pattern: str
    host: str


@dataclass(frozen=True)
class SecurityView:
    acls: list[AclRow] | None
    """None: the broker has no authorizer."""
    users: list[list[object]]


def name_of(enum: type[ResourceType | PatternType | AclOperation | AclPermissionType], code: int) -> str:
    try:
        return enum(code).name
    except ValueError:
        return str(code)


def acl_rows(s: Session) -> list[AclRow] | None:
    version = s.version(ApiKey.DESCRIBE_ACLS, *DESCRIBE_ACLS_VERSION)
    if version is None:
        return None
    body = {
        "resource_type_filter": ANY,
        "resource_name_filter": None,
        "pattern_type_filter": ANY,
        "principal_filter": None,
        "host_filter": None,
        "operation": ANY,
        "permission_type": ANY,
    }
    answer = s.any().request(ApiKey.DESCRIBE_ACLS, version, body)
    if answer["error_code"] == ErrorCode.SECURITY_DISABLED:
        return None
    require(answer, "listing ACLs", "DESCRIBE on CLUSTER")
    rows = [
        AclRow(
            acl["principal"],
            name_of(AclPermissionType, acl["permission_type"]),
            name_of(AclOperation, acl["operation"]),
            name_of(ResourceType, resource["resource_type"]),
            resource["resource_name"],
            name_of(PatternType, resource["pattern_type"]),
            acl["host"],
        )
        for resource in answer["resources"]
        for acl in resource["acls"]
    ]
    return sorted(rows, key=lambda r: (r.resource_type, r.resource, r.principal, r.operation))


def security_view(s: Session) -> SecurityView:
    return SecurityView(acl_rows(s), credential_rows(s.any(), None))

"""The built-in authorizer: Kafka's StandardAuthorizer rules over an in-memory ACL index.

Decisions follow ``StandardAuthorizerData``: a super user may do anything; otherwise every ACL
whose resource pattern covers the resource (the literal name, the literal ``*``, any prefix)
and whose principal (or ``User:*``) and host (or ``*``) match is weighed; one DENY wins, else
one ALLOW grants.  An ALLOW for READ, WRITE, DELETE or ALTER also grants DESCRIBE, and ALTER_CONFIGS
grants DESCRIBE_CONFIGS, but a DENY denies only its own operation (or ALL).  A resource that no
ACL covers at all is allowed only with ``allow.everyone.if.no.acl.found``.

Lookups cost one dict probe per distinct prefix length in use, not a scan of the ACLs, since
every request of every API asks.  Changes go through :meth:`Authorizer.replace` so that the
store (``broker.services.security.acl_store``) is written before anything is answered or enforced.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from broker.services.security.acl_model import (
    SUPPORTED_OPERATIONS,
    WILDCARD,
    WILDCARD_PRINCIPAL,
    AclBinding,
    AclFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)

STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
"""The one ``authorizer.class.name`` Odradek implements (built in; empty means no authorizer)."""

IMPLIED_BY: dict[AclOperation, frozenset[AclOperation]] = {
    AclOperation.DESCRIBE: frozenset(
        {AclOperation.READ, AclOperation.WRITE, AclOperation.DELETE, AclOperation.ALTER}
    ),
    AclOperation.DESCRIBE_CONFIGS: frozenset({AclOperation.ALTER_CONFIGS}),
}
"""Operations an ALLOW grants besides its own (a DENY denies only its own, or ALL)."""


def parse_super_users(value: str | None) -> frozenset[str]:
    """``super.users``: principals separated by semicolons, as Kafka splits them."""
    return frozenset(p.strip() for p in (value or "").split(";") if p.strip())


def acl_verdict(acl: AclBinding, principal: str, host: str, operation: AclOperation) -> bool | None:
    """What one ACL says about the action: True allows, False denies, None has no say."""
    if acl.principal != principal and acl.principal != WILDCARD_PRINCIPAL:
        return None
    if acl.host != WILDCARD and acl.host != host:
        return None
    allow = acl.permission == AclPermissionType.ALLOW
    implied = allow and acl.operation in IMPLIED_BY.get(operation, ())
    if acl.operation not in (AclOperation.ALL, operation) and not implied:
        return None
    return allow


class Authorizer:
    """The ACLs in force and the broker's super users; answers "may this principal do this?"."""

    def __init__(
        self, super_users: frozenset[str], allow_if_no_acl: bool, acls: Iterable[AclBinding] = ()
    ) -> None:
        self.super_users = super_users
        self.allow_if_no_acl = allow_if_no_acl
        self._acls: dict[AclBinding, None] = {}
        self._literal: dict[ResourceType, dict[str, list[AclBinding]]] = {}
        self._prefixed: dict[ResourceType, dict[str, list[AclBinding]]] = {}
        self._prefix_lengths: dict[ResourceType, list[int]] = {}
        self.replace(acls)

    @property
    def acls(self) -> list[AclBinding]:
        """Every ACL, in the order they were created."""
        return list(self._acls)

    def replace(self, acls: Iterable[AclBinding]) -> None:
        """Enforce exactly ``acls`` from now on (duplicates collapse, as Kafka keeps one)."""
        self._acls = dict.fromkeys(acls)
        literal: dict[ResourceType, dict[str, list[AclBinding]]] = defaultdict(lambda: defaultdict(list))
        prefixed: dict[ResourceType, dict[str, list[AclBinding]]] = defaultdict(lambda: defaultdict(list))
        for acl in self._acls:
            table = literal if acl.pattern_type == PatternType.LITERAL else prefixed
            table[acl.resource_type][acl.resource_name].append(acl)
        self._literal = {kind: dict(names) for kind, names in literal.items()}
        self._prefixed = {kind: dict(names) for kind, names in prefixed.items()}
        self._prefix_lengths = {kind: sorted({len(n) for n in names}) for kind, names in prefixed.items()}

    def matching(self, acl_filter: AclFilter) -> list[AclBinding]:
        return [acl for acl in self._acls if acl_filter.matches(acl)]

    def _covering(self, resource_type: ResourceType, name: str) -> Iterable[AclBinding]:
        """Every ACL whose pattern covers ``name``: literal, literal ``*``, and prefixes."""
        literal = self._literal.get(resource_type, {})
        yield from literal.get(name, ())
        if name != WILDCARD:
            yield from literal.get(WILDCARD, ())
        prefixed = self._prefixed.get(resource_type)
        if prefixed:
            for length in self._prefix_lengths[resource_type]:
                if length > len(name):
                    break
                yield from prefixed.get(name[:length], ())

    def allowed(
        self, principal: str, host: str, operation: AclOperation, resource_type: ResourceType, name: str
    ) -> bool:
        if principal in self.super_users:
            return True
        covered = granted = False
        for acl in self._covering(resource_type, name):
            covered = True
            verdict = acl_verdict(acl, principal, host, operation)
            if verdict is False:
                return False
            granted = granted or verdict is True
        return granted or (not covered and self.allow_if_no_acl)

    def allowed_operations(self, principal: str, host: str, resource_type: ResourceType, name: str) -> int:
        """Kafka's ``*_authorized_operations`` bitfield: bit ``code`` for each operation allowed."""
        return sum(
            1 << op
            for op in SUPPORTED_OPERATIONS[resource_type]
            if self.allowed(principal, host, op, resource_type, name)
        )

    def allowed_on_any(
        self, principal: str, host: str, operation: AclOperation, resource_type: ResourceType
    ) -> bool:
        """Whether some resource of the type allows the operation (Kafka's ``authorizeByResourceType``,
        KIP-679: InitProducerId without a transactional id accepts WRITE on any topic).

        Kafka first asks about a made-up name, so super users and the no-ACL default count;
        then an ALLOW on a literal or prefixed pattern counts unless a DENY on the same literal,
        or a DENY prefix of it, takes it back; a DENY on literal ``*`` refuses outright.
        """
        if self.allowed(principal, host, operation, resource_type, "hardcode"):
            return True
        deny_literal: set[str] = set()
        deny_prefixed: set[str] = set()
        allows: list[AclBinding] = []
        for acl in self._acls:
            if acl.resource_type != resource_type:
                continue
            if acl.host not in (host, WILDCARD) or acl.principal not in (principal, WILDCARD_PRINCIPAL):
                continue
            if acl.operation not in (operation, AclOperation.ALL):
                continue
            if acl.permission == AclPermissionType.DENY:
                if acl.pattern_type == PatternType.LITERAL and acl.resource_name == WILDCARD:
                    return False
                (deny_literal if acl.pattern_type == PatternType.LITERAL else deny_prefixed).add(
                    acl.resource_name
                )
            else:
                allows.append(acl)
        for acl in allows:
            name = acl.resource_name
            if acl.pattern_type == PatternType.LITERAL and name in deny_literal:
                continue
            if not any(name[:end] in deny_prefixed for end in range(1, len(name) + 1)):
                return True
        return False

"""The authorizer's decisions and the ACL filters, against Kafka's StandardAuthorizer rules."""

from __future__ import annotations

from pathlib import Path

import pytest

from broker.config.config import BrokerConfig
from broker.services.security.acl_model import CLUSTER_NAME, AclBinding, AclFilter, AclPermissionType
from broker.services.security.acl_model import AclOperation as Op
from broker.services.security.acl_model import PatternType as P
from broker.services.security.acl_model import ResourceType as R
from broker.services.security.acl_store import ACL_FILE, decode_acls, encode_acls, open_acl_store
from broker.services.security.authorizer import STANDARD_AUTHORIZER, Authorizer, parse_super_users
from broker.state.documents import FileDocument

ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY
ALICE, BOB = "User:alice", "User:bob"
HOST = "10.0.0.1"


def acl(
    name: str,
    operation: Op,
    permission: AclPermissionType = ALLOW,
    *,
    principal: str = ALICE,
    host: str = "*",
    kind: R = R.TOPIC,
    pattern: P = P.LITERAL,
) -> AclBinding:
    return AclBinding(kind, name, pattern, principal, host, operation, permission)


def allowed(auth: Authorizer, name: str, operation: Op, principal: str = ALICE, host: str = HOST) -> bool:
    return auth.allowed(principal, host, operation, R.TOPIC, name)


def test_no_acl_uses_the_default() -> None:
    assert not allowed(Authorizer(frozenset(), allow_if_no_acl=False), "t", Op.READ)
    assert allowed(Authorizer(frozenset(), allow_if_no_acl=True), "t", Op.READ)


def test_a_resource_covered_by_any_acl_is_denied_to_whom_no_acl_allows() -> None:
    # allow.everyone.if.no.acl.found applies only to resources no ACL covers at all.
    auth = Authorizer(frozenset(), True, [acl("t", Op.READ, principal=BOB)])
    assert not allowed(auth, "t", Op.READ)
    assert allowed(auth, "t", Op.READ, principal=BOB)
    assert allowed(auth, "other", Op.READ)


def test_deny_wins_over_allow() -> None:
    auth = Authorizer(frozenset(), False, [acl("t", Op.ALL), acl("t", Op.WRITE, DENY)])
    assert allowed(auth, "t", Op.READ)
    assert not allowed(auth, "t", Op.WRITE)


@pytest.mark.parametrize("granting", [Op.READ, Op.WRITE, Op.DELETE, Op.ALTER, Op.DESCRIBE, Op.ALL])
def test_describe_is_implied(granting: Op) -> None:
    assert allowed(Authorizer(frozenset(), False, [acl("t", granting)]), "t", Op.DESCRIBE)


def test_describe_configs_is_implied_by_alter_configs_only() -> None:
    assert allowed(Authorizer(frozenset(), False, [acl("t", Op.ALTER_CONFIGS)]), "t", Op.DESCRIBE_CONFIGS)
    assert not allowed(Authorizer(frozenset(), False, [acl("t", Op.CREATE)]), "t", Op.DESCRIBE)
    assert not allowed(Authorizer(frozenset(), False, [acl("t", Op.READ)]), "t", Op.WRITE)


def test_a_deny_denies_only_its_own_operation() -> None:
    # A DENY READ does not deny DESCRIBE, even though an ALLOW READ would grant it.
    auth = Authorizer(frozenset(), False, [acl("t", Op.DESCRIBE), acl("t", Op.READ, DENY)])
    assert allowed(auth, "t", Op.DESCRIBE)
    assert not allowed(auth, "t", Op.READ)
    denied_all = Authorizer(frozenset(), False, [acl("t", Op.DESCRIBE), acl("t", Op.ALL, DENY)])
    assert not allowed(denied_all, "t", Op.DESCRIBE)


def test_wildcard_principal_and_hosts() -> None:
    auth = Authorizer(
        frozenset(),
        False,
        [acl("t", Op.READ, principal="User:*"), acl("t", Op.READ, DENY, principal=BOB, host="10.0.0.2")],
    )
    assert allowed(auth, "t", Op.READ)
    assert allowed(auth, "t", Op.READ, principal=BOB)
    assert not allowed(auth, "t", Op.READ, principal=BOB, host="10.0.0.2")
    assert not allowed(auth, "t", Op.WRITE)


def test_wildcard_and_prefixed_resource_names() -> None:
    auth = Authorizer(
        frozenset(),
        False,
        [
            acl("*", Op.READ),
            acl("billing-", Op.WRITE, pattern=P.PREFIXED),
            acl("billing-secret", Op.WRITE, DENY, pattern=P.PREFIXED),
        ],
    )
    assert allowed(auth, "anything", Op.READ)
    assert allowed(auth, "billing-eu", Op.WRITE)
    assert not allowed(auth, "billing-secret-2", Op.WRITE)
    assert not allowed(auth, "billing", Op.WRITE)  # shorter than the prefix
    assert not allowed(auth, "other", Op.WRITE)  # covered by the literal "*" ACL: no default


def test_a_literal_acl_named_like_a_prefix_does_not_cover_longer_names() -> None:
    auth = Authorizer(frozenset(), True, [acl("pay", Op.READ, principal=BOB)])
    assert allowed(auth, "payments", Op.READ)  # not covered: the default applies


def test_super_users_pass_every_check() -> None:
    auth = Authorizer(
        parse_super_users(" User:admin ; User:ops"), False, [acl("t", Op.ALL, DENY, principal="User:ops")]
    )
    assert allowed(auth, "t", Op.WRITE, principal="User:ops")
    assert allowed(auth, "t", Op.WRITE, principal="User:admin")
    assert not allowed(auth, "t", Op.WRITE, principal="User:admins")


def test_authorized_operations_bitfield() -> None:
    auth = Authorizer(frozenset(), False, [acl("t", Op.READ)])
    assert auth.allowed_operations(ALICE, HOST, R.TOPIC, "t") == (1 << Op.READ) | (1 << Op.DESCRIBE)
    assert Authorizer(frozenset(), True).allowed_operations(ALICE, HOST, R.GROUP, "g") == sum(
        1 << op for op in (Op.READ, Op.DESCRIBE, Op.DELETE, Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS)
    )


def test_allowed_on_any_resource_of_a_type() -> None:
    """Kafka's authorizeByResourceType (InitProducerId without a transactional id)."""

    def on_any(*acls: AclBinding) -> bool:
        return Authorizer(frozenset(), False, acls).allowed_on_any(ALICE, HOST, Op.WRITE, R.TOPIC)

    assert not on_any()
    assert on_any(acl("t", Op.WRITE))
    assert not on_any(acl("t", Op.WRITE), acl("t", Op.WRITE, DENY))
    assert on_any(acl("a-", Op.WRITE, pattern=P.PREFIXED), acl("b", Op.WRITE, DENY))
    assert not on_any(acl("ab", Op.WRITE), acl("a", Op.WRITE, DENY, pattern=P.PREFIXED))
    assert not on_any(acl("t", Op.WRITE), acl("*", Op.WRITE, DENY))
    assert not on_any(acl("t", Op.WRITE, principal=BOB))


@pytest.mark.parametrize(
    ("binding", "message"),
    [
        (acl("t", Op.READ, kind=R.ANY), "Invalid resourceType ANY"),
        (acl("t", Op.READ, pattern=P.MATCH), "Invalid patternType MATCH"),
        (acl("t", Op.ANY), "Invalid operation ANY"),
        (acl("t", Op.READ, AclPermissionType.ANY), "Invalid permissionType ANY"),
        (
            acl("my-cluster", Op.ALTER, kind=R.CLUSTER),
            "The only valid name for the CLUSTER resource is kafka-cluster",
        ),
        (acl("", Op.READ), "Invalid empty resource name"),
        (acl("t", Op.READ, principal="alice"), "Could not parse principal from `alice`"),
    ],
)
def test_validation_messages(binding: AclBinding, message: str) -> None:
    error = binding.validation_error()
    assert error is not None and error.startswith(message)


def test_a_valid_binding_passes() -> None:
    assert acl(CLUSTER_NAME, Op.ALTER, kind=R.CLUSTER).validation_error() is None


def acl_filter(
    name: str | None,
    pattern: P,
    kind: R = R.TOPIC,
    principal: str | None = None,
    operation: Op = Op.ANY,
) -> AclFilter:
    return AclFilter(kind, name, pattern, principal, None, operation, AclPermissionType.ANY)


def test_filter_pattern_types() -> None:
    literal, star = acl("payments", Op.READ), acl("*", Op.READ)
    prefixed = acl("pay", Op.READ, pattern=P.PREFIXED)
    everything = [literal, star, prefixed]

    def chosen(f: AclFilter) -> list[AclBinding]:
        return [a for a in everything if f.matches(a)]

    assert chosen(acl_filter("payments", P.MATCH)) == everything
    assert chosen(acl_filter("payments", P.ANY)) == [literal]
    assert chosen(acl_filter("pay", P.PREFIXED)) == [prefixed]
    assert chosen(acl_filter("payments", P.LITERAL)) == [literal]
    assert chosen(acl_filter(None, P.ANY)) == everything
    assert chosen(acl_filter(None, P.LITERAL)) == [literal, star]
    assert chosen(acl_filter("other", P.MATCH)) == [star]
    assert chosen(acl_filter(None, P.ANY, kind=R.GROUP)) == []
    assert chosen(acl_filter(None, P.ANY, principal=BOB)) == []
    assert chosen(acl_filter(None, P.ANY, operation=Op.WRITE)) == []


def test_filters_with_unknown_elements_are_invalid() -> None:
    assert acl_filter(None, P.UNKNOWN).validation_error() == "Unknown patternFilter."
    assert acl_filter(None, P.ANY, operation=Op.UNKNOWN).validation_error() == "Unknown entryFilter."
    assert AclBinding.from_codes(2, "t", 3, ALICE, "*", 99, 3).operation == Op.UNKNOWN


def test_stored_acls_round_trip_and_refuse_garbage() -> None:
    acls = [acl("t", Op.READ), acl("p-", Op.WRITE, DENY, pattern=P.PREFIXED, host=HOST)]
    assert decode_acls(encode_acls(acls)) == acls
    with pytest.raises(ValueError, match="version"):
        decode_acls(b'{"version": 7, "acls": []}')
    with pytest.raises(ValueError, match="invalid stored ACL"):
        decode_acls(b'{"version": 1, "acls": [[2, "", 3, "User:a", "*", 3, 3]]}')


def test_start_up_refuses_an_unknown_authorizer_or_an_unreadable_acl_file(tmp_path: Path) -> None:
    def store(class_name: str) -> object:
        config = BrokerConfig.load(overrides={"authorizer.class.name": class_name}, environ={})
        return open_acl_store(config, FileDocument(tmp_path / ACL_FILE))

    assert store("") is None
    with pytest.raises(SystemExit, match="AclAuthorizer is not supported"):
        store("kafka.security.authorizer.AclAuthorizer")
    (tmp_path / ACL_FILE).write_bytes(b"{not json")
    with pytest.raises(SystemExit, match="cannot be read"):
        store(STANDARD_AUTHORIZER)

"""The SASL exchange request by request, over a real socket, where stock clients hide it:
handshake versions, raw v0 tokens, refusals that close, session expiry and re-authentication
(KIP-368), the authentication deadline, and SCRAM credentials managed through the admin APIs
and kept across a restart.
"""

from __future__ import annotations

import socket
import struct
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from broker.client.admin_client import KafkaConnection
from compat_tests.kit.broker_process import OdradekProcess
from compat_tests.kit.brokers import RunningBroker, start_odradek
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode

JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret" user_bob="bob-pw";'
SESSION_MS = 1500


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningBroker]:
    running = start_odradek(
        tmp_path_factory.mktemp("sasl"),
        {
            "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
            "authentication.timeout.ms": "1000",
            "connections.max.reauth.ms": str(SESSION_MS),
            "connection.failed.authentication.delay.ms": "0",
            # a second SASL listener whose sessions never expire
            "listener.name.noexpiry.plain.sasl.jaas.config": JAAS,
            "listener.name.noexpiry.connections.max.reauth.ms": "0",
        },
        extra_listeners={"SASL_PLAINTEXT": "SASL_PLAINTEXT", "NOEXPIRY": "SASL_PLAINTEXT"},
    )
    yield running
    running.stop()


def _sasl(broker: RunningBroker) -> KafkaConnection:
    return KafkaConnection(broker.addresses["SASL_PLAINTEXT"], timeout=10)


def _handshake(conn: KafkaConnection, mechanism: str, version: int = 1) -> dict:
    return conn.request(ApiKey.SASL_HANDSHAKE, version, {"mechanism": mechanism})


def _plain(conn: KafkaConnection, user: str, password: str) -> dict:
    assert _handshake(conn, "PLAIN")["error_code"] == ErrorCode.NONE
    token = b"\0" + user.encode() + b"\0" + password.encode()
    return conn.request(ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": token})


def _is_closed(conn: KafkaConnection) -> bool:
    try:
        conn.metadata([])
    except (ConnectionError, OSError):
        return True
    return False


def test_unsupported_mechanism_lists_the_enabled_ones_then_closes(broker: RunningBroker) -> None:
    with _sasl(broker) as conn:
        answer = _handshake(conn, "GSSAPI")
        assert answer["error_code"] == ErrorCode.UNSUPPORTED_SASL_MECHANISM
        assert answer["mechanisms"] == ["PLAIN", "SCRAM-SHA-256"]
        assert _is_closed(conn)


def test_sasl_on_a_plaintext_listener_is_an_illegal_state(broker: RunningBroker) -> None:
    with KafkaConnection(broker.bootstrap) as conn:
        assert _handshake(conn, "PLAIN")["error_code"] == ErrorCode.ILLEGAL_SASL_STATE
        answer = conn.request(ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": b"\0alice\0alice-secret"})
        assert answer["error_code"] == ErrorCode.ILLEGAL_SASL_STATE
        assert conn.metadata([])["brokers"]  # still served


def test_handshake_v0_then_a_raw_token(broker: RunningBroker) -> None:
    with _sasl(broker) as conn:
        assert _handshake(conn, "PLAIN", version=0)["error_code"] == ErrorCode.NONE
        token = b"\0alice\0alice-secret"
        conn._sock.sendall(struct.pack(">i", len(token)) + token)
        assert conn._receive(4) == struct.pack(">i", 0)  # PLAIN's empty answer, no Kafka header
        assert [b["port"] for b in conn.metadata([])["brokers"]] == [
            int(broker.addresses["SASL_PLAINTEXT"].split(":")[1])
        ]


def test_wrong_password_is_answered_then_the_connection_closes(broker: RunningBroker) -> None:
    with _sasl(broker) as conn:
        answer = _plain(conn, "alice", "nope")
        assert answer["error_code"] == ErrorCode.SASL_AUTHENTICATION_FAILED
        assert answer["error_message"] == "Authentication failed: Invalid username or password"
        assert _is_closed(conn)


def test_requests_out_of_sequence_close_the_connection(broker: RunningBroker) -> None:
    with _sasl(broker) as conn:
        conn.send_request(ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": b"\0alice\0alice-secret"})
        assert _is_closed(conn)
    with _sasl(broker) as conn:
        assert conn.request(
            ApiKey.API_VERSIONS, 3, {"client_software_name": "t", "client_software_version": "1"}
        )
        assert _is_closed(conn)  # Metadata before authenticating


def test_session_expires_unless_the_client_re_authenticates(broker: RunningBroker) -> None:
    with _sasl(broker) as conn:
        answer = _plain(conn, "alice", "alice-secret")
        assert (answer["error_code"], answer["session_lifetime_ms"]) == (ErrorCode.NONE, SESSION_MS)
        time.sleep(SESSION_MS / 2000)
        assert _plain(conn, "alice", "alice-secret")["error_code"] == ErrorCode.NONE  # re-authenticated
        time.sleep(SESSION_MS / 2000)
        assert conn.metadata([])["brokers"]  # the first session's end has passed; the new one holds
        time.sleep(SESSION_MS / 1000)
        assert _is_closed(conn)


def test_an_expired_session_may_still_re_authenticate(broker: RunningBroker) -> None:
    with _sasl(broker) as conn:
        assert _plain(conn, "alice", "alice-secret")["error_code"] == ErrorCode.NONE
        time.sleep(SESSION_MS / 1000 + 0.2)
        assert _plain(conn, "alice", "alice-secret")["error_code"] == ErrorCode.NONE
        assert conn.metadata([])["brokers"]


def test_sessions_that_never_expire_are_not_re_authenticated(broker: RunningBroker) -> None:
    """As Kafka: without an expiry a SaslHandshake after authentication is ILLEGAL_SASL_STATE."""
    with KafkaConnection(broker.addresses["NOEXPIRY"], timeout=10) as conn:
        answer = _plain(conn, "alice", "alice-secret")
        assert (answer["error_code"], answer["session_lifetime_ms"]) == (ErrorCode.NONE, 0)
        assert _handshake(conn, "PLAIN")["error_code"] == ErrorCode.ILLEGAL_SASL_STATE
        assert conn.metadata([])["brokers"]


def test_re_authentication_keeps_the_mechanism(broker: RunningBroker) -> None:
    with _sasl(broker) as conn:
        assert _plain(conn, "alice", "alice-secret")["error_code"] == ErrorCode.NONE
        assert _handshake(conn, "SCRAM-SHA-256")["error_code"] == ErrorCode.UNSUPPORTED_SASL_MECHANISM
        assert _is_closed(conn)


def test_an_unknown_api_before_authentication_closes_quietly(broker: RunningBroker) -> None:
    host, port = broker.addresses["SASL_PLAINTEXT"].split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        body = struct.pack(">hhih", 9999, 0, 1, 0)
        sock.sendall(struct.pack(">i", len(body)) + body)
        assert sock.recv(1) == b""
    assert "Traceback" not in broker.log_path.read_text()


def test_re_authentication_cannot_change_the_principal(broker: RunningBroker) -> None:
    with _sasl(broker) as conn:
        assert _plain(conn, "alice", "alice-secret")["error_code"] == ErrorCode.NONE
        answer = _plain(conn, "bob", "bob-pw")
        assert answer["error_code"] == ErrorCode.SASL_AUTHENTICATION_FAILED
        assert (
            answer["error_message"]
            == "Cannot change principals during re-authentication from User.alice: User.bob"
        )
        assert _is_closed(conn)


def test_large_frames_before_authentication_are_refused(broker: RunningBroker) -> None:
    """sasl.server.max.receive.size (512 KiB) bounds every frame until the client authenticated."""
    host, port = broker.addresses["SASL_PLAINTEXT"].split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(struct.pack(">i", 600_000) + b"\0" * 1024)
        assert sock.recv(1) == b""
    assert "exceeds sasl.server.max.receive.size=524288" in broker.log_path.read_text()


def test_delegation_tokens_are_disabled(broker: RunningBroker) -> None:
    """No token authentication: refused on PLAINTEXT, disabled on an authenticated SASL listener."""
    describe = {"owners": None}
    with KafkaConnection(broker.bootstrap) as conn:
        answer = conn.request(ApiKey.DESCRIBE_DELEGATION_TOKEN, 3, describe)
        assert answer["error_code"] == ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED
    with _sasl(broker) as conn:
        assert _plain(conn, "alice", "alice-secret")["error_code"] == ErrorCode.NONE
        answer = conn.request(ApiKey.DESCRIBE_DELEGATION_TOKEN, 3, describe)
        assert answer["error_code"] == ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED


def test_a_client_that_never_authenticates_is_closed(broker: RunningBroker) -> None:
    host, port = broker.addresses["SASL_PLAINTEXT"].split(":")
    with socket.create_connection((host, int(port)), timeout=20) as sock:
        assert sock.recv(1) == b""  # closed by the broker after authentication.timeout.ms


def _scram_upsert(name: str, iterations: int = 4096, mechanism: int = 1) -> dict:
    return {
        "name": name,
        "mechanism": mechanism,
        "iterations": iterations,
        "salt": b"s" * 16,
        "salted_password": b"p" * 32,
    }


def test_scram_credentials_are_validated_and_survive_a_restart(tmp_path: Path) -> None:
    process = OdradekProcess(tmp_path).start()
    try:
        with KafkaConnection(process.bootstrap) as conn:
            answer = conn.request(
                ApiKey.ALTER_USER_SCRAM_CREDENTIALS,
                0,
                {
                    "deletions": [{"name": "ghost", "mechanism": 1}],
                    "upsertions": [
                        _scram_upsert("bob"),
                        _scram_upsert("weak", iterations=100),
                        _scram_upsert("twice"),
                        _scram_upsert("twice", mechanism=2),
                        _scram_upsert("odd", mechanism=9),
                    ],
                },
            )
            results = {r["user"]: (r["error_code"], r["error_message"]) for r in answer["results"]}
            assert results == {
                "ghost": (
                    ErrorCode.RESOURCE_NOT_FOUND,
                    "Attempt to delete a user credential that does not exist",
                ),
                "bob": (ErrorCode.NONE, None),
                "weak": (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations"),
                "twice": (
                    ErrorCode.DUPLICATE_RESOURCE,
                    "A user credential cannot be altered twice in the same request",
                ),
                "odd": (ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"),
            }
        process.restart()
        with KafkaConnection(process.bootstrap) as conn:
            described = conn.request(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, 0, {"users": None})
            assert [(r["user"], r["credential_infos"]) for r in described["results"]] == [
                ("bob", [{"mechanism": 1, "iterations": 4096}])
            ]
        assert oct((process.data_dir / "scram-credentials.json").stat().st_mode & 0o777) == "0o600"
    finally:
        process.stop()

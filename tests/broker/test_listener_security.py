"""Listener security at start-up: what cannot authenticate anybody is refused with a fix.

Before TLS and SASL existed, ``SSL://`` and ``SASL_*://`` listeners were refused outright;
now they start when configured, and a configuration that would leave a listener unusable
(no certificate, Kafka's default GSSAPI, a PLAIN listener without users) refuses to start
with one line naming the key to set, before the data directory is touched.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import trustme

from broker.config.config import BrokerConfig, ConfigError
from broker.services.security.listener_security import SecurityProtocol, build_listener_security
from compat_tests.kit.brokers import odradek_command

PLAIN_JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret";'


def _security(overrides: dict[str, str]) -> dict:
    config = BrokerConfig.load(overrides=overrides, environ={})
    return build_listener_security(config, lambda user, mechanism: None)


@pytest.fixture(scope="module")
def server_pem(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("tls") / "server.pem"
    trustme.CA().issue_cert("localhost").private_key_and_cert_chain_pem.write_to_path(str(path))
    return path


def test_tls_listener_without_a_certificate_is_refused() -> None:
    with pytest.raises(
        ConfigError, match="listener SSL speaks TLS but has no certificate: set ssl.keystore.type=PEM"
    ):
        _security({"listeners": "SSL://127.0.0.1:0"})


def test_non_pem_keystore_is_refused_with_how_to_convert(server_pem: Path) -> None:
    with pytest.raises(ConfigError, match="ssl.keystore.type=JKS: Odradek reads PEM keystores only"):
        _security({"listeners": "SSL://127.0.0.1:0", "ssl.keystore.location": str(server_pem)})


def test_listener_prefixed_keys_configure_one_listener(server_pem: Path) -> None:
    security = _security(
        {
            "listeners": "PLAINTEXT://127.0.0.1:0,SECURE://127.0.0.1:0",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SECURE:SASL_SSL",
            "listener.name.secure.ssl.keystore.type": "PEM",
            "listener.name.secure.ssl.keystore.location": str(server_pem),
            "listener.name.secure.sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-512",
            "listener.name.secure.plain.sasl.jaas.config": PLAIN_JAAS,
        }
    )
    assert security["PLAINTEXT"].protocol is SecurityProtocol.PLAINTEXT and security["PLAINTEXT"].tls is None
    assert security["SECURE"].protocol is SecurityProtocol.SASL_SSL and security["SECURE"].tls is not None
    assert list(security["SECURE"].mechanisms) == ["PLAIN", "SCRAM-SHA-512"]


def test_gssapi_default_on_a_sasl_listener_is_refused() -> None:
    with pytest.raises(ConfigError, match="lists GSSAPI, which Odradek does not implement"):
        _security({"listeners": "SASL_PLAINTEXT://127.0.0.1:0"})


def test_plain_without_users_is_refused() -> None:
    with pytest.raises(
        ConfigError, match="enables PLAIN but lists no users: set listener.name.sasl_plaintext.plain"
    ):
        _security({"listeners": "SASL_PLAINTEXT://127.0.0.1:0", "sasl.enabled.mechanisms": "PLAIN"})


def test_jaas_line_of_the_wrong_module_is_refused() -> None:
    with pytest.raises(ConfigError, match="names login module .*ScramLoginModule; this mechanism needs"):
        _security(
            {
                "listeners": "SASL_PLAINTEXT://127.0.0.1:0",
                "sasl.enabled.mechanisms": "PLAIN",
                "listener.name.sasl_plaintext.plain.sasl.jaas.config": (
                    "org.apache.kafka.common.security.scram.ScramLoginModule required;"
                ),
            }
        )


def test_custom_listener_name_resolves_through_the_protocol_map() -> None:
    security = _security(
        {"listeners": "INTERNAL://127.0.0.1:0", "listener.security.protocol.map": "INTERNAL:PLAINTEXT"}
    )
    assert security["INTERNAL"].protocol is SecurityProtocol.PLAINTEXT


def test_listener_missing_from_the_protocol_map_is_refused() -> None:
    with pytest.raises(ConfigError, match="listener INTERNAL has no security protocol"):
        _security({"listeners": "INTERNAL://127.0.0.1:0"})


def test_listener_prefixed_keys_are_not_reported_unknown() -> None:
    config = BrokerConfig.load(
        overrides={
            "listener.name.sasl_ssl.plain.sasl.jaas.config": PLAIN_JAAS,
            "listener.name.x.ssl.client.auth": "none",
        },
        environ={},
    )
    assert config.unknown_keys == []


def test_serve_exits_non_zero_with_one_clear_line(tmp_path: Path) -> None:
    result = subprocess.run(
        [
            odradek_command(),
            "serve",
            "--data-dir",
            str(tmp_path / "data"),
            "--listeners",
            "SSL://127.0.0.1:0",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "configuration error: listener SSL speaks TLS but has no certificate" in lines[0]
    assert not (tmp_path / "data").exists()

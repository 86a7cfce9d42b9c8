"""Listeners whose security protocol Odradek does not implement are refused at start-up.

Before, ``SSL://`` and ``SASL_*://`` listeners started and spoke plaintext: whatever a client
believed encrypted or authenticated went over the wire in the clear.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from broker.config import BrokerConfig, ConfigError
from compat_tests.brokers import odradek_command


@pytest.mark.parametrize("name", ["SSL", "SASL_PLAINTEXT", "SASL_SSL"])
def test_non_plaintext_listener_is_refused(name: str) -> None:
    with pytest.raises(ConfigError, match=f"listener {name} uses security protocol {name}"):
        BrokerConfig.load(
            overrides={"listeners": f"PLAINTEXT://127.0.0.1:0,{name}://127.0.0.1:0"}, environ={}
        )


def test_custom_listener_name_resolves_through_the_protocol_map() -> None:
    with pytest.raises(ConfigError, match="listener SECURE uses security protocol SSL"):
        BrokerConfig.load(
            overrides={"listeners": "SECURE://127.0.0.1:0", "listener.security.protocol.map": "SECURE:SSL"},
            environ={},
        )
    config = BrokerConfig.load(
        overrides={
            "listeners": "INTERNAL://127.0.0.1:0",
            "listener.security.protocol.map": "INTERNAL:PLAINTEXT",
        },
        environ={},
    )
    assert [listener.name for listener in config.listeners] == ["INTERNAL"]


def test_listener_missing_from_the_protocol_map_is_refused() -> None:
    with pytest.raises(ConfigError, match="listener INTERNAL has no security protocol"):
        BrokerConfig.load(overrides={"listeners": "INTERNAL://127.0.0.1:0"}, environ={})


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
    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "SSL" in lines[0] and "refusing to start" in lines[0]
    assert not (tmp_path / "data").exists() or not any((tmp_path / "data").iterdir())

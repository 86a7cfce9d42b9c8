"""``max.connections``: derived from the descriptor limit unless configured."""

from __future__ import annotations

import resource

from broker.config import BrokerConfig
from broker.server import connection_limits


def test_default_max_connections_leaves_descriptors_for_the_logs() -> None:
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    config = BrokerConfig.load(overrides={"log.open.files.max": "1000"}, environ={})
    limits = connection_limits(config)
    assert limits.max_connections == max(16, soft - 1000 - 64)
    assert limits.max_connections < soft


def test_configured_max_connections_is_taken_as_is() -> None:
    config = BrokerConfig.load(overrides={"max.connections": "7", "max.connections.per.ip": "3"}, environ={})
    limits = connection_limits(config)
    assert (limits.max_connections, limits.max_per_ip) == (7, 3)
    assert [limits.admit("10.0.0.1") for _ in range(4)] == [True, True, True, False]
    assert [limits.admit("10.0.0.2") for _ in range(4)] == [True, True, True, False]
    limits.leave("10.0.0.1")
    assert limits.admit("10.0.0.2") is False  # its own per-address limit
    assert limits.admit("10.0.0.1") is True
    assert [limits.admit("10.0.0.3") for _ in range(2)] == [True, False]  # the total of 7

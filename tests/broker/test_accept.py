"""``max.connections``: derived from the descriptor limit unless configured."""

from __future__ import annotations

import resource

from broker.config.config import BrokerConfig
from broker.network.accept import ConnectionLimits, ConnectionSlot
from broker.network.stall_watch import StallWatch
from broker.node.server import connection_limits


def test_default_max_connections_leaves_descriptors_for_the_logs() -> None:
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    config = BrokerConfig.load(overrides={"log.open.files.max": "1000"}, environ={})
    limits = connection_limits(config)
    assert limits.max_connections == max(16, soft - 1000 - 64)
    assert limits.max_connections < soft


def admitted(limits: ConnectionLimits, ip: str, count: int) -> list[ConnectionSlot | None]:
    return [limits.admit(ip) for _ in range(count)]


def test_configured_max_connections_is_taken_as_is() -> None:
    config = BrokerConfig.load(overrides={"max.connections": "7", "max.connections.per.ip": "3"}, environ={})
    limits = connection_limits(config)
    assert (limits.max_connections, limits.max_per_ip) == (7, 3)
    first = admitted(limits, "10.0.0.1", 4)
    assert [slot is not None for slot in first] == [True, True, True, False]
    assert [slot is not None for slot in admitted(limits, "10.0.0.2", 4)] == [True, True, True, False]
    assert first[0] is not None
    limits.leave(first[0])
    assert limits.admit("10.0.0.2") is None  # its own per-address limit
    assert limits.admit("10.0.0.1") is not None
    assert limits.total == 6


async def test_at_the_limit_a_crowded_address_gives_way_to_another() -> None:
    """One address flooding the broker cannot lock the others out: a newcomer from elsewhere
    takes the place of the flooder's least recently active connection."""
    limits = ConnectionLimits(max_connections=4, max_per_ip=100)
    flood = admitted(limits, "10.0.0.66", 4)
    for index, slot in enumerate(flood):
        assert slot is not None
        slot.stalls = StallWatch(600.0)
        slot.stalls.reading_since = 100.0 - index  # the last one has been quiet the longest
    assert limits.admit("10.0.0.66") is None  # the flooder itself is refused
    newcomer = limits.admit("10.0.0.7")
    assert newcomer is not None
    assert [slot.scope.cancel_called for slot in flood if slot] == [False, False, False, True]
    assert (limits.total, limits.connections_from("10.0.0.66")) == (4, 3)
    limits.leave(flood[3])  # the evicted connection ends: already counted out
    assert limits.total == 4
    second = limits.admit("10.0.0.8")  # 3 against 0: room is made again
    assert second is not None
    assert limits.connections_from("10.0.0.66") == 2
    assert limits.admit("10.0.0.9") is not None  # 2 against 0: 1 and 1 after
    assert limits.connections_from("10.0.0.66") == 1
    assert limits.admit("10.0.0.10") is None  # 1 against 0: evicting would not even things

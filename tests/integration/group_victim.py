"""A consumer group member in a process of its own, for a test to SIGKILL.

Run as ``python -m tests.integration.group_victim CLIENT BOOTSTRAP TOPIC GROUP PROTOCOL`` (CLIENT
one of :data:`compat_tests.kit.drivers.catalog.PYTHON_DRIVERS`, PROTOCOL a ``group.protocol``): it joins
``GROUP`` for ``TOPIC`` as client id ``victim`` and prints ``OWNS <partitions>`` whenever its
assignment changes, until killed. Killed, it sends no LeaveGroup: only its session timeout tells
the coordinator it is gone.
"""

from __future__ import annotations

import sys

from compat_tests.kit.drivers.base import ConsumerSettings
from compat_tests.kit.drivers.catalog import PYTHON_DRIVERS

CLASSIC_SESSION_MS = 6000
"""The victim's classic session timeout (the consumer protocol's session is the broker's)."""


def main(client: str, bootstrap: str, topic: str, group: str, protocol: str) -> None:
    """Consume as the victim and report each new assignment, forever."""
    session = CLASSIC_SESSION_MS if protocol == "classic" else None
    settings = ConsumerSettings(
        group=group, group_protocol=protocol, client_id="victim", session_timeout_ms=session
    )
    with PYTHON_DRIVERS[client](bootstrap).consumer(settings) as consumer:
        consumer.subscribe([topic])
        owned: list[int] | None = None
        while True:
            consumer.poll(500, 0.1)
            now = sorted(p for _, p in consumer.assignment())
            if now != owned:
                owned = now
                print("OWNS", *now, flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:6])

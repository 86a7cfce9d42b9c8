"""The clients' scenario drivers (those not on the JVM), bulk and admin classes, by client name:
what the integration tests parametrize over (the compatibility suite chooses its drivers, the
Java client's too, in :mod:`compat_tests.pools`)."""

from __future__ import annotations

from compat_tests.kit.drivers.admin import Admin
from compat_tests.kit.drivers.aiokafka_driver import AiokafkaClient, AiokafkaDriver
from compat_tests.kit.drivers.base import Driver
from compat_tests.kit.drivers.bulk import BulkClient
from compat_tests.kit.drivers.confluent import ConfluentAdmin, ConfluentClient, ConfluentDriver
from compat_tests.kit.drivers.kafka_python import KafkaPythonAdmin, KafkaPythonClient, KafkaPythonDriver
from compat_tests.kit.drivers.kcat import KcatDriver

PYTHON_DRIVERS: dict[str, type[Driver]] = {
    "kafka-python": KafkaPythonDriver,
    "confluent-kafka": ConfluentDriver,
    "aiokafka": AiokafkaDriver,
    "kcat": KcatDriver,
}
"""Every scenario driver of a client that is not on the JVM (kcat runs as subprocesses), by name."""

CLIENTS: dict[str, type[BulkClient]] = {
    c.name: c for c in (KafkaPythonClient, ConfluentClient, AiokafkaClient)
}
"""Every bulk client, by name: parametrize tests over its keys."""

ADMINS: dict[str, type[Admin]] = {a.name: a for a in (ConfluentAdmin, KafkaPythonAdmin)}
"""Every admin client, by name: parametrize tests over its keys."""

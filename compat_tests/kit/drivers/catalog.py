"""The Python clients' bulk and admin classes, by client name: what the integration tests
parametrize over (the compatibility suite's drivers are chosen in :mod:`compat_tests.pools`)."""

from __future__ import annotations

from compat_tests.kit.drivers.admin import Admin
from compat_tests.kit.drivers.aiokafka_driver import AiokafkaClient
from compat_tests.kit.drivers.bulk import BulkClient
from compat_tests.kit.drivers.confluent import ConfluentAdmin, ConfluentClient
from compat_tests.kit.drivers.kafka_python import KafkaPythonAdmin, KafkaPythonClient

CLIENTS: dict[str, type[BulkClient]] = {
    c.name: c for c in (KafkaPythonClient, ConfluentClient, AiokafkaClient)
}
"""Every bulk client, by name: parametrize tests over its keys."""

ADMINS: dict[str, type[Admin]] = {a.name: a for a in (ConfluentAdmin, KafkaPythonAdmin)}
"""Every admin client, by name: parametrize tests over its keys."""

"""The test kit: what the compatibility suite, the unit and integration tests (``tests/``), the
Spark tests and the benchmarks share to reach a broker, Odradek or Apache Kafka.

- :mod:`compat_tests.kit.raw_protocol`: one request and its one answer, on the CLI's
  ``KafkaConnection`` (readiness, leader look-ups, exact error codes, hand-built batches), and
  the frames and trio streams of tests that write the bytes themselves.
- :mod:`compat_tests.kit.in_process`: an Odradek broker in the test's own trio loop
  (``running_broker``), for tests that reach inside it or write every byte themselves.
- :mod:`compat_tests.kit.broker_process`: an ``odradek serve`` process that keeps its port and
  data directory across a stop, a kill -9 and a restart (``OdradekProcess``).
- :mod:`compat_tests.kit.etcd_cluster`: real etcd clusters of one or three members, and
  :mod:`compat_tests.kit.fixtures`, their pytest fixtures (a plugin of the root ``conftest.py``).
- :mod:`compat_tests.kit.clusters`: the one cluster harness, three Odradek or Apache Kafka
  brokers to kill, restart, pause and resume.
- :mod:`compat_tests.kit.history` checks produced records (none lost, none duplicated),
  :mod:`compat_tests.kit.record_writers` reads who wrote a record, :mod:`compat_tests.kit.hostile`
  opens hostile connections, :mod:`compat_tests.kit.secured` starts secured brokers and
  :mod:`compat_tests.kit.eos_loop` runs a consume-transform-produce service.

``tests/`` imports the compatibility suite only through this package, and the suite never
imports ``tests/`` (``tests/architecture/test_kit_boundary.py`` checks both).
"""

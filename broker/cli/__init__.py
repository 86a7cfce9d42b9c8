"""The ``odradek`` command: top layer; it speaks the Kafka protocol to brokers (``broker.client``), and starts a node (``broker.node``) for ``odradek serve``."""

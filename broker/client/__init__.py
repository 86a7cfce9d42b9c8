"""A small blocking Kafka protocol client on the project's own codecs: bottom layer, it imports nothing of the broker."""

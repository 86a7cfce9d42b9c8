"""Configuration: the broker's settings, Kafka's config definitions, dynamic configs and their rules. Bottom layer of the node (it imports only ``broker.client``-free code: wire/, log/)."""

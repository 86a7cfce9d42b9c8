"""The node's persisted registries: topics, producer id blocks, quota and client-metrics settings. Above ``broker.config``, below the services."""

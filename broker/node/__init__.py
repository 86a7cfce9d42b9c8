"""The node's wiring: the :class:`~broker.node.server.Broker` that builds every service and the server that runs them. The only layer that knows all the others."""

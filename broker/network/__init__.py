"""The network layer: accepting connections, framing, request memory, TLS handshakes and transports; it hands each decoded request to ``broker.requests``."""

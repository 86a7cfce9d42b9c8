"""Kafka's security model: listeners with security protocols, TLS, SASL authentication.

``listener_security`` turns the configuration into one :class:`ListenerSecurity` per listener;
``transport`` gives the connection the same byte interface over plaintext and TLS;
``authentication`` is a connection's SASL state machine; the mechanisms (``plain``,
``scram``, ``oauthbearer``) are sans-IO servers that only see tokens.
"""

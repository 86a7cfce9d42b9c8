"""The Odradek Console: a web console for any Kafka-compatible broker (``odradek console``).

It is a Kafka client like the other ``odradek`` commands (it speaks only the protocol, through
:mod:`broker.client.admin_client`), served by its own process; :mod:`broker.cli.web.command`
says why the web stack is what it is.
"""

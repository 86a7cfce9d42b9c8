"""Each listener's security: its protocol, TLS context and SASL mechanisms, checked at start-up.

Kafka's keys, with Kafka's per-listener overrides: ``listener.name.<listener>.<key>`` wins over
``<key>`` (``listener.name.sasl_ssl.ssl.keystore.location``), and a mechanism's JAAS line is
``listener.name.<listener>.<mechanism>.sasl.jaas.config``.  Anything that would leave a
listener unable to authenticate anybody (no certificate, GSSAPI, a PLAIN listener without
users) refuses to start with a message naming the key to set.
"""

from __future__ import annotations

import ssl
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from urllib.parse import unquote, urlparse

from broker.config.config import BrokerConfig, ConfigError, parse_security_protocol_map, with_default
from broker.services.security.jaas import parse_jaas
from broker.services.security.mechanism import SaslServer
from broker.services.security.oauthbearer import (
    JWKS_VALIDATOR,
    OAUTHBEARER_LOGIN_MODULE,
    OAuthBearerServer,
    TokenValidator,
    UnsecuredValidator,
)
from broker.services.security.plain import PLAIN_LOGIN_MODULE, PlainServer, plain_users
from broker.services.security.scram import HASHES, ScramLookup, ScramServer
from broker.services.security.tls import PrincipalMapper, server_context
from log.clock import Clock, wall_clock_ms


class SecurityProtocol(Enum):
    PLAINTEXT = "PLAINTEXT"
    SSL = "SSL"
    SASL_PLAINTEXT = "SASL_PLAINTEXT"
    SASL_SSL = "SASL_SSL"

    @property
    def uses_tls(self) -> bool:
        return self in (SecurityProtocol.SSL, SecurityProtocol.SASL_SSL)

    @property
    def uses_sasl(self) -> bool:
        return self in (SecurityProtocol.SASL_PLAINTEXT, SecurityProtocol.SASL_SSL)


MechanismFactory = Callable[[], SaslServer]


@dataclass(frozen=True)
class ListenerSecurity:
    """What a connection accepted on this listener must go through before its requests count."""

    name: str
    protocol: SecurityProtocol
    tls: ssl.SSLContext | None = None
    principal_mapper: PrincipalMapper | None = None
    mechanisms: dict[str, MechanismFactory] = field(default_factory=dict)
    reauth_ms: int = 0  # connections.max.reauth.ms (KIP-368); 0: sessions do not expire
    max_token_bytes: int = 524288  # sasl.server.max.receive.size
    failed_auth_delay_s: float = 0.1  # connection.failed.authentication.delay.ms
    authentication_timeout_s: float = 10.0
    clock: Clock = wall_clock_ms  # the broker's, for credential expiry (``log.clock``)


def listener_lookup(config: BrokerConfig, listener: str) -> Callable[[str], str | None]:
    """``key`` for one listener: its ``listener.name.<listener>.`` override, else the broker's."""
    prefix = f"listener.name.{listener.lower()}."

    def get(key: str) -> str | None:
        value = config.explicit.get(prefix + key)
        return value if value is not None else config.get(key)

    return get


def _jaas(config: BrokerConfig, listener: str, mechanism: str, module: str) -> dict[str, str] | None:
    key = f"listener.name.{listener.lower()}.{mechanism.lower()}.sasl.jaas.config"
    text = config.explicit.get(key)
    return None if text is None else parse_jaas(key, text, module)


def _file_url_text(url: str, key: str) -> str:
    parsed = urlparse(url)
    if parsed.scheme != "file":
        raise ConfigError(
            f"{key}={url}: Odradek reads JWKS from a file: URL (fetching over HTTPS is not built in)"
        )
    try:
        return Path(unquote(parsed.path)).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{key}={url}: {exc.strerror}") from None


def _token_validator(config: BrokerConfig, listener: str, clock: Clock) -> TokenValidator:
    get = listener_lookup(config, listener)
    handler = get("oauthbearer.sasl.server.callback.handler.class") or get(
        "sasl.server.callback.handler.class"
    )
    if handler == JWKS_VALIDATOR:
        url = get("sasl.oauthbearer.jwks.endpoint.url")
        if not url:
            raise ConfigError(
                f"listener {listener}: {JWKS_VALIDATOR} needs sasl.oauthbearer.jwks.endpoint.url"
            )
        audience = [
            a.strip() for a in (get("sasl.oauthbearer.expected.audience") or "").split(",") if a.strip()
        ]
        # Imported here: PyJWT's import costs every broker start 70 ms, and only this validator uses it.
        from broker.services.security.jwks_validator import JwksValidator

        try:
            return JwksValidator(
                _file_url_text(url, "sasl.oauthbearer.jwks.endpoint.url"),
                audience,
                get("sasl.oauthbearer.expected.issuer"),
                with_default(get, "sasl.oauthbearer.sub.claim.name"),
                int(with_default(get, "sasl.oauthbearer.clock.skew.seconds")),
            )
        except ValueError as exc:
            raise ConfigError(
                f"sasl.oauthbearer.jwks.endpoint.url: not a usable JWKS document: {exc}"
            ) from None
    if handler:
        raise ConfigError(f"listener {listener}: OAUTHBEARER validator {handler} is not available in Odradek")
    return UnsecuredValidator.from_options(
        _jaas(config, listener, "OAUTHBEARER", OAUTHBEARER_LOGIN_MODULE) or {}, clock
    )


def _mechanisms(
    config: BrokerConfig, listener: str, scram: ScramLookup, clock: Clock
) -> dict[str, MechanismFactory]:
    get = listener_lookup(config, listener)
    enabled = [m.strip().upper() for m in (get("sasl.enabled.mechanisms") or "").split(",") if m.strip()]
    factories: dict[str, MechanismFactory] = {}
    for mechanism in enabled:
        if mechanism == "PLAIN":
            options = _jaas(config, listener, mechanism, PLAIN_LOGIN_MODULE)
            users = plain_users(options or {})
            if not users:
                raise ConfigError(
                    f"listener {listener} enables PLAIN but lists no users: set "
                    f"listener.name.{listener.lower()}.plain.sasl.jaas.config="
                    f'{PLAIN_LOGIN_MODULE} required user_alice="alice-secret";'
                )
            factories[mechanism] = lambda users=users: PlainServer(users)
        elif mechanism in HASHES:
            factories[mechanism] = lambda mechanism=mechanism: ScramServer(mechanism, scram)
        elif mechanism == "OAUTHBEARER":
            validator = _token_validator(config, listener, clock)
            factories[mechanism] = lambda validator=validator: OAuthBearerServer(validator)
        else:
            raise ConfigError(
                f"sasl.enabled.mechanisms lists {mechanism}, which Odradek does not implement (GSSAPI is Kafka's "
                "default): use PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER"
            )
    if not factories:
        raise ConfigError(f"listener {listener} uses SASL but sasl.enabled.mechanisms is empty")
    return factories


def build_listener_security(
    config: BrokerConfig, scram: ScramLookup, clock: Clock = wall_clock_ms
) -> dict[str, ListenerSecurity]:
    """One :class:`ListenerSecurity` per configured listener name; ``clock`` is the broker's, so
    token expiry is judged by the same time as everything else the broker dates."""
    protocols = parse_security_protocol_map(config.get("listener.security.protocol.map") or "")
    result: dict[str, ListenerSecurity] = {}
    for listener in config.listeners:
        name = listener.name
        protocol_name = protocols.get(name)
        if protocol_name is None:
            raise ConfigError(
                f"listener {name} has no security protocol: add {name}:PLAINTEXT (or SSL, SASL_PLAINTEXT, "
                "SASL_SSL) to listener.security.protocol.map"
            )
        try:
            protocol = SecurityProtocol(protocol_name)
        except ValueError:
            raise ConfigError(
                f"listener {name} maps to unknown security protocol {protocol_name}: use PLAINTEXT, SSL, "
                "SASL_PLAINTEXT or SASL_SSL"
            ) from None
        get = listener_lookup(config, name)
        result[name] = ListenerSecurity(
            name,
            protocol,
            tls=server_context(get, name) if protocol.uses_tls else None,
            principal_mapper=PrincipalMapper(with_default(get, "ssl.principal.mapping.rules")),
            mechanisms=_mechanisms(config, name, scram, clock) if protocol.uses_sasl else {},
            reauth_ms=int(with_default(get, "connections.max.reauth.ms")),
            max_token_bytes=int(with_default(get, "sasl.server.max.receive.size")),
            failed_auth_delay_s=int(with_default(get, "connection.failed.authentication.delay.ms")) / 1000,
            authentication_timeout_s=int(with_default(get, "authentication.timeout.ms")) / 1000,
            clock=clock,
        )
    return result

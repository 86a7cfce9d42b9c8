"""TLS for listeners whose protocol is SSL or SASL_SSL: PEM keys and trust, client certificates.

Kafka's ``ssl.*`` keys with PEM stores (``ssl.keystore.type=PEM``): a keystore file holding the
private key and its certificate chain, or the PEM text itself in
``ssl.keystore.certificate.chain``/``ssl.keystore.key``; trust the same way. Only TLS 1.2
and 1.3 are spoken.  With ``ssl.client.auth=required|requested`` a client certificate's
subject becomes the principal (RFC 2253 form, as Java's ``X500Principal.getName()``), mapped
by ``ssl.principal.mapping.rules``.
"""

from __future__ import annotations

import os
import re
import ssl
import tempfile
from collections.abc import Callable
from typing import Any

from broker.config.config import ConfigError, with_default

_CLIENT_AUTH = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL, "required": ssl.CERT_REQUIRED}
_VERSIONS = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}
# RFC 2253 keywords for the attribute names Python's ssl module reports.
_KEYWORDS = {
    "commonName": "CN",
    "countryName": "C",
    "localityName": "L",
    "stateOrProvinceName": "ST",
    "organizationName": "O",
    "organizationalUnitName": "OU",
    "streetAddress": "STREET",
    "domainComponent": "DC",
    "userId": "UID",
}

Lookup = Callable[[str], "str | None"]


def _check_pem(get: Lookup, kind: str) -> None:
    store_type = (get(f"ssl.{kind}.type") or "JKS").upper()
    if store_type != "PEM":
        raise ConfigError(
            f"ssl.{kind}.type={store_type}: Odradek reads PEM {kind}s only; set ssl.{kind}.type=PEM "
            f"(convert a JKS or PKCS12 store with keytool -importkeystore and openssl pkcs12)"
        )


def _load_chain_text(context: ssl.SSLContext, chain: str, key: str, password: str | None) -> None:
    """``ssl`` loads keys only from files: write them to a private temporary file and remove it."""
    with tempfile.TemporaryDirectory(prefix="odradek-tls-") as directory:
        path = os.path.join(directory, "keystore.pem")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(key.strip() + "\n" + chain.strip() + "\n")
        context.load_cert_chain(path, password=password)


def server_context(get: Lookup, listener: str) -> ssl.SSLContext:
    """The TLS context of one listener, from its (listener-prefixed or global) ``ssl.*`` keys."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    versions = [v.strip() for v in with_default(get, "ssl.enabled.protocols").split(",") if v.strip()]
    unknown = [v for v in versions if v not in _VERSIONS]
    if unknown or not versions:
        raise ConfigError(f"ssl.enabled.protocols={','.join(versions)}: only TLSv1.2 and TLSv1.3 are spoken")
    context.minimum_version = min(_VERSIONS[v] for v in versions)
    context.maximum_version = max(_VERSIONS[v] for v in versions)
    password = get("ssl.key.password")
    location, chain, key = (
        get("ssl.keystore.location"),
        get("ssl.keystore.certificate.chain"),
        get("ssl.keystore.key"),
    )
    if not location and not (chain and key):
        raise ConfigError(
            f"listener {listener} speaks TLS but has no certificate: set ssl.keystore.type=PEM and "
            "ssl.keystore.location (a PEM file with the private key and certificate chain)"
        )
    _check_pem(get, "keystore")
    try:
        if location:
            context.load_cert_chain(location, password=password)
        else:
            _load_chain_text(context, chain or "", key or "", password)
        trust_location, trust_text = get("ssl.truststore.location"), get("ssl.truststore.certificates")
        if trust_location or trust_text:
            _check_pem(get, "truststore")
            context.load_verify_locations(cafile=trust_location or None, cadata=trust_text or None)
    except (OSError, ssl.SSLError) as exc:
        raise ConfigError(f"listener {listener}: cannot load its TLS key or certificates: {exc}") from None
    client_auth = with_default(get, "ssl.client.auth").lower()
    if client_auth not in _CLIENT_AUTH:
        raise ConfigError(f"ssl.client.auth={client_auth}: use required, requested or none")
    if client_auth != "none" and not (trust_location or trust_text):
        raise ConfigError(
            f"ssl.client.auth={client_auth} needs trusted client CAs: set ssl.truststore.type=PEM and "
            "ssl.truststore.location"
        )
    context.verify_mode = _CLIENT_AUTH[client_auth]
    return context


def _escape(value: str) -> str:
    escaped = re.sub(r'([,+"\\<>;=])', r"\\\1", value)
    if escaped.startswith(("#", " ")):
        escaped = "\\" + escaped
    return escaped[:-1] + "\\ " if escaped.endswith(" ") else escaped


def subject_name(certificate: dict[str, Any]) -> str:
    """The certificate subject in RFC 2253 form (most specific attribute first), as Java gives it."""
    rdns = []
    for rdn in reversed(certificate.get("subject", ())):
        rdns.append("+".join(f"{_KEYWORDS.get(name, name)}={_escape(value)}" for name, value in rdn))
    return ",".join(rdns)


class PrincipalMapper:
    """``ssl.principal.mapping.rules``: ``DEFAULT`` or ``RULE:pattern/replacement/[LU]``, first match wins."""

    _RULE = re.compile(r"\s*(?:(DEFAULT)|RULE:((?:\\.|[^\\/])*)/((?:\\.|[^\\/])*)/([LU])?)\s*(?:,|$)")

    def __init__(self, text: str) -> None:
        self._rules: list[tuple[re.Pattern[str], str, str] | None] = []
        position = 0
        text = text.strip() or "DEFAULT"
        while position < len(text):
            match = self._RULE.match(text, position)
            if match is None or match.end() == position:
                raise ConfigError(f"ssl.principal.mapping.rules: cannot parse {text[position:]!r}")
            if match.group(1):
                self._rules.append(None)
            else:
                try:
                    pattern = re.compile(match.group(2))
                except re.error as exc:
                    raise ConfigError(f"ssl.principal.mapping.rules: {exc}") from None
                replacement = re.sub(r"\$(\d)", r"\\\1", match.group(3))
                self._rules.append((pattern, replacement, match.group(4) or ""))
            position = match.end()

    def principal(self, distinguished_name: str) -> str | None:
        """The mapped name; None when no rule applies (Kafka then fails the connection)."""
        for rule in self._rules:
            if rule is None:
                return distinguished_name
            pattern, replacement, case = rule
            if pattern.fullmatch(distinguished_name):
                name = pattern.sub(replacement, distinguished_name, count=1)
                return name.lower() if case == "L" else name.upper() if case == "U" else name
        return None

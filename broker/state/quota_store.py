"""Client quotas as set by AlterClientQuotas, kept durably in a document.

Kafka's controller keeps quota records in its metadata log (``ClientQuotaControlManager``);
Odradek keeps the same map, entity -> {key: value}, in the ``client-quotas.json`` document
(``broker.state.documents``): a file of a single node's data directory, or one etcd key every
broker of a cluster watches, so all enforce the same quotas.  Every change rewrites it whole.

An entity is a set of (type, name) components; a ``None`` name is the type's default entity
(``--entity-default``).  Validation follows the controller, with its messages: the entity
types user, client-id and ip; user and client-id may be combined, ip stands alone; the keys
each combination accepts and their types (LONG byte rates, DOUBLE percentages and rates, INT
connection rates).  Describe matching follows Kafka's ``ClientQuotasImage.describe``.

Kafka bounds neither the entities nor one request's alterations; every change here rewrites the
whole document, so both are bounded (:data:`MAX_ENTITIES`, :data:`MAX_STORED_BYTES`,
:data:`MAX_ALTERATIONS`).
"""

from __future__ import annotations

import ipaddress
import json
import logging
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypedDict

from broker.state.documents import Document, DocumentUnavailable
from log.config import LONG_MAX
from wire.error_codes import ErrorCode
from wire.primitives import INT32_MAX

log = logging.getLogger(__name__)

USER, CLIENT_ID, IP = "user", "client-id", "ip"
PRODUCER_BYTE_RATE = "producer_byte_rate"
CONSUMER_BYTE_RATE = "consumer_byte_rate"
REQUEST_PERCENTAGE = "request_percentage"
CONTROLLER_MUTATION_RATE = "controller_mutation_rate"
CONNECTION_CREATION_RATE = "connection_creation_rate"

# Kafka's QuotaConfig: the keys a user and/or client-id entity takes, and an ip entity takes.
_LONG, _DOUBLE, _INT = "LONG", "DOUBLE", "INT"
USER_CLIENT_KEYS = {
    PRODUCER_BYTE_RATE: _LONG,
    CONSUMER_BYTE_RATE: _LONG,
    REQUEST_PERCENTAGE: _DOUBLE,
    CONTROLLER_MUTATION_RATE: _DOUBLE,
}
IP_KEYS = {CONNECTION_CREATION_RATE: _INT}

MAX_ENTITIES = 100_000
"""Odradek-specific: entities holding quotas (the document is rewritten on each change)."""
MAX_STORED_BYTES = 16 << 20
"""Odradek-specific: the quota document's size (names are up to 32 KiB each)."""
MAX_ALTERATIONS = 10_000
"""Kafka's controller bound for one operation (``MAX_RECORDS_PER_USER_OP``), per request."""

MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED = 0, 1, 2

Entity = tuple[tuple[str, str | None], ...]
"""An entity's components sorted by type, e.g. ``(("client-id", None), ("user", "alice"))``."""


class FilterComponent(TypedDict):
    """One DescribeClientQuotas filter component as the decoder gives it (``EntityType`` is a
    non-nullable string, ``MatchType`` an int8), so its fields need no checks of their type."""

    entity_type: str
    match_type: int
    match: str | None


class QuotaError(Exception):
    """A request Kafka refuses; ``code`` and the message are Kafka's."""

    def __init__(self, message: str, code: ErrorCode = ErrorCode.INVALID_REQUEST) -> None:
        super().__init__(message)
        self.code = code


def entity_of(components: list[dict[str, str | None]]) -> Entity:
    """A request's entity components, checked as the controller's ``validateEntity``.

    Kafka reads the components into a map first, so a type named twice keeps its last name.
    """
    seen = {component["entity_type"]: component["entity_name"] for component in components}
    if not seen:
        raise QuotaError("Invalid empty client quota entity")
    for entity_type, name in seen.items():
        if entity_type not in (USER, CLIENT_ID, IP):
            raise QuotaError(f"Unhandled client quota entity type: {entity_type}")
        if name is not None and not name:
            raise QuotaError(f"Empty {entity_type} not supported")
    return tuple(sorted(seen.items()))  # type: ignore[arg-type]


def describe_entity(entity: Entity) -> str:
    """The entity as Kafka's ``ClientQuotaEntity.toString`` prints it in messages."""
    inner = ", ".join(f"{entity_type}={name}" for entity_type, name in entity)
    return f"ClientQuotaEntity(entries={{{inner}}})"


def _keys_for(entity: Entity) -> dict[str, str]:
    names = dict(entity)
    if IP in names:
        if len(names) > 1:
            # sic: Kafka's message lacks the space after "should"
            raise QuotaError(
                "Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId"
            )
        address = names[IP]
        if address is not None and not _is_ip(address):
            raise QuotaError(f"{address} is not a valid IP or resolvable host.")
        return IP_KEYS
    return USER_CLIENT_KEYS


def _is_ip(address: str) -> bool:
    """Odradek resolves no host names for a quota entity (Kafka tries DNS): literal addresses only."""
    try:
        ipaddress.ip_address(address)
    except ValueError:
        return False
    return True


_INTEGRAL_MAX = {_INT: (INT32_MAX, "an INT"), _LONG: (LONG_MAX, "a LONG")}


def _check_value(keys: dict[str, str], key: str, value: float) -> None:
    """The controller's ``validateQuotaKeyValue``: a known key, above 0, whole where integral."""
    kind = keys.get(key)
    if kind is None:
        raise QuotaError(f"Invalid configuration key {key}")
    if not value > 0.0:
        raise QuotaError(f"Quota {key} must be greater than 0")
    if kind == _DOUBLE:
        return
    maximum, type_name = _INTEGRAL_MAX[kind]
    if value > maximum:
        raise QuotaError(f"Proposed value for {key} is too large for {type_name}.")
    if abs(math.fmod(value, 1.0)) > 1e-6:
        raise QuotaError(f"{key} cannot be a fractional value.")


@dataclass(frozen=True, slots=True)
class Alteration:
    """One entity's requested changes: key -> new value, or None to remove it."""

    entity: Entity
    changes: dict[str, float | None]


def alteration_of(entry: Mapping[str, Any]) -> Alteration:
    """An AlterClientQuotas entry, checked as the controller does (entity, keys, values)."""
    entity = entity_of(entry["entity"])
    changes: dict[str, float | None] = {}
    for op in entry["ops"]:
        if op["key"] in changes:
            raise QuotaError(
                f"Duplicate quota key {op['key']} not updating quota for this entity {describe_entity(entity)}"
            )
        changes[op["key"]] = None if op["remove"] else op["value"]
    keys = _keys_for(entity)
    for key, value in changes.items():
        if value is not None:
            _check_value(keys, key, value)
    return Alteration(entity, changes)


Quotas = dict[Entity, dict[str, float]]


def encode_quotas(quotas: Quotas) -> bytes:
    document = {
        "entities": [
            {"entity": [list(component) for component in entity], "values": values}
            for entity, values in quotas.items()
        ]
    }
    return json.dumps(document, indent=1).encode()


def decode_quotas(data: bytes | None) -> Quotas:
    """The stored quotas (None: none yet); malformed content raises ValueError."""
    if data is None:
        return {}
    try:
        return {
            tuple(sorted((t, n) for t, n in saved["entity"])): {
                k: float(v) for k, v in saved["values"].items()
            }
            for saved in json.loads(data)["entities"]
        }
    except (TypeError, KeyError, AttributeError) as exc:
        raise ValueError(f"malformed client quotas ({exc!r})") from exc


class QuotaStore:
    """Quota values by entity; ``version`` is bumped on every change so lookups cache safely,
    and ``on_change`` callbacks run after it (a change may come from another broker)."""

    FILE_NAME = "client-quotas.json"

    def __init__(self, document: Document) -> None:
        self._document = document
        self._quotas = decode_quotas(document.current())
        self.version = 0
        self.on_change: list[Callable[[], None]] = []
        document.listen(self._adopt)

    def __len__(self) -> int:
        return len(self._quotas)

    def keys(self) -> frozenset[str]:
        """Every quota key some entity holds."""
        return frozenset(key for values in self._quotas.values() for key in values)

    def value(self, entity: Entity, key: str) -> float | None:
        values = self._quotas.get(entity)
        return None if values is None else values.get(key)

    async def apply(self, alterations: list[Alteration]) -> None:
        """Make the changes and store them; they are enforced once stored.  Past the bounds
        (:data:`MAX_ENTITIES`, :data:`MAX_STORED_BYTES`) nothing changes.  Changes never
        interleave, and each applies to the quotas stored before it (in a cluster, maybe
        another broker's newer ones)."""

        def change(data: bytes | None) -> bytes:
            try:
                updated = decode_quotas(data)
            except ValueError as exc:  # overwriting what cannot be read would lose every quota
                raise DocumentUnavailable(
                    f"the stored client quotas ({self._document.name}) cannot be read ({exc}); "
                    "restore them, then retry"
                ) from exc
            stored_entities = len(updated)
            for alteration in alterations:
                values = updated.setdefault(alteration.entity, {})
                for key, value in alteration.changes.items():
                    if value is None:
                        values.pop(key, None)
                    else:
                        values[key] = value
                if not values:
                    del updated[alteration.entity]
            if len(updated) > max(MAX_ENTITIES, stored_entities):
                raise QuotaError(
                    f"This broker keeps quotas for at most {MAX_ENTITIES} entities (Odradek-specific)",
                    ErrorCode.POLICY_VIOLATION,
                )
            encoded = encode_quotas(updated)
            if len(encoded) > max(MAX_STORED_BYTES, len(data or b"")):
                raise QuotaError(
                    f"Client quotas would take more than {MAX_STORED_BYTES} bytes (Odradek-specific)",
                    ErrorCode.POLICY_VIOLATION,
                )
            return encoded

        await self._document.replace(change)

    def _adopt(self, data: bytes | None) -> None:
        """Enforce the document's new quotas; unreadable ones (another broker's) change nothing."""
        try:
            quotas = decode_quotas(data)
        except ValueError as exc:
            log.error(
                "the new %s cannot be read (%s); the quotas read before stay in force",
                self._document.name,
                exc,
            )
            return
        if quotas == self._quotas:
            return
        self._quotas = quotas
        self.version += 1
        for changed in self.on_change:
            changed()

    def describe(
        self, components: list[FilterComponent], strict: bool
    ) -> list[tuple[Entity, dict[str, float]]]:
        """The entities a DescribeClientQuotas filter matches, as ``ClientQuotasImage.describe``."""
        exact: dict[str, str | None] = {}
        specified: set[str] = set()
        for component in components:
            entity_type, match_type, match = (
                component["entity_type"],
                component["match_type"],
                component["match"],
            )
            if not entity_type:
                raise QuotaError("Invalid empty entity type.")
            if entity_type in exact or entity_type in specified:
                raise QuotaError(f"Entity type {entity_type} cannot appear more than once in the filter.")
            if entity_type not in (USER, CLIENT_ID, IP):
                raise QuotaError(f"Unsupported entity type {entity_type}", ErrorCode.UNSUPPORTED_VERSION)
            if match_type == MATCH_EXACT:
                if match is None:
                    raise QuotaError("Request specified MATCH_TYPE_EXACT, but set match string to null.")
                exact[entity_type] = match
            elif match_type == MATCH_DEFAULT:
                if match is not None:
                    raise QuotaError(
                        "Request specified MATCH_TYPE_DEFAULT, but also specified a match string."
                    )
                exact[entity_type] = None
            elif match_type == MATCH_SPECIFIED:
                if match is not None:
                    raise QuotaError(
                        "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string."
                    )
                specified.add(entity_type)
            else:
                raise QuotaError(f"Unknown match type {match_type}")
        filtered = exact.keys() | specified
        if IP in filtered and filtered & {USER, CLIENT_ID}:
            raise QuotaError(
                "Invalid entity filter component combination. IP filter component should not be used "
                "with user or clientId filter component."
            )
        matched = []
        for entity, values in self._quotas.items():
            names = dict(entity)
            wanted = all(t in names and names[t] == n for t, n in exact.items()) and specified <= names.keys()
            if wanted and (not strict or len(names) == len(filtered)):
                matched.append((entity, dict(values)))
        return matched

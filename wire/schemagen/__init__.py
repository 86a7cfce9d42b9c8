"""The generator of ``wire/schemas``: declarations from Kafka's own message specs.

Kafka publishes every request and response schema as JSON inside the ``kafka-clients`` jar.
``python -m wire.schemagen`` fetches the pinned jar with Maven (:mod:`.specs`), translates
the spec of every API a Kafka broker serves into a declaration (:mod:`.translate`) and writes
one module per API (:mod:`.render`).  The JSON is never committed; the generated modules name
the kafka-clients version they came from, and ``tests/wire/test_schema_drift.py`` checks
that the committed declarations are still exactly what that version's specs say.

Which versions are declared is Kafka's choice too (a spec's ``validVersions``, less an
unstable latest version), with the exceptions in :data:`DECLARED_FLOORS`.  Whether the broker
*serves* a declared version is the handlers' business (``broker/requests/api_support.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

from wire.api_keys import ApiKey
from wire.schema import Api, RecordSchema, Versions
from wire.schemagen.specs import SpecSet
from wire.schemagen.translate import stable_versions, translate_api, translate_record

DECLARED_FLOORS: dict[ApiKey, int] = {
    # Kafka 4 rejects Produce 0-2 but still advertises version 0 (KAFKA-18659: librdkafka
    # before 2.11.1 turns off the v2 record format and compression unless it sees Produce 0),
    # and so do we, which needs their schemas to answer them UNSUPPORTED_VERSION.  Their
    # fields are all declared "0+" in the spec, so the declaration is exact.
    ApiKey.PRODUCE: 0,
}


@dataclass(frozen=True)
class InternalTopic:
    """The record declarations of one internal topic: ``wire/internal_records/<module>.py``."""

    module: str
    artifact: str  # the Kafka jar whose specs declare them
    specs: tuple[str, ...]


INTERNAL_TOPICS = (
    InternalTopic(
        "consumer_offsets",
        "kafka-group-coordinator",
        # LegacyOffsetCommitKey is record type 0, which Kafka before 2.1 wrote and still reads.
        (
            "LegacyOffsetCommitKey",
            "OffsetCommitKey",
            "OffsetCommitValue",
            "GroupMetadataKey",
            "GroupMetadataValue",
        ),
    ),
    InternalTopic(
        # Streams groups' records in __consumer_offsets (KIP-1071): record types 17 and 19-23.
        "streams_groups",
        "kafka-group-coordinator",
        tuple(
            f"StreamsGroup{name}{part}"
            for name in (
                "Metadata",
                "Topology",
                "MemberMetadata",
                "TargetAssignmentMetadata",
                "TargetAssignmentMember",
                "CurrentMemberAssignment",
            )
            for part in ("Key", "Value")
        ),
    ),
    InternalTopic(
        "transaction_state", "kafka-transaction-coordinator", ("TransactionLogKey", "TransactionLogValue")
    ),
    InternalTopic(
        "share_group_state",
        "kafka-share-coordinator",
        ("ShareSnapshotKey", "ShareSnapshotValue", "ShareUpdateKey", "ShareUpdateValue"),
    ),
)


@dataclass(frozen=True)
class Declaration:
    """One API's generated declaration and the spec files it came from."""

    api: Api
    spec_names: tuple[str, str]


def declarations(specs: SpecSet) -> dict[ApiKey, Declaration]:
    """The declaration of every API a Kafka broker serves, from ``specs``."""
    found = {}
    for key, (request, response) in specs.apis().items():
        api_key = ApiKey(key)
        versions = stable_versions(request)
        floor = DECLARED_FLOORS.get(api_key)
        if floor is not None:
            versions = Versions(min(floor, versions.low), versions.high)
        found[api_key] = Declaration(
            translate_api(request, response, versions), (request["name"], response["name"])
        )
    return found


def record_declarations(topic: InternalTopic, specs: SpecSet) -> list[RecordSchema]:
    """The declarations of ``topic``'s keys and values, from ``specs`` (its artifact's jar)."""
    return [translate_record(specs.specs[name]) for name in topic.specs]

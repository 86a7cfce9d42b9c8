"""A row of the ApiVersions answer, apart from the handlers that decide it (so that what the
node advertises can be typed without the handlers' types)."""

from __future__ import annotations

from dataclasses import dataclass

from wire.api_keys import ApiKey


@dataclass(frozen=True, slots=True)
class ApiSupport:
    """One row of the ApiVersions answer: the versions ``min_version..max_version`` served."""

    key: ApiKey
    min_version: int
    max_version: int

    @property
    def name(self) -> str:
        return self.key.api_name

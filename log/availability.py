"""Whether a partition's log serves: open and online, closed, or offline after a disk error.

Every component of a ``PartitionLog`` refuses work on a log that does not serve and takes the
log offline when the disk fails under it, so they share this one record of it rather than
each asking the log object.  It speaks through the logger it is given (the partition log's):
operators follow a partition going offline and coming back under one logger name.
"""

from __future__ import annotations

import logging

from log.disk_error_report import describe_os_error
from log.errors import KafkaStorageError


class Availability:
    """A partition log's state of service: ``closed`` for good, or ``offline`` until the
    offline re-probe brings it back (``PartitionLog.adopt_recovered``)."""

    def __init__(self, directory: str, logger: logging.Logger) -> None:
        self._directory = directory
        self._logger = logger
        self.closed = False
        self.offline: KafkaStorageError | None = None

    @property
    def is_online(self) -> bool:
        """Neither closed nor taken offline by a disk error."""
        return self.offline is None and not self.closed

    def check_online(self) -> None:
        """Raise ``KafkaStorageError`` unless the log serves."""
        if self.offline is not None:
            raise KafkaStorageError(f"{self._directory} is offline after a disk error: {self.offline}")
        if self.closed:
            raise KafkaStorageError(f"{self._directory} is closed")

    def went_offline(self, exc: Exception, path: str | None = None) -> KafkaStorageError:
        """Take the partition offline after a disk error (also from the cleaner's thread): every
        later call answers KAFKA_STORAGE_ERROR until ``reopen_after_disk_error`` and
        ``adopt_recovered`` bring it back (Kafka needs a restart; a full disk is often freed).

        Logged at ERROR with the errno and the file (``path`` when the OSError names none) once
        per change of state; further errors while offline only at DEBUG.
        """
        description = describe_os_error(exc, path or self._directory)
        if self.offline is None:
            self._logger.error(
                "%s: disk error, taking the partition offline: %s", self._directory, description
            )
        else:
            self._logger.debug("%s: another disk error while offline: %s", self._directory, description)
        self.offline = KafkaStorageError(f"I/O error in {self._directory}: {description}")
        return self.offline

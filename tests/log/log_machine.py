"""The on-disk partition log that the stateful model tests drive, and its life cycle."""

from __future__ import annotations

import os
import shutil
import tempfile

from hypothesis.stateful import RuleBasedStateMachine

from log import LogConfig, PartitionLog


class OnDiskLogMachine(RuleBasedStateMachine):
    """A fresh log in its own temporary directory per example; subclasses add rules and a model.

    ``config`` is the subclass's :class:`LogConfig`; ``reopen`` opens the directory again, as a
    broker does at start-up (after a clean close or a simulated crash).
    """

    config: LogConfig
    prefix = "odradek-model-"

    def __init__(self) -> None:
        super().__init__()
        self.root = tempfile.mkdtemp(prefix=self.prefix)
        self.directory = os.path.join(self.root, "t-0")
        self.log = PartitionLog.open(self.directory, self.config)

    def reopen(self) -> None:
        self.log = PartitionLog.open(self.directory, self.config)

    def teardown(self) -> None:
        self.log.close()
        shutil.rmtree(self.root, ignore_errors=True)

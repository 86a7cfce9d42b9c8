"""The node's partitions on disk: opening logs, appends and their wake-ups, durability (group commit), fetch sessions, retention and compaction."""

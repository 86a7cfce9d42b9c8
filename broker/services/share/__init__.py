"""Share groups (KIP-932) on the broker: share sessions and the share-partitions it leads."""

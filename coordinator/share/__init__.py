"""Share groups (KIP-932): the delivery state of share-partitions, sans-IO.

``share_partition.SharePartition`` is the building block; the share coordinator on
``__share_group_state``, share sessions and the ShareFetch/ShareAcknowledge handlers are not
built yet (docs/NOTES.md, "Share groups").
"""

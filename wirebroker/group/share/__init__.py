"""KIP-932 share groups on the group coordinator: a pure core beside the classic and the
KIP-848 consumer groups of `wirebroker.group`.

    model.py       `ShareGroup` / `ShareMember` and the group's share-state bookkeeping
                   (which partitions' share state is initializing, initialized, deleting)
    assignor.py    Kafka's share `SimpleAssignor` (a partition may go to several members)
    manager.py     ShareGroupHeartbeat (join, heartbeat, leave), session timeouts, the
                   target assignment, ShareGroupDescribe, state initialization bookkeeping
    records.py     the share group `__consumer_offsets` records written and replayed
    persister.py   the `Persister` shape the coordinator calls (KIP-932's share-state API)
User view and the differences from Kafka: docs/share-groups.md.
"""

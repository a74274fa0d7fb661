"""KIP-848 consumer groups (the `consumer` group protocol): a pure core beside the classic
groups of `wirebroker.group`.

    model.py           `ConsumerGroup` / `ConsumerMember` (epochs, assignments, states)
    reconciliation.py  a member's next state toward its target (Kafka's CurrentAssignmentBuilder)
    manager.py         ConsumerGroupHeartbeat (join, heartbeat, leave, static leave), session and
                       rebalance timeouts, target assignment, ConsumerGroupDescribe
    validation.py      the request checks Kafka makes before the group is looked at
    records.py         the KIP-848 `__consumer_offsets` records written and replayed
"""

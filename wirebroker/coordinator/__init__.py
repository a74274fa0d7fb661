"""The coordinators' shared runtime (Kafka's coordinator-common).

`runtime.CoordinatorRuntime` runs one coordinator's partitions of its internal topic: the
topic's creation, loads on leadership and unloads on resignation (`ownership`, pure), appends
through the log with acks=-1 and the replication wait, timers driven by the coordinator's
deadlines. `errors` (pure) maps a failed append to the error a coordinator answers;
`log_reader` (pure) reads an internal topic's partition for a load; `timers` (pure) are a
coordinator's periodic rounds. The group (`wirebroker.group.runtime`), transaction
(`wirebroker.txn.runtime`) and share (`wirebroker.share_coordinator.runtime`) coordinators
each plug their core in as a `CoordinatorShard`; the last two through `service`'s
`CoordinatorService`. This package imports none of them.
"""

"""Per-partition wake-ups for long-poll Fetch (trio runtime; the cores stay pure).

A fetch that has not gathered `min_bytes` subscribes to the partitions it reads and waits on
one `trio.Event` until data arrives on any of them or its deadline passes. `ReplicaManager`
calls its data listeners after every append (and when a topic is deleted); `FetchWaiters` is
such a listener and sets the events subscribed to that partition (the registry itself is
`partition_events.PartitionEvents`, shared with the acks=-1 purgatory). The broker builds one and
attaches it (`replicas.add_data_listener(waiters.notify)`, `replicas.add_hw_listener(
waiters.notify_hw)`); handlers find it in `Services`.

Two kinds of wake-up. `notify` (new data, a role change, a deletion) wakes every fetch of the
partition. `notify_hw` (only the high watermark advanced: a follower's fetch acknowledged
records) wakes only the subscriptions made with `hw=True`: consumers, whose reads end at the
high watermark. A follower reads up to the log end, so an HW advance gives it nothing to read;
as in Kafka, it learns the new HW from its next fetch response (waking it would cost a re-read
and a re-park on the leader, once per replicated produce, on the acks=all path). The broker
registers `notify` as a data listener and `notify_hw` as an hw listener of the
`ReplicaManager`.

There is no lost wake-up: a handler reads the logs and subscribes without awaiting in between,
and trio runs one task at a time, so an append either happened before the read (the read sees
it) or happens after the subscription (the event is set).

Usage::

    with ctx.services.fetch_waiters.subscribe(keys) as event:
        with trio.move_on_at(deadline):
            await event.wait()
"""

from __future__ import annotations

from wirebroker.replication.partition_events import PartitionEvents

__all__ = ["FetchWaiters"]


class FetchWaiters(PartitionEvents):
    """Long-poll Fetch wake-ups (see the module doc): `notify` is a data listener of the
    `ReplicaManager`, `notify_hw` an hw listener; followers subscribe with hw=False."""

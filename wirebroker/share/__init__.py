"""KIP-932 share partitions on the partition leader.

`partition.py` (pure): one share group's share partition (Kafka's SharePartition: the
in-flight window, acquisition, acknowledgement, locks, delivery counts); `sessions.py` (pure):
the share session cache (Kafka's ShareSessionCache); `persister.py`: the state persister
interface the share coordinator implements, and an in-memory one; `manager.py` (trio):
the share partitions of this broker, their persister I/O and lock timeouts, which the
ShareFetch / ShareAcknowledge handlers call.
"""

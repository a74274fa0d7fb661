"""Partitions as this broker sees them: leader or follower, log, leader epoch, high watermark,
replicas and ISR, and the data path between brokers.

Pure modules (`rules`, `partition`, `replica_manager`, `producer_ids`) never import trio. The
trio runtimes: `fetch_waiters` (long-poll Fetch wake-ups) and `delayed_produce` (the acks=-1
and DeleteRecords purgatory), both over `partition_events` (one per-partition wake-up
registry), `fetcher` (followers fetching from their leaders) over `broker_client` (a minimal
broker-to-broker Kafka client).
"""

from __future__ import annotations

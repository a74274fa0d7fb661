"""Partitions as this broker sees them: leader or follower, log, leader epoch, high watermark,
replicas and ISR, and the data path between brokers.

Pure modules (`rules`, `partition`, `replica_manager`, `producer_ids`) never import trio. The
trio runtimes: `fetch_waiters` (long-poll Fetch wake-ups), `delayed_produce` (the acks=-1
purgatory), `fetcher` (followers fetching from their leaders) over `broker_client` (a minimal
broker-to-broker Kafka client).
"""

from __future__ import annotations

"""Partitions as their leader sees them: log, leader epoch, high watermark, replicas and ISR.

Pure modules (`partition`, `replica_manager`, `producer_ids`) never import trio; only
`fetch_waiters` (the long-poll Fetch wake-ups) does.
"""

from __future__ import annotations

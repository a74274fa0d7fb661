"""Coordination stores for the cluster layer: ZooKeeper (kazoo) and an in-memory twin."""

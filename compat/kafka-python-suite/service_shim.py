"""Stand-in for kafka-python's `test/service.py`, which its 3.0.12 sdist does not ship.

`test/integration/fixtures.py` imports `ExternalService` and `SpawnedService` from it. With
KAFKA_URI set, only `ExternalService` is used (a broker someone else runs: nothing to start,
stop or dump). Spawning brokers (ZooKeeper, SASL, SSL fixtures) is what the sdist cannot do
without the Kafka distribution, so `SpawnedService` refuses with a clear message; the tests
that need it are listed in `excluded.txt`.
"""


class ExternalService:
    def __init__(self, host, port):
        self.host = host
        self.port = port

    def open(self):
        pass

    def close(self):
        pass

    def start(self):
        pass

    def stop(self):
        pass

    def dump_logs(self):
        pass

    def wait_for(self, pattern, timeout=30):
        return True


class SpawnedService:
    def __init__(self, *args, **kwargs):
        raise RuntimeError(
            "this test spawns its own Kafka/ZooKeeper processes (needs the Kafka distribution); "
            "the wirebroker runner only provides an external broker (KAFKA_URI)"
        )

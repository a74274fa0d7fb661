"""The pytest plugin as a user's project sees it: pytester writes a test file and runs pytest
on it in a subprocess (the plugin comes in through its `pytest11` entry point), with
kafka-python, confluent-kafka and aiokafka, in plain, pytest-asyncio and pytest-trio styles."""

from __future__ import annotations

import pytest

INI = """
[pytest]
asyncio_default_fixture_loop_scope = function
filterwarnings =
    error
    ignore:(read_text|open_text) is deprecated:DeprecationWarning
"""


def run(pytester: pytest.Pytester, source: str, *args: str) -> pytest.RunResult:
    pytester.makeini(INI)
    pytester.makepyfile(source)
    return pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider", *args, timeout=120)


KAFKA_PYTHON = """
import time
from kafka import KafkaConsumer, KafkaProducer

def test_produce_then_read(kafka_bootstrap, kafka_create_topic, kafka_read_to_end):
    topic = kafka_create_topic(partitions=2)
    producer = KafkaProducer(bootstrap_servers=kafka_bootstrap)
    producer.send(topic, b"hello", key=b"k", partition=1).get(timeout=10)
    producer.close()
    got = [(m.partition, m.key, m.value) for m in kafka_read_to_end(topic)]
    assert got == [(1, b"k", b"hello")]

def test_consume_what_the_helper_produced(kafka_broker, kafka_create_topic):
    topic = kafka_create_topic()
    kafka_broker.produce(topic, [b"a", b"b"])
    consumer = KafkaConsumer(topic, bootstrap_servers=kafka_broker.bootstrap,
                             auto_offset_reset="earliest", group_id="g")
    got, deadline = [], time.monotonic() + 20
    while len(got) < 2 and time.monotonic() < deadline:
        for records in consumer.poll(timeout_ms=500).values():
            got += [r.value for r in records]
    consumer.close()
    assert got == [b"a", b"b"]
"""


def test_kafka_python(pytester: pytest.Pytester) -> None:
    run(pytester, KAFKA_PYTHON).assert_outcomes(passed=2)


CONFLUENT = """
from confluent_kafka import Producer

def test_confluent(kafka_bootstrap, kafka_create_topic, kafka_read_to_end):
    topic = kafka_create_topic(configs={"cleanup.policy": "compact"})
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    for i in range(3):
        producer.produce(topic, value=b"v%d" % i, key=b"k")
    assert producer.flush(10) == 0
    assert [m.value for m in kafka_read_to_end(topic)] == [b"v0", b"v1", b"v2"]
"""


def test_confluent_kafka(pytester: pytest.Pytester) -> None:
    run(pytester, CONFLUENT).assert_outcomes(passed=1)


AIOKAFKA = """
import asyncio
import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

@pytest.mark.asyncio
async def test_aiokafka(kafka_bootstrap, kafka_create_topic, kafka_read_to_end):
    topic = kafka_create_topic()
    async with asyncio.timeout(30):
        producer = AIOKafkaProducer(bootstrap_servers=kafka_bootstrap)
        await producer.start()
        try:
            await producer.send_and_wait(topic, b"x")
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(topic, bootstrap_servers=kafka_bootstrap,
                                    auto_offset_reset="earliest")
        await consumer.start()
        try:
            message = await consumer.getone()
        finally:
            await consumer.stop()
    assert message.value == b"x"
    assert [m.value for m in kafka_read_to_end(topic)] == [b"x"]
"""


def test_aiokafka_under_pytest_asyncio(pytester: pytest.Pytester) -> None:
    pytest.importorskip("pytest_asyncio")
    run(pytester, AIOKAFKA).assert_outcomes(passed=1)


TRIO = """
import pytest
import trio
from kafka import KafkaProducer

@pytest.mark.trio
async def test_trio(kafka_bootstrap, kafka_create_topic, kafka_read_to_end):
    topic = kafka_create_topic()
    host, _, port = kafka_bootstrap.rpartition(":")
    stream = await trio.open_tcp_stream(host, int(port))  # the broker is outside our loop
    await stream.aclose()

    def send():
        producer = KafkaProducer(bootstrap_servers=kafka_bootstrap)
        producer.send(topic, b"from trio").get(timeout=10)
        producer.close()

    with trio.fail_after(30):
        await trio.to_thread.run_sync(send)
    assert [m.value for m in kafka_read_to_end(topic)] == [b"from trio"]
"""


def test_trio_style(pytester: pytest.Pytester) -> None:
    run(pytester, TRIO).assert_outcomes(passed=1)


SCOPES = """
import pytest
from kafka import KafkaProducer

SEEN = []

@pytest.mark.parametrize("i", range(3))
def test_broker(kafka_broker, kafka_broker_session, i):
    SEEN.append((kafka_broker.bootstrap, kafka_broker_session.bootstrap))

def test_scopes(request):
    function_brokers = {b for b, _ in SEEN}
    session_brokers = {s for _, s in SEEN}
    assert len(session_brokers) == 1
    expected = 1 if request.config.getoption("kafka_broker_scope") == "session" else 3
    assert len(function_brokers) == expected

@pytest.mark.kafka_broker(overrides={"num.partitions": 4}, thread=True)
def test_marker(kafka_broker):
    assert kafka_broker.pid is None  # thread=True: served in this process
    producer = KafkaProducer(bootstrap_servers=kafka_broker.bootstrap)
    assert len(producer.partitions_for("auto-created")) == 4
    producer.close()
"""


def test_function_scope_is_fresh_and_marker_overrides(pytester: pytest.Pytester) -> None:
    run(pytester, SCOPES).assert_outcomes(passed=5)


def test_scope_option(pytester: pytest.Pytester) -> None:
    result = run(pytester, SCOPES, "--kafka-broker-scope=session", "-k", "not marker")
    result.assert_outcomes(passed=4, deselected=1)


FAULTS = """
from kafka import KafkaProducer

def test_producer_rides_out_injected_errors(kafka_faults, kafka_bootstrap, kafka_create_topic,
                                            kafka_read_to_end):
    topic = kafka_create_topic()
    producer = KafkaProducer(bootstrap_servers=kafka_bootstrap, retry_backoff_ms=50)
    producer.partitions_for(topic)
    kafka_faults.error("Produce", "NOT_LEADER_OR_FOLLOWER", count=3, topic=topic)
    producer.send(topic, b"v").get(timeout=20)
    producer.close()
    assert kafka_faults.list() == []
    assert [m.value for m in kafka_read_to_end(topic)] == [b"v"]

def test_left_over_faults_are_cleared(kafka_faults):
    kafka_faults.delay(None, 10_000, count=None)
    kafka_faults.refuse_connections()
"""


def test_kafka_faults(pytester: pytest.Pytester) -> None:
    result = run(pytester, FAULTS)
    result.assert_outcomes(passed=2)


CLUSTER = """
from confluent_kafka import Producer

def test_cluster(kafka_cluster):
    assert len(kafka_cluster.bootstrap.split(",")) == 3
    topic = kafka_cluster.create_topic("replicated", partitions=3, replication_factor=3)
    producer = Producer({"bootstrap.servers": kafka_cluster.bootstrap, "acks": "all"})
    producer.produce(topic, value=b"safe", partition=2)
    assert producer.flush(20) == 0
    assert [(m.partition, m.value) for m in kafka_cluster.read_to_end(topic)] == [(2, b"safe")]
"""


def test_kafka_cluster(pytester: pytest.Pytester) -> None:
    from wirebroker.coordination.zk_server import zookeeper_available

    result = run(pytester, CLUSTER, "-rs")
    if zookeeper_available():
        result.assert_outcomes(passed=1)
    else:
        result.assert_outcomes(skipped=1)
        result.stdout.fnmatch_lines(["*ZooKeeper server and a JRE*apt-get install*"])


def test_not_installed_into_fixtures_of_other_suites(pytester: pytest.Pytester) -> None:
    """A project's own fixture of the same name wins over the plugin's (pytest's rule:
    conftest fixtures override plugin fixtures), and `-p no:wirebroker` turns it off."""
    pytester.makeconftest(
        "import pytest\n@pytest.fixture\ndef kafka_broker():\n    return 'mine'\n"
    )
    result = run(pytester, "def test_own(kafka_broker):\n    assert kafka_broker == 'mine'\n")
    result.assert_outcomes(passed=1)
    result = run(pytester, "def test_off(kafka_bootstrap):\n    pass\n", "-p", "no:wirebroker")
    result.assert_outcomes(errors=1)


SECURED = """
import pytest
from confluent_kafka import Consumer, Producer
from kafka import KafkaProducer

@pytest.mark.kafka_broker(security="SASL_SSL", sasl_mechanism="SCRAM-SHA-256", thread=True)
def test_sasl_ssl(kafka_client_config, kafka_python_config, kafka_create_topic, kafka_read_to_end):
    assert kafka_client_config["security.protocol"] == "SASL_SSL"
    topic = kafka_create_topic()
    producer = Producer(kafka_client_config)
    producer.produce(topic, b"secured")
    assert producer.flush(20) == 0
    producer = KafkaProducer(**kafka_python_config)
    producer.send(topic, b"too").get(timeout=20)
    producer.close()
    assert [m.value for m in kafka_read_to_end(topic)] == [b"secured", b"too"]

@pytest.mark.kafka_broker(security="SASL_PLAINTEXT", sasl_mechanism="OAUTHBEARER", thread=True)
def test_oauth(kafka_client_config, kafka_python_config, kafka_create_topic, kafka_read_to_end):
    assert kafka_client_config["sasl.oauthbearer.config"] == "principal=alice"
    topic = kafka_create_topic()
    producer = Producer(kafka_client_config)
    producer.produce(topic, b"token")
    assert producer.flush(20) == 0
    producer = KafkaProducer(**kafka_python_config)
    producer.send(topic, b"too").get(timeout=20)
    producer.close()
    assert [m.value for m in kafka_read_to_end(topic)] == [b"token", b"too"]

@pytest.mark.kafka_broker(security="SSL")
def test_ssl_refuses_plaintext(kafka_broker, kafka_python_config):
    from kafka import KafkaProducer
    from kafka.errors import KafkaError
    assert kafka_python_config["security_protocol"] == "SSL"
    with pytest.raises(KafkaError):
        KafkaProducer(bootstrap_servers=kafka_broker.bootstrap, max_block_ms=3000)
"""


def test_secured_broker_marker(pytester: pytest.Pytester) -> None:
    run(pytester, SECURED).assert_outcomes(passed=3)

"""Bad input against a real broker (subprocess): Kafka's error codes, and the connection survives.

Requests are raw protocol messages (kafka-python's message classes, an implementation
independent of wirebroker's), so each case sends exactly the bytes it means to.
"""

from __future__ import annotations

import socket
import struct
from typing import Any

import pytest
from _broker import BrokerFactory, BrokerProcess
from kafka.protocol.admin import CreateTopicsRequest
from kafka.protocol.metadata import ApiVersionsRequest, MetadataRequest
from kafka.protocol.producer import ProduceRequest
from kafka.record.default_records import DefaultRecordBatchBuilder

TIMEOUT_S = 10

NONE = 0
CORRUPT_MESSAGE = 2
UNKNOWN_TOPIC_OR_PARTITION = 3
MESSAGE_TOO_LARGE = 10
INVALID_TOPIC_EXCEPTION = 17
INVALID_REQUIRED_ACKS = 21

INVALID_NAMES = ["bad name", "slash/topic", "x" * 250, ".", "..", "", "ünïcode"]

Produce = ProduceRequest
TopicData = ProduceRequest.TopicProduceData
PartitionData = ProduceRequest.TopicProduceData.PartitionProduceData


class Connection:
    """One blocking connection to the broker; `call` sends a request and decodes the answer."""

    def __init__(self, bootstrap: str) -> None:
        host, _, port = bootstrap.rpartition(":")
        self.sock = socket.create_connection((host, int(port)), timeout=TIMEOUT_S)
        self.correlation_id = 0

    def close(self) -> None:
        self.sock.close()

    def send(self, request: Any) -> int:
        self.correlation_id += 1
        request.with_header(correlation_id=self.correlation_id, client_id="bad-input")
        self.sock.sendall(bytes(request.encode(header=True, framed=True)))
        return self.correlation_id

    def read_frame(self) -> bytes | None:
        head = self._read(4)
        if head is None:
            return None
        (size,) = struct.unpack(">i", head)
        return self._read(size)

    def _read(self, n: int) -> bytes | None:
        out = bytearray()
        while len(out) < n:
            try:
                chunk = self.sock.recv(n - len(out))
            except ConnectionResetError:
                return None
            if not chunk:
                return None
            out += chunk
        return bytes(out)

    def call(self, request: Any) -> Any:
        cid = self.send(request)
        data = self.read_frame()
        assert data is not None, "the broker closed the connection instead of answering"
        response = request.header.get_response_class().decode(data, header=True)
        assert response.header.correlation_id == cid
        return response

    def alive(self) -> bool:
        return self.call(ApiVersionsRequest[0]()).error_code == NONE


@pytest.fixture
def conn(broker: BrokerProcess) -> Any:
    c = Connection(broker.bootstrap)
    yield c
    c.close()


def batch(value_size: int = 10, count: int = 1) -> bytes:
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=0,
        is_transactional=False,
        producer_id=-1,
        producer_epoch=-1,
        base_sequence=-1,
        batch_size=1 << 24,
    )
    for i in range(count):
        builder.append(
            i, timestamp=1_700_000_000_000 + i, key=b"k", value=b"v" * value_size, headers=[]
        )
    return bytes(builder.build())


def produce(
    topic: str, records: bytes, *, acks: int = -1, partition: int = 0, version: int = 9
) -> Any:
    return Produce[version](
        acks=acks,
        timeout_ms=5000,
        topic_data=[
            TopicData(name=topic, partition_data=[PartitionData(index=partition, records=records)])
        ],
    )


def create_topic(conn: Connection, name: str, partitions: int = 1) -> int:
    request = CreateTopicsRequest[5](
        topics=[
            CreateTopicsRequest.CreatableTopic(
                name=name, num_partitions=partitions, replication_factor=1
            )
        ],
        timeout_ms=5000,
    )
    (result,) = conn.call(request).topics
    return int(result.error_code)


def partition_errors(response: Any) -> list[int]:
    return [p.error_code for t in response.responses for p in t.partition_responses]


# -- invalid topic names ---------------------------------------------------------------------


@pytest.mark.parametrize("version", [1, 9, 12])
def test_metadata_with_invalid_names(conn: Connection, version: int) -> None:
    request = MetadataRequest[version](
        topics=[MetadataRequest.MetadataRequestTopic(name=n) for n in INVALID_NAMES],
        **({"allow_auto_topic_creation": True} if version >= 4 else {}),
    )
    response = conn.call(request)
    assert {t.name: t.error_code for t in response.topics} == {
        n: INVALID_TOPIC_EXCEPTION for n in INVALID_NAMES
    }
    assert conn.alive()


def test_create_topics_with_invalid_names(conn: Connection) -> None:
    topics = [
        CreateTopicsRequest.CreatableTopic(name=n, num_partitions=1, replication_factor=1)
        for n in [*INVALID_NAMES, "a-valid.name_1"]
    ]
    response = conn.call(CreateTopicsRequest[5](topics=topics, timeout_ms=5000))
    codes = {t.name: t.error_code for t in response.topics}
    assert codes == {**{n: INVALID_TOPIC_EXCEPTION for n in INVALID_NAMES}, "a-valid.name_1": NONE}
    assert conn.alive()


@pytest.mark.parametrize("name", ["bad name", "x" * 250, ".."])
def test_produce_to_an_invalid_name(conn: Connection, name: str) -> None:
    # Kafka's KafkaApis.handleProduceRequest answers UNKNOWN_TOPIC_OR_PARTITION for any topic
    # missing from the metadata cache, and a topic with an invalid name can never be in it.
    response = conn.call(produce(name, batch()))
    assert partition_errors(response) == [UNKNOWN_TOPIC_OR_PARTITION]
    # ... and nothing was created under that name
    metadata = conn.call(
        MetadataRequest[12](
            topics=[MetadataRequest.MetadataRequestTopic(name=name)], allow_auto_topic_creation=True
        )
    )
    assert [t.error_code for t in metadata.topics] == [INVALID_TOPIC_EXCEPTION]
    assert conn.alive()


# -- record batches --------------------------------------------------------------------------


def test_corrupt_crc_is_refused_and_the_connection_stays_usable(conn: Connection) -> None:
    assert create_topic(conn, "crc") == NONE
    good = batch(count=3)
    corrupt = bytearray(good)
    corrupt[-1] ^= 0xFF  # inside the records: covered by the CRC-32C
    response = conn.call(produce("crc", bytes(corrupt)))
    assert partition_errors(response) == [CORRUPT_MESSAGE]
    response = conn.call(produce("crc", good))
    assert partition_errors(response) == [NONE]
    (partition,) = response.responses[0].partition_responses
    assert partition.base_offset == 0  # the corrupt batch appended nothing


def test_oversized_batch_is_message_too_large(broker_factory: BrokerFactory) -> None:
    broker = broker_factory(**{"message.max.bytes": "1024"})
    conn = Connection(broker.bootstrap)
    try:
        assert create_topic(conn, "big") == NONE
        response = conn.call(produce("big", batch(value_size=2000)))
        assert partition_errors(response) == [MESSAGE_TOO_LARGE]
        response = conn.call(produce("big", batch(value_size=100)))
        assert partition_errors(response) == [NONE]
    finally:
        conn.close()


@pytest.mark.parametrize("acks", [2, -2, 5])
def test_invalid_acks(conn: Connection, acks: int) -> None:
    assert create_topic(conn, "acks") in (NONE, 36)  # 36: exists (parametrized runs)
    response = conn.call(produce("acks", batch(), acks=acks))
    assert partition_errors(response) == [INVALID_REQUIRED_ACKS]
    assert conn.alive()


# -- malformed requests close the connection, nothing else ------------------------------------


def test_truncated_produce_closes_only_that_connection(broker: BrokerProcess) -> None:
    bystander = Connection(broker.bootstrap)
    victim = Connection(broker.bootstrap)
    try:
        request = produce("t", batch())
        request.with_header(correlation_id=1, client_id="bad-input")
        payload = bytes(request.encode(header=True, framed=False))
        truncated = payload[: len(payload) - 20]
        victim.sock.sendall(struct.pack(">i", len(truncated)) + truncated)
        assert victim.read_frame() is None
        assert bystander.alive()
        fresh = Connection(broker.bootstrap)
        assert fresh.alive()
        fresh.close()
    finally:
        bystander.close()
        victim.close()


def test_oversized_frame_closes_the_connection(broker_factory: BrokerFactory) -> None:
    broker = broker_factory(**{"socket.request.max.bytes": "2048"})
    conn = Connection(broker.bootstrap)
    try:
        conn.sock.sendall(struct.pack(">i", 4096) + b"\x00" * 4096)
        assert conn.read_frame() is None
        fresh = Connection(broker.bootstrap)
        assert fresh.alive()
        fresh.close()
    finally:
        conn.close()

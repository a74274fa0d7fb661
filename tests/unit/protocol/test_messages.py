"""Generated message schemas: round trips for every API/version, interop with kafka-python,
tagged fields, defaults, compiled == interpreted, and the generator's drift check."""

from __future__ import annotations

import io
import re
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from construct import Container
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protocol import api, codec
from protocol.exceptions import (
    EncodeError,
    MalformedRequest,
    UnknownApiKey,
    UnsupportedVersion,
)
from protocol.messages import API_MODULES, DATA_MODULES
from protocol.primitives import FieldInfo, MessageSpec, read_uvarint, uvarint_bytes

ROOT = Path(__file__).resolve().parents[3]

# --------------------------------------------------------------------------------------
# strategies derived from the field descriptions
# --------------------------------------------------------------------------------------

_INT_RANGES = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "uint16": (0, 2**16 - 1),
}
_TEXT = st.text(st.characters(codec="utf-8"), max_size=12)


def scalar_strategy(kind: str) -> st.SearchStrategy[Any]:
    if kind in _INT_RANGES:
        lo, hi = _INT_RANGES[kind]
        return st.one_of(st.sampled_from([lo, hi, 0, -1 if lo < 0 else 1]), st.integers(lo, hi))
    if kind == "float64":
        return st.floats(allow_nan=False)
    if kind == "bool":
        return st.booleans()
    if kind == "uuid":
        return st.uuids(allow_nil=True)
    if kind == "string":
        return _TEXT
    return st.binary(max_size=24)  # bytes, records


def field_strategy(info: FieldInfo) -> st.SearchStrategy[Any]:
    if info.kind == "array":
        assert info.element is not None
        elem = (
            struct_strategy(info.fields)
            if info.element == "struct"
            else scalar_strategy(info.element)
        )
        base: st.SearchStrategy[Any] = st.lists(elem, max_size=3)
    elif info.kind == "struct":
        base = struct_strategy(info.fields)
    else:
        base = scalar_strategy(info.kind)
    return st.one_of(st.none(), base) if info.nullable else base


def struct_strategy(fields: tuple[FieldInfo, ...]) -> st.SearchStrategy[dict[str, Any]]:
    """Regular fields always present; tagged fields sometimes absent (-> default)."""
    required = {f.name: field_strategy(f) for f in fields if f.tag is None}
    optional = {f.name: field_strategy(f) for f in fields if f.tag is not None}
    return st.fixed_dictionaries(required, optional=optional)


def normalize(fields: tuple[FieldInfo, ...], value: dict[str, Any]) -> Container:
    """What parsing the built bytes must give: missing keys at their defaults."""
    out = Container()
    for f in fields:
        if f.name not in value:
            out[f.name] = f.default_value()
            continue
        v = value[f.name]
        if v is not None and f.kind == "struct":
            v = normalize(f.fields, v)
        elif v is not None and f.kind == "array" and f.element == "struct":
            v = [normalize(f.fields, item) for item in v]
        elif v is not None and f.kind == "array":
            v = list(v)
        out[f.name] = v
    return out


def all_specs() -> list[tuple[str, MessageSpec, int]]:
    out = []
    for key, mod in sorted(API_MODULES.items()):
        lo, hi = mod.VALID_VERSIONS
        for v in range(lo, hi + 1):
            out.append((f"{mod.NAME}Request-v{v}", mod.REQUEST, v))
            out.append((f"{mod.NAME}Response-v{v}", mod.RESPONSE, v))
        assert key == mod.API_KEY
    for mod in DATA_MODULES.values():
        lo, hi = mod.VALID_VERSIONS
        out += [(f"{mod.NAME}-v{v}", mod.SCHEMA, v) for v in range(lo, hi + 1)]
    return out


SPECS = all_specs()


@pytest.mark.parametrize(("label", "spec", "version"), SPECS, ids=[s[0] for s in SPECS])
@settings(
    max_examples=8,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data())
def test_round_trip_every_api_and_version(
    label: str, spec: MessageSpec, version: int, data: st.DataObject
) -> None:
    fields = spec.fields(version)
    value = data.draw(struct_strategy(fields), label=label)
    schema = spec.schema(version)
    interp = spec.interpreted(version)

    encoded = schema.build(value)
    assert interp.build(value) == encoded  # compiled == interpreted (build)
    parsed = schema.parse(encoded)
    assert parsed == normalize(fields, value)
    assert interp.parse(encoded) == parsed  # compiled == interpreted (parse)
    assert schema.build(parsed) == encoded
    # every prefix is too short: a clean MalformedRequest, never another error
    if encoded:
        cut = data.draw(st.integers(0, len(encoded) - 1), label="cut")
        with pytest.raises(MalformedRequest):
            codec._parse_body(schema, encoded[:cut], 0)


def test_every_schema_compiles() -> None:
    failures = {}
    for label, spec, version in SPECS:
        spec.schema(version)
        if version in spec.compile_failures:
            failures[label] = spec.compile_failures[version]
    assert failures == {}


def test_empty_dict_builds_the_defaults() -> None:
    for _label, spec, version in SPECS:
        fields = spec.fields(version)
        encoded = spec.schema(version).build({})
        assert spec.schema(version).parse(encoded) == normalize(fields, {})


# --------------------------------------------------------------------------------------
# the generated modules and the api table
# --------------------------------------------------------------------------------------


def test_module_surface() -> None:
    produce = API_MODULES[0]
    assert produce.NAME == "Produce"
    assert produce.API_KEY == 0
    assert produce.VALID_VERSIONS == (3, 13)
    assert produce.FLEXIBLE_MIN == 9
    assert API_MODULES[18].NAME == "ApiVersions"
    assert API_MODULES[23].__name__ == "protocol.messages.offset_for_leader_epoch"
    assert API_MODULES[47].FLEXIBLE_MIN is None  # OffsetDelete is never flexible
    # latestVersionUnstable: InitProducerId v6 is not served
    assert API_MODULES[22].VALID_VERSIONS == (0, 5)
    with pytest.raises(ValueError):
        API_MODULES[0].request_schema(2)


def test_api_key_enum_matches_schemas() -> None:
    assert {int(k) for k in api.ApiKey} == set(API_MODULES)
    for key in api.ApiKey:
        name = re.sub(
            r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", api.SCHEMAS[key].NAME
        )
        assert name.upper() == key.name
    assert api.ApiKey.PRODUCE == 0
    assert api.ApiKey.API_VERSIONS == 18
    assert api.ApiKey.CREATE_TOPICS == 19
    assert api.ApiKey.DESCRIBE_TOPIC_PARTITIONS == 75


def test_header_versions() -> None:
    assert api.request_header_version(api.ApiKey.PRODUCE, 8) == 1
    assert api.request_header_version(api.ApiKey.PRODUCE, 9) == 2
    assert api.response_header_version(api.ApiKey.PRODUCE, 8) == 0
    assert api.response_header_version(api.ApiKey.PRODUCE, 9) == 1
    assert api.request_header_version(api.ApiKey.API_VERSIONS, 3) == 2
    for v in range(5):
        assert api.response_header_version(api.ApiKey.API_VERSIONS, v) == 0
    assert api.request_header_version(api.ApiKey.OFFSET_DELETE, 0) == 1
    with pytest.raises(UnknownApiKey):
        api.request_header_version(999, 0)


def test_field_names_are_snake_case() -> None:
    names = {f.name for f in API_MODULES[3].response_fields(12)}
    assert {"throttle_time_ms", "brokers", "cluster_id", "controller_id", "topics"} <= names
    topic = next(f for f in API_MODULES[3].response_fields(12) if f.name == "topics")
    part = next(f for f in topic.fields if f.name == "partitions")
    assert {"isr_nodes", "leader_epoch", "replica_nodes", "offline_replicas"} <= {
        f.name for f in part.fields
    }
    produce = {f.name for f in API_MODULES[0].request_fields(9)}
    assert "topic_data" in produce
    assert "producer_id" in {f.name for f in API_MODULES[22].response_fields(4)}


def test_defaults_from_json_are_converted() -> None:
    fetch = {f.name: f for f in API_MODULES[1].request_fields(15)}
    assert "replica_id" not in fetch  # versions 0-14 only
    assert {f.name: f for f in API_MODULES[1].request_fields(14)}["replica_id"].default == -1
    assert fetch["max_bytes"].default == 0x7FFFFFFF
    assert fetch["isolation_level"].default == 0
    assert fetch["session_epoch"].default == -1
    assert fetch["cluster_id"].default is None and fetch["cluster_id"].tag == 0
    assert fetch["replica_state"].tag == 1
    assert {f.name: f.default for f in fetch["replica_state"].fields} == {
        "replica_id": -1,
        "replica_epoch": -1,
    }
    parts = next(f for f in fetch["topics"].fields if f.name == "partitions")
    topics18 = next(f for f in API_MODULES[1].request_fields(18) if f.name == "topics")
    parts18 = next(f for f in topics18.fields if f.name == "partitions")
    hw = next(f for f in parts18.fields if f.tag == 1)
    assert hw.name == "high_watermark" and hw.default == 2**63 - 1
    assert {f.name: f.default for f in parts.fields}["log_start_offset"] == -1
    avs = {f.name: f for f in API_MODULES[18].response_fields(3)}
    assert avs["finalized_features_epoch"].default == -1
    assert avs["zk_migration_ready"].default is False
    # nullable without a JSON default: null
    md = {f.name: f for f in API_MODULES[3].request_fields(12)}
    assert md["topics"].nullable and md["topics"].default is None
    assert md["allow_auto_topic_creation"].default is True
    # uuid zero
    topics = {f.name: f for f in md["topics"].fields}
    assert topics["topic_id"].default == uuid.UUID(int=0)


def test_builder_ignores_unknown_keys_and_fills_defaults() -> None:
    schema = API_MODULES[3].request_schema(4)  # Metadata v4: topics (nullable), auto create
    encoded = schema.build({"topics": [{"name": "a", "topic_id": uuid.uuid4()}], "extra": 1})
    assert encoded == b"\x00\x00\x00\x01\x00\x01a\x01"
    parsed = schema.parse(encoded)
    assert parsed.topics[0].name == "a"
    assert parsed.allow_auto_topic_creation is True
    assert schema.build({}) == b"\xff\xff\xff\xff\x01"


def test_encode_error_names_the_field() -> None:
    with pytest.raises(EncodeError, match=r"topics.*\[0\].*name"):
        codec.encode_response(3, 12, 1, {"topics": [{"name": 5}]})
    with pytest.raises(EncodeError, match="error_code"):
        codec.encode_response(18, 3, 1, {"error_code": 1 << 20})


def test_import_builds_no_schema() -> None:
    """`import protocol` only declares the messages: no construct is built until a version
    is first used (what keeps the broker's start-up short; measured by tools/bench, not
    here)."""
    code = (
        "import protocol\n"
        "from protocol.api import API_MODULES\n"
        "built = [m.NAME for m in API_MODULES.values()\n"
        "         for spec in (m.REQUEST, m.RESPONSE) if spec._schemas or spec._interpreted]\n"
        "print(len(API_MODULES), built)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split(" ", 1)
    assert int(out[0]) > 70
    assert out[1].strip() == "[]"


def test_schemas_are_built_lazily_and_cached() -> None:
    spec = API_MODULES[20].REQUEST  # DeleteTopics
    first = spec.schema(6)
    assert spec.schema(6) is first
    assert spec._schemas[6] is first


# --------------------------------------------------------------------------------------
# tagged fields
# --------------------------------------------------------------------------------------


def _tag_section(data: bytes, offset: int) -> list[tuple[int, bytes]]:
    stream = io.BytesIO(data)
    stream.seek(offset)
    out = []
    for _ in range(read_uvarint(stream)):
        tag = read_uvarint(stream)
        size = read_uvarint(stream)
        out.append((tag, stream.read(size)))
    return out


def test_tagged_defaults_are_not_written() -> None:
    schema = API_MODULES[18].response_schema(3)
    base = {"error_code": 0, "api_keys": [], "throttle_time_ms": 0}
    plain = schema.build(base)
    # error_code(2) + compact empty array(1) + throttle(4) + tag section with no entries
    assert plain == b"\x00\x00\x01\x00\x00\x00\x00\x00"
    explicit_defaults = dict(
        base,
        supported_features=[],
        finalized_features_epoch=-1,
        finalized_features=[],
        zk_migration_ready=False,
    )
    assert schema.build(explicit_defaults) == plain
    with_epoch = schema.build(dict(base, finalized_features_epoch=7, zk_migration_ready=True))
    assert _tag_section(with_epoch, 7) == [(1, (7).to_bytes(8, "big")), (3, b"\x01")]
    parsed = schema.parse(with_epoch)
    assert parsed.finalized_features_epoch == 7
    assert parsed.zk_migration_ready is True
    assert parsed.supported_features == []


def test_tagged_struct_written_only_when_not_default() -> None:
    schema = API_MODULES[0].response_schema(10)
    part = {"index": 0, "error_code": 0, "base_offset": 5}
    body = {"responses": [{"name": "t", "partition_responses": [part]}]}
    no_leader = schema.build(body)
    default_leader = schema.build(
        {
            "responses": [
                {
                    "name": "t",
                    "partition_responses": [
                        dict(part, current_leader={"leader_id": -1, "leader_epoch": -1})
                    ],
                }
            ]
        }
    )
    assert no_leader == default_leader
    leader = schema.build(
        {
            "responses": [
                {
                    "name": "t",
                    "partition_responses": [dict(part, current_leader={"leader_id": 3})],
                }
            ]
        }
    )
    assert len(leader) > len(no_leader)
    parsed = schema.parse(leader)
    assert parsed.responses[0].partition_responses[0].current_leader == {
        "leader_id": 3,
        "leader_epoch": -1,
    }
    assert schema.parse(no_leader).responses[0].partition_responses[0].current_leader == {
        "leader_id": -1,
        "leader_epoch": -1,
    }


def test_unknown_tags_are_skipped() -> None:
    schema = API_MODULES[18].request_schema(3)
    body = b"\x04kpy\x043.0"
    tags = b"\x02" + b"\x05\x03abc" + b"\x09\x00"  # two unknown tags (5: 3 bytes, 9: empty)
    parsed = schema.parse(body + tags)
    assert parsed == {"client_software_name": "kpy", "client_software_version": "3.0"}
    # a known tag among unknown ones is still read
    avs = API_MODULES[18].response_schema(3)
    data = b"\x00\x00\x01\x00\x00\x00\x00" + b"\x02" + b"\x07\x01\xff" + b"\x03\x01\x01"
    assert avs.parse(data).zk_migration_ready is True


def test_varints() -> None:
    for value in (0, 1, 127, 128, 300, 2**21, 2**32 - 1):
        assert read_uvarint(io.BytesIO(uvarint_bytes(value))) == value
    with pytest.raises(MalformedRequest):
        read_uvarint(io.BytesIO(b"\xff\xff\xff\xff\xff\x01"))  # 6 bytes
    with pytest.raises(MalformedRequest):
        read_uvarint(io.BytesIO(b"\x80"))
    with pytest.raises(EncodeError):
        uvarint_bytes(-1)


def test_nullable_struct_marker() -> None:
    spec = API_MODULES[75].REQUEST  # DescribeTopicPartitions: nullable Cursor
    schema = spec.schema(0)
    none = schema.build({"topics": [], "response_partition_limit": 5})
    assert none.endswith(b"\xff\x00")  # cursor null marker, then the tag section
    some = schema.build({"cursor": {"topic_name": "t", "partition_index": 2}})
    assert schema.parse(some).cursor == {"topic_name": "t", "partition_index": 2}
    assert schema.parse(none).cursor is None


def test_invalid_utf8_is_replaced_like_kafka() -> None:
    schema = API_MODULES[18].request_schema(3)
    parsed = schema.parse(b"\x03\xff\xfe\x01\x00")
    assert parsed.client_software_name == "\ufffd\ufffd"
    assert parsed.client_software_version == ""


# --------------------------------------------------------------------------------------
# interop with kafka-python (a test dependency): its encoder and decoder
# --------------------------------------------------------------------------------------


def _kp_request(cls: Any, version: int, correlation_id: int = 11, **fields: Any) -> bytes:
    req = cls(version=version, **fields)
    req.with_header(correlation_id=correlation_id, client_id="kp-client")
    return bytes(req.encode(header=True))


def test_kafka_python_api_versions_requests_decode() -> None:
    from kafka.protocol.metadata import ApiVersionsRequest

    for version in (3, 4):
        frame = _kp_request(
            ApiVersionsRequest,
            version,
            client_software_name="kafka-python",
            client_software_version="3.0.12",
        )
        header, body = codec.decode_request(frame)
        assert header == codec.RequestHeader(18, version, 11, "kp-client")
        assert body == {
            "client_software_name": "kafka-python",
            "client_software_version": "3.0.12",
        }
    frame = _kp_request(ApiVersionsRequest, 0)
    header, body = codec.decode_request(frame)
    assert header.api_version == 0 and body == {}


def test_kafka_python_metadata_v12_request_decodes() -> None:
    from kafka.protocol.metadata import MetadataRequest

    tid = uuid.uuid4()
    topic = MetadataRequest.MetadataRequestTopic(name="orders", topic_id=tid)
    frame = _kp_request(
        MetadataRequest,
        12,
        topics=[topic],
        allow_auto_topic_creation=False,
        include_topic_authorized_operations=True,
    )
    header, body = codec.decode_request(frame)
    assert (header.api_key, header.api_version, header.client_id) == (3, 12, "kp-client")
    assert body.topics == [{"topic_id": tid, "name": "orders"}]
    assert body.allow_auto_topic_creation is False
    assert body.include_topic_authorized_operations is True
    assert codec.encode_request(3, 12, 11, "kp-client", body)[4:] == frame


def test_kafka_python_produce_v9_request_decodes() -> None:
    from kafka.protocol.producer import ProduceRequest

    records = bytes(range(70))
    pd = ProduceRequest.TopicProduceData.PartitionProduceData(index=2, records=records)
    topic = ProduceRequest.TopicProduceData(name="t1", partition_data=[pd])
    frame = _kp_request(
        ProduceRequest, 9, transactional_id=None, acks=-1, timeout_ms=1500, topic_data=[topic]
    )
    header, body = codec.decode_request(frame)
    assert header.api_key == api.ApiKey.PRODUCE and header.api_version == 9
    assert body.transactional_id is None
    assert (body.acks, body.timeout_ms) == (-1, 1500)
    assert body.topic_data[0].name == "t1"
    assert body.topic_data[0].partition_data == [{"index": 2, "records": records}]
    assert codec.encode_request(0, 9, 11, "kp-client", body)[4:] == frame


def test_kafka_python_fetch_v12_request_decodes() -> None:
    from kafka.protocol.consumer import FetchRequest

    part = FetchRequest.FetchTopic.FetchPartition(
        partition=1,
        current_leader_epoch=4,
        fetch_offset=99,
        last_fetched_epoch=-1,
        log_start_offset=-1,
        partition_max_bytes=1 << 20,
    )
    topic = FetchRequest.FetchTopic(topic="events", partitions=[part])
    frame = _kp_request(
        FetchRequest,
        12,
        replica_id=-1,
        max_wait_ms=500,
        min_bytes=1,
        max_bytes=52428800,
        isolation_level=1,
        session_id=0,
        session_epoch=-1,
        topics=[topic],
        forgotten_topics_data=[],
        rack_id="",
    )
    header, body = codec.decode_request(frame)
    assert header.api_version == 12
    assert (body.max_wait_ms, body.min_bytes, body.isolation_level) == (500, 1, 1)
    assert body.cluster_id is None  # tagged, absent
    p = body.topics[0].partitions[0]
    assert (p.partition, p.current_leader_epoch, p.fetch_offset) == (1, 4, 99)
    assert p.partition_max_bytes == 1 << 20
    assert codec.encode_request(1, 12, 11, "kp-client", body)[4:] == frame


def test_api_versions_response_decodes_with_kafka_python() -> None:
    from kafka.protocol.metadata import ApiVersionsResponse

    frame = codec.encode_response(
        18,
        3,
        5,
        {
            "api_keys": [{"api_key": 0, "min_version": 0, "max_version": 13}],
            "finalized_features_epoch": 3,
        },
    )
    assert int.from_bytes(frame[:4], "big") == len(frame) - 4
    assert frame[4:8] == (5).to_bytes(4, "big")  # header v0 even for v3
    resp = ApiVersionsResponse.decode(frame[4:], version=3, header=True)
    assert resp.header.correlation_id == 5
    assert resp.api_keys[0].max_version == 13
    assert resp.finalized_features_epoch == 3


def test_metadata_response_decodes_with_kafka_python() -> None:
    from kafka.protocol.metadata import MetadataResponse

    tid = uuid.uuid4()
    frame = codec.encode_response(
        3,
        12,
        6,
        {
            "brokers": [{"node_id": 1, "host": "localhost", "port": 9092, "rack": None}],
            "cluster_id": "c1",
            "controller_id": 1,
            "topics": [
                {
                    "error_code": 0,
                    "name": "orders",
                    "topic_id": tid,
                    "partitions": [
                        {
                            "partition_index": 0,
                            "leader_id": 1,
                            "replica_nodes": [1],
                            "isr_nodes": [1],
                        }
                    ],
                }
            ],
        },
    )
    md = MetadataResponse.decode(frame[4:], version=12, header=True)
    assert md.header.correlation_id == 6
    assert md.brokers[0].host == "localhost" and md.brokers[0].rack is None
    assert md.topics[0].topic_id == tid
    assert md.topics[0].partitions[0].isr_nodes == [1]


def test_produce_response_decodes_with_kafka_python() -> None:
    from kafka.protocol.producer import ProduceResponse

    frame = codec.encode_response(
        0,
        9,
        7,
        {
            "responses": [
                {
                    "name": "t",
                    "partition_responses": [
                        {"index": 0, "error_code": 0, "base_offset": 42, "log_start_offset": 0}
                    ],
                }
            ]
        },
    )
    pr = ProduceResponse.decode(frame[4:], version=9, header=True)
    assert pr.responses[0].partition_responses[0].base_offset == 42


def test_fetch_response_decodes_with_kafka_python() -> None:
    from kafka.protocol.consumer import FetchResponse

    records = b"\x00" * 61
    frame = codec.encode_response(
        1,
        12,
        8,
        {
            "responses": [
                {
                    "topic": "events",
                    "partitions": [
                        {
                            "partition_index": 1,
                            "high_watermark": 10,
                            "last_stable_offset": 10,
                            "log_start_offset": 0,
                            "aborted_transactions": None,
                            "current_leader": {"leader_id": 2, "leader_epoch": 5},
                            "records": records,
                        }
                    ],
                }
            ]
        },
    )
    fr = FetchResponse.decode(frame[4:], version=12, header=True)
    p = fr.responses[0].partitions[0]
    assert (p.high_watermark, p.current_leader.leader_id, p.current_leader.leader_epoch) == (
        10,
        2,
        5,
    )
    assert bytes(p.records) == records


def _kafka_python_classes() -> dict[tuple[int, str], Any]:
    """(api key, "request"/"response") -> kafka-python's message class."""
    import importlib
    import pkgutil

    from kafka.protocol.api_message import ApiMessage

    for sub in ("admin", "consumer", "metadata", "producer"):
        pkg = importlib.import_module(f"kafka.protocol.{sub}")
        for info in pkgutil.iter_modules(pkg.__path__):
            importlib.import_module(f"kafka.protocol.{sub}.{info.name}")
    importlib.import_module("kafka.protocol.sasl")

    def walk(cls: Any) -> Any:
        for sub_cls in cls.__subclasses__():
            yield sub_cls
            yield from walk(sub_cls)

    return {
        (c.API_KEY, c.type): c
        for c in walk(ApiMessage)
        if getattr(c, "_class_version", None) is None
    }


def _kafka_python_versions() -> dict[tuple[int, str], tuple[int, int]]:
    """(api key, side) -> the versions kafka-python implements."""
    return {k: (c.min_version, c.max_version) for k, c in _kafka_python_classes().items()}


_KP_VERSIONS = _kafka_python_versions()
# Our schemas (Kafka 4.4's definitions) cross-checked with kafka-python's own codec wherever
# kafka-python implements the API and version.
_KP_CASES = [
    (mod.NAME, key, side, v)
    for key, mod in sorted(API_MODULES.items())
    for side in ("request", "response")
    for v in range(mod.VALID_VERSIONS[0], mod.VALID_VERSIONS[1] + 1)
    if _KP_VERSIONS.get((key, side), (0, -1))[0] <= v <= _KP_VERSIONS.get((key, side), (0, -1))[1]
]
#: What kafka-python 3.0.12 lacks of the API versions wirebroker serves: versions new in
#: Kafka 4.4 (ApiVersions v5, TxnOffsetCommit v6, DeleteGroups v3), compared with Apache
#: Kafka itself instead (tests/oracle/test_new_versions.py); and the KIP-848 APIs
#: (ConsumerGroupHeartbeat, ConsumerGroupDescribe v0-1), compared with Kafka field by field
#: by compat/conformance (`cg-v*`) and tests/oracle/test_consumer_group_answers.py; KIP-932's
#: ShareFetch / ShareAcknowledge v1-2, compared with Kafka by compat/conformance (`share.*`)
#: and tests/unit/handlers/test_share_fetch.py (Kafka's recorded answers).
KP_LACKS = {(18, 5), (28, 6), (42, 3), (68, 0), (68, 1), (69, 0), (69, 1)}
KP_LACKS |= {(78, 1), (78, 2), (79, 1), (79, 2)}
KP_LACKS |= {(83, 0), (84, 0), (85, 0), (85, 1), (86, 0), (87, 0), (87, 1)}  # share state
KP_LACKS |= {(90, 0), (90, 1), (91, 0), (92, 0)}  # share group offsets
KP_LACKS |= {(76, 1), (77, 1)}  # share group heartbeat and describe


@pytest.fixture(scope="module")
def kafka_python_classes() -> dict[tuple[int, str], Any]:
    return _kafka_python_classes()


def test_kafka_python_cross_checks_every_served_version() -> None:
    """Every API version the broker serves is in the kafka-python cross-check below, both
    sides, except those in KP_LACKS."""
    from wirebroker.handlers.registry import load_handlers

    served = {
        (spec.api_key, v)
        for spec in load_handlers().values()
        for v in range(spec.min_version, spec.max_version + 1)
    }
    requests = {(key, v) for _name, key, side, v in _KP_CASES if side == "request"}
    responses = {(key, v) for _name, key, side, v in _KP_CASES if side == "response"}
    assert served - (requests & responses) == KP_LACKS


@pytest.mark.parametrize(
    ("name", "key", "side", "version"), _KP_CASES, ids=[f"{c[0]}-{c[2]}-v{c[3]}" for c in _KP_CASES]
)
@settings(
    max_examples=4,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(data=st.data())
def test_kafka_python_reencodes_our_bytes_identically(
    kafka_python_classes: dict[tuple[int, str], Any],
    name: str,
    key: int,
    side: str,
    version: int,
    data: st.DataObject,
) -> None:
    """Our bytes -> kafka-python's decoder -> its encoder gives back the same bytes."""
    kp = kafka_python_classes[(key, side)]
    mod = API_MODULES[key]
    spec = mod.REQUEST if side == "request" else mod.RESPONSE
    value = data.draw(struct_strategy(spec.fields(version)))
    if key == api.ApiKey.API_VERSIONS and side == "response":
        value["error_code"] = 0  # with an error, clients read the body as v0 (as Kafka sends)
    encoded = spec.schema(version).build(value)
    decoded = kp.decode(encoded, version=version)
    assert decoded.version == version
    decoded.with_header()  # some of its encoders need a header object to exist
    assert bytes(decoded.encode()) == encoded


# --------------------------------------------------------------------------------------
# codec-level errors
# --------------------------------------------------------------------------------------


def test_decode_request_errors() -> None:
    frame = codec.encode_request(3, 12, 1, "c", {})[4:]
    header, _ = codec.decode_request(frame)
    assert header.api_version == 12
    with pytest.raises(UnknownApiKey):
        codec.decode_request(b"\x03\xe7" + frame[2:])  # key 999
    bad_version = frame[:2] + b"\x00\x63" + frame[4:]  # Metadata v99
    with pytest.raises(UnsupportedVersion) as exc:
        codec.decode_request(bad_version)
    assert exc.value.header.api_version == 99 and exc.value.header.correlation_id == 1
    with pytest.raises(MalformedRequest):
        codec.decode_request(frame[:-3])


def test_trailing_bytes_are_tolerated() -> None:
    frame = codec.encode_request(18, 3, 1, "c", {"client_software_name": "x"})[4:]
    _header, body = codec.decode_request(frame + b"\x00\x01\x02")
    assert body.client_software_name == "x"


def test_generator_check_passes() -> None:
    proc = subprocess.run(
        [sys.executable, "tools/gen_protocol.py", "--check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_generated_files_have_banner() -> None:
    for path in (ROOT / "protocol" / "messages").glob("*.py"):
        first = path.read_text(encoding="utf-8").splitlines()[0]
        assert first.startswith(
            "# AUTOGENERATED by tools/gen_protocol.py from Apache Kafka 4.4.0 "
            "(kafka-clients-4.4.0.jar: common/message/"
        )
        assert "about" not in path.read_text(encoding="utf-8")


def test_array_count_is_bounded_by_the_minimum_element_size() -> None:
    # ListOffsets v1: replica_id, topics[1]{name "t", partitions[2]{int32, int64}} but the
    # bytes hold one 12-byte partition only: refused before parsing any element.
    body = b"\x00\x00\x00\x01" + b"\x00\x00\x00\x01" + b"\x00\x01t" + b"\x00\x00\x00\x02"
    body += b"\x00" * 12
    schema = API_MODULES[2].request_schema(1)
    with pytest.raises(MalformedRequest, match=">= 12 bytes"):
        codec._parse_body(schema, body, 0)
    with pytest.raises(MalformedRequest, match=">= 12 bytes"):
        codec._parse_body(API_MODULES[2].REQUEST.interpreted(1), body, 0)
    ok = body[:-16] + b"\x00\x00\x00\x01" + b"\x00" * 12
    assert codec._parse_body(schema, ok, 0).topics[0].partitions == [
        {"partition_index": 0, "timestamp": 0}
    ]

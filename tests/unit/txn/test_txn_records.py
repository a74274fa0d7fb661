"""__transaction_state codecs against byte vectors written out from Kafka's
TransactionLogKey.json / TransactionLogValue.json layouts."""

from __future__ import annotations

import pytest

from protocol.txn_records import (
    TxnLogValue,
    TxnRecordError,
    decode_key,
    decode_value,
    encode_key,
    encode_value,
)

KEY_TX = bytes.fromhex("000000027478")

VALUE = TxnLogValue(
    producer_id=1000,
    producer_epoch=5,
    timeout_ms=60000,
    status=1,
    partitions=(("t", (0, 2)),),
    last_update_ms=1700000000000,
    start_ms=1699999999000,
)
V0 = bytes.fromhex(
    "0000"  # version 0
    "00000000000003e8"  # producer id 1000
    "0005"  # epoch
    "0000ea60"  # timeout 60000
    "01"  # Ongoing
    "00000001"  # one topic
    "000174"  # "t"
    "00000002"
    "00000000"
    "00000002"  # [0, 2]
    "0000018bcfe56800"  # last update
    "0000018bcfe56418"  # start
)
V1 = bytes.fromhex(
    "0001"
    "00000000000003e8"
    "0005"
    "0000ea60"
    "01"
    "02"  # compact count 1
    "0274"  # compact string "t"
    "03"
    "00000000"
    "00000002"  # compact array [0, 2]
    "00"  # element tags
    "0000018bcfe56800"
    "0000018bcfe56418"
    "02"  # two tagged fields
    "00"
    "08"
    "0000000000000007"  # previous producer id 7
    "02"
    "02"
    "0002"  # client transaction version 2
)


def test_key_vector() -> None:
    assert encode_key("tx") == KEY_TX
    assert decode_key(KEY_TX) == "tx"
    assert decode_key(bytes.fromhex("000100027478")) == 1  # another record type


def test_value_v0_vector() -> None:
    assert encode_value(VALUE, 0) == V0
    assert decode_value(V0) == VALUE


def test_value_v1_vector_with_tags() -> None:
    v = TxnLogValue(
        **{**VALUE.__dict__, "previous_producer_id": 7, "client_transaction_version": 2}
    )
    assert encode_value(v, 1) == V1
    back = decode_value(V1)
    assert back == v and back.version == 1 and back.next_producer_id == -1


def test_empty_state_null_partitions() -> None:
    v = TxnLogValue(1, 0, 100, 0, None, 5, -1)
    raw = encode_value(v)
    assert raw[2 + 8 + 2 + 4 + 1 : 2 + 8 + 2 + 4 + 1 + 4] == b"\xff\xff\xff\xff"
    assert decode_value(raw) == v
    assert decode_value(encode_value(v, 1)).partitions is None


def test_v1_unknown_tag_skipped() -> None:
    raw = V1[:-15] + bytes.fromhex("010502abcd")
    assert decode_value(raw).previous_producer_id == -1


@pytest.mark.parametrize("cut", range(1, len(V0)))
def test_truncated_value_is_an_error(cut: int) -> None:
    with pytest.raises(TxnRecordError):
        decode_value(V0[:cut])


def test_bad_counts_and_versions() -> None:
    with pytest.raises(TxnRecordError):
        decode_value(V0[:17] + bytes.fromhex("7fffffff"))
    with pytest.raises(TxnRecordError):
        decode_value(bytes.fromhex("0002") + V0[2:])
    with pytest.raises(TxnRecordError):
        encode_value(VALUE, 2)

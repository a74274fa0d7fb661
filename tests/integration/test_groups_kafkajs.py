"""Consumer groups with kafkajs 2.2.4 (Node) against a wirebroker subprocess (issue 3).

kafkajs is a pure-JavaScript client with its own protocol code (JoinGroup/SyncGroup/Heartbeat/
OffsetCommit/OffsetFetch/LeaveGroup, and the admin's ListGroups/DescribeGroups/DeleteGroups).
The test drives `js/group_client.js` with `node` as a subprocess (one JSON request in argv, one
JSON result on stdout, a watchdog inside the script and a timeout outside).

What passing proves: a kafkajs group consumer reads every record of a subscribed topic, commits
and disconnects; the next kafkajs consumer of the group starts exactly at the commit, also after
a rewinding commit with metadata; kafkajs's admin lists the group, describes it Empty after the
members left, fetches the offsets (metadata included) and deletes it (a second delete fails with
GROUP_ID_NOT_FOUND).

Needs `node` (>= 14) and `npm ci --prefix tests/integration/js` (kafkajs pinned in
package-lock.json). Missing either is a FAILURE, not a skip: the test would otherwise pass
vacuously in CI.
"""

from __future__ import annotations

from typing import Any

import pytest
from _broker import BrokerProcess
from _group_procs import admin_client, committed_offsets, create_topic, produce
from _kafkajs import run_script

pytestmark = pytest.mark.compat

RUN_TIMEOUT_MS = 40_000


def _run(request: dict[str, Any]) -> dict[str, Any]:
    return run_script("group_client.js", request, RUN_TIMEOUT_MS)


Got = dict[int, list[tuple[int, bytes | None, bytes | None]]]


def _records(result: dict[str, Any]) -> Got:
    got: Got = {}
    for p, offset, key_hex, value_hex in result["records"]:
        key = None if key_hex is None else bytes.fromhex(key_hex)
        value = None if value_hex is None else bytes.fromhex(value_hex)
        got.setdefault(p, []).append((offset, key, value))
    return got


def _expected(sent: dict[int, list[tuple[bytes | None, bytes]]], starts: dict[int, int]) -> Got:
    return {
        p: [(o, k, v) for o, (k, v) in enumerate(sent[p]) if o >= starts[p]]
        for p in sent
        if len(sent[p]) > starts[p]
    }


def test_subscribe_commit_disconnect_then_resume(broker: BrokerProcess) -> None:
    bootstrap = broker.bootstrap
    topic, group = "kjs-resume", "kjs-resume-group"
    create_topic(bootstrap, topic, 2)
    sent = produce(bootstrap, topic, 2, 0, 25)
    base = {"brokers": [bootstrap], "topic": topic, "groupId": group}

    result = _run({**base, "mode": "consume", "expect": 50, "commit": "positions"})
    assert _records(result) == _expected(sent, {0: 0, 1: 0})

    admin = admin_client(bootstrap)
    try:
        assert committed_offsets(admin, group) == {(topic, 0): (25, ""), (topic, 1): (25, "")}
    finally:
        admin.close()

    more = produce(bootstrap, topic, 2, 25, 5)
    for p in range(2):
        sent[p].extend(more[p])

    rewind = [
        {"partition": 0, "offset": 3, "metadata": "kafkajs \u2713"},
        {"partition": 1, "offset": 30},
    ]
    result = _run({**base, "mode": "consume", "expect": 10, "commit": rewind})
    assert _records(result) == _expected(sent, {0: 25, 1: 25})

    view = _run({**base, "mode": "admin"})
    listed = {g["groupId"]: g["protocolType"] for g in view["groups"]}
    assert listed.get(group) == "consumer", view["groups"]
    assert view["described"] == [
        {
            "groupId": group,
            "state": "Empty",
            "protocolType": "consumer",
            "protocol": "",
            "members": 0,
            "errorCode": 0,
        }
    ]
    # kafkajs's fetchOffsets turns an empty metadata string into null (`metadata || null`).
    assert sorted(map(tuple, view["offsets"])) == [
        (topic, 0, 3, "kafkajs \u2713"),
        (topic, 1, 30, None),
    ]

    result = _run({**base, "mode": "consume", "expect": 27, "commit": "positions"})
    assert _records(result) == _expected(sent, {0: 3, 1: 30})

    view = _run({**base, "mode": "admin", "delete": True})
    assert view["deleted"] == [{"groupId": group, "errorCode": 0}]
    assert view["deletedAgain"] == [
        {"groupId": group, "errorCode": 69, "type": "GROUP_ID_NOT_FOUND"}
    ]

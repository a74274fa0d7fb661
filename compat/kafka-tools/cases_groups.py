"""kafka-consumer-groups, kafka-console-producer and kafka-console-consumer cases."""

from __future__ import annotations

import re
from datetime import UTC, datetime

from target import (
    Target,
    WireTxn,
    coordinator,
    recent_base_ts,
    stopping,
    table,
    wait_until,
)

from compat.scenarios.wire import LATEST, Wire
from protocol.records import RecordSpec


def _topic_with(
    t: Target, prefix: str, per_partition: int, partitions: int = 2, base_ts: int = 0
) -> str:
    """A topic whose partitions hold `per_partition` records each, one second apart from
    `base_ts` (default: an hour ago)."""
    topic = t.name(prefix)
    base = base_ts or recent_base_ts()
    with t.wire() as w:
        w.create_topic(topic, partitions)
        for p in range(partitions):
            specs = [
                RecordSpec(f"k{p}-{i}".encode(), f"v{p}-{i}".encode(), timestamp=base + i * 1000)
                for i in range(per_partition)
            ]
            w.produce(topic, p, specs)
    return topic


def _groups(t: Target, *args: str, stdout_only: bool = False) -> str:
    ran = t.tool("kafka-consumer-groups", "--bootstrap-server", t.bootstrap, *args).expect(0)
    return ran.out if stdout_only else ran.out + ran.err


def _ends(w: Wire, topic: str, partitions: int) -> dict[int, int]:
    return {p: w.list_offset(topic, p, LATEST) for p in range(partitions)}


def _check_live_describe(t: Target, group: str, topic: str, ends: dict[int, int]) -> None:
    rows = table(_groups(t, "--describe", "--group", group, stdout_only=True), "GROUP")
    got = {int(r["PARTITION"]): r for r in rows if r["TOPIC"] == topic}
    assert set(got) == set(ends), rows
    for p, r in got.items():
        assert (r["CURRENT-OFFSET"], r["LOG-END-OFFSET"], r["LAG"]) == (
            str(ends[p]),
            str(ends[p]),
            "0",
        ), r
    members = {r["CONSUMER-ID"] for r in got.values()}
    assert len(members) == 1 and "-" not in members, members
    members_out = _groups(
        t, "--describe", "--group", group, "--members", "--verbose", stdout_only=True
    )
    [member] = table(members_out, "GROUP")
    assert member["#PARTITIONS"] == "2" and member["CONSUMER-ID"] in members, member
    assert member["CURRENT-ASSIGNMENT"] == f"{topic}:0,1", member
    state = _groups(t, "--describe", "--group", group, "--state")
    m = re.search(rf"^{re.escape(group)}\s+(\S+)\s+\((\d+)\)\s+(\S+)\s+(\S+)\s+(\d+)", state, re.M)
    assert m is not None, state
    with t.wire() as w:
        node = coordinator(w, group)
        host = w.brokers()[node]
    assert (m.group(1), int(m.group(2))) == (host, node), (m.groups(), host, node)
    assert m.group(3, 4, 5) == ("range", "Stable", "1"), m.groups()


def groups_list_describe(t: Target) -> str:
    topic = _topic_with(t, "grp", 4)
    group = t.name("grp")
    consumer = t.background(
        "kafka-console-consumer",
        *("--bootstrap-server", t.bootstrap, "--topic", topic, "--group", group),
        *("--from-beginning", "--consumer-property", "auto.commit.interval.ms=200"),
    )
    with stopping(consumer), t.wire() as w:
        ends = _ends(w, topic, 2)
        wait_until(
            "the console consumer's commits", lambda: w.committed(group, topic, [0, 1]) == ends, 60
        )
        listed = _groups(t, "--list")
        assert group in listed.split(), listed
        states = table(_groups(t, "--list", "--state", stdout_only=True), "GROUP")
        assert {"GROUP": group, "STATE": "Stable"} in states, states
        _check_live_describe(t, group, topic, ends)
        reset = _groups(
            t, "--reset-offsets", "--group", group, "--all-topics", "--to-earliest", "--execute"
        )
        assert "can only be reset if the group" in reset and "Stable" in reset, reset
        refused = _groups(t, "--delete", "--group", group)
        assert "GroupNotEmptyException" in refused, refused
        assert w.committed(group, topic, [0, 1]) == ends, "offsets changed while the group was live"
    with t.wire() as w:
        wait_until("the group to be empty", lambda: w.groups().get(group) == "Empty", 30)
    after = t.tool(
        "kafka-consumer-groups", "--bootstrap-server", t.bootstrap, "--describe", "--group", group
    )
    assert f"Consumer group '{group}' has no active members." in after.expect(0).err, after.err
    rows = table(after.out, "GROUP")
    assert {(r["PARTITION"], r["CURRENT-OFFSET"], r["CONSUMER-ID"]) for r in rows} == {
        ("0", str(ends[0]), "-"),
        ("1", str(ends[1]), "-"),
    }, rows
    return (
        "a live console consumer's group: --list, --list --state (Stable), --describe (offsets, "
        "log end, lag, member), --members --verbose (assignment), --state (coordinator, "
        "strategy, state, members) match the broker; reset and delete are refused while it is "
        "live; after it leaves, --describe shows the committed offsets and no members"
    )


def _reset(t: Target, group: str, *args: str) -> dict[int, int]:
    out = _groups(t, "--reset-offsets", "--group", group, *args, stdout_only=True)
    return {int(r["PARTITION"]): int(r["NEW-OFFSET"]) for r in table(out, "GROUP")}


def groups_reset_offsets(t: Target) -> str:
    base = recent_base_ts()
    topic = _topic_with(t, "reset", 10, base_ts=base)
    between = datetime.fromtimestamp((base + 4500) / 1000, UTC)  # after record 4, before 5
    iso = between.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    group = t.name("reset")
    with t.wire() as w:
        w.commit(group, topic, {0: 10, 1: 10})

        def committed() -> dict[int, int]:
            return w.committed(group, topic, [0, 1])

        dry = _reset(t, group, "--topic", topic, "--to-earliest", "--dry-run")
        assert dry == {0: 0, 1: 0} and committed() == {0: 10, 1: 10}, (dry, committed())
        steps = [
            (("--topic", topic, "--to-earliest"), {0: 0, 1: 0}),
            (("--topic", f"{topic}:0", "--to-offset", "7"), {0: 7, 1: 0}),
            (("--topic", topic, "--shift-by", "-2"), {0: 5, 1: 0}),
            (("--all-topics", "--to-datetime", iso), {0: 5, 1: 5}),
            (("--topic", topic, "--to-latest"), {0: 10, 1: 10}),
        ]
        for args, want in steps:
            shown = _reset(t, group, *args, "--execute")
            assert committed() == want, (args, committed(), want)
            assert all(want[p] == o for p, o in shown.items()) and shown, (args, shown, want)
    return (
        "--dry-run changes nothing; --execute with --to-earliest, --to-offset (one partition), "
        "--shift-by -2 (clamped at the start), --to-datetime and --to-latest commits exactly the "
        "offsets the tool prints (read back with OffsetFetch)"
    )


def groups_delete(t: Target) -> str:
    topic = _topic_with(t, "gdel", 3)
    group, other, unknown = t.name("gdel"), t.name("gdel"), t.name("nogroup")
    with t.wire() as w:
        w.commit(group, topic, {0: 2, 1: 3})
        w.commit(other, topic, {0: 1, 1: 1})
        out = _groups(t, "--delete", "--group", group)
        assert f"Deletion of requested consumer groups ('{group}') was successful." in out, out
        assert group not in w.groups(), w.groups()
        assert w.committed(group, topic, [0, 1]) == {0: -1, 1: -1}
        missing = _groups(t, "--delete", "--group", unknown)
        assert "GroupIdNotFoundException" in missing or "does not exist" in missing, missing
        gone = _groups(t, "--delete-offsets", "--group", other, "--topic", f"{topic}:0")
        assert re.search(rf"^{re.escape(topic)}\s+0\s+Successful", gone, re.M), gone
        assert w.committed(other, topic, [0, 1]) == {0: -1, 1: 1}, w.committed(other, topic, [0, 1])
    return (
        "--delete removes a group and its offsets (ListGroups, OffsetFetch); an unknown group "
        "is reported as not found; --delete-offsets removes one partition's offset only"
    )


# -- console producer / consumer ----------------------------------------------------------------
def console_producer(t: Target) -> str:
    topic = t.topic("cprod", 1)
    lines = "h1:a,h2:b\tk1\tv1\nh1:\tk2\tv2\nh3:c\t<NULL>\tv3\nh4:d\tk4\t<NULL>\n"
    t.tool(
        "kafka-console-producer",
        *("--bootstrap-server", t.bootstrap, "--topic", topic),
        *("--reader-property", "parse.key=true", "--reader-property", "parse.headers=true"),
        *("--reader-property", "null.marker=<NULL>"),
        *("--command-property", "acks=all", "--compression-codec", "gzip"),
        input=lines,
    ).expect(0)
    with t.wire() as w:
        stored = w.read(topic, 0)
    got = [(r.key, r.value, [(k, v) for k, v in r.headers]) for r in stored]
    want = [
        (b"k1", b"v1", [("h1", b"a"), ("h2", b"b")]),
        (b"k2", b"v2", [("h1", b"")]),
        (None, b"v3", [("h3", b"c")]),
        (b"k4", None, [("h4", b"d")]),
    ]
    assert got == want, got
    assert {r.compression for r in stored} == {1}, {r.compression for r in stored}
    return (
        "stdin lines with headers, keys and the null marker are stored as records with exactly "
        "those headers (incl. an empty value), keys (null), values (null), gzip-compressed"
    )


FORMAT = [
    *(
        "--formatter-property",
        "print.timestamp=true",
        "--formatter-property",
        "print.partition=true",
    ),
    *("--formatter-property", "print.offset=true", "--formatter-property", "print.headers=true"),
    *("--formatter-property", "print.key=true"),
]


def _formatted(out: str) -> set[tuple[int, int, int, str, str, str]]:
    """(partition, offset, timestamp, headers, key, value) of each DefaultMessageFormatter line."""
    rows = set()
    for line in out.splitlines():
        m = re.match(r"CreateTime:(\d+)\tPartition:(\d+)\tOffset:(\d+)\t(.*?)\t(.*?)\t(.*)$", line)
        if m:
            ts, p, o, headers, key, value = m.groups()
            rows.add((int(p), int(o), int(ts), headers, key, value))
    return rows


def console_consumer_formatter(t: Target) -> str:
    topic = _topic_with(t, "ccons", 3)
    with t.wire() as w:
        w.produce(
            topic,
            1,
            [
                RecordSpec(
                    b"hk", b"hv", timestamp=recent_base_ts(), headers=(("x", b"1"), ("y", b"2"))
                )
            ],
        )
        stored = [r for p in (0, 1) for r in w.read(topic, p)]
    ran = t.tool(
        "kafka-console-consumer",
        *("--bootstrap-server", t.bootstrap, "--topic", topic, "--from-beginning"),
        *("--max-messages", str(len(stored)), "--timeout-ms", "30000", *FORMAT),
    ).expect(0)
    want = {
        (
            r.partition,
            r.offset,
            r.timestamp,
            ",".join(f"{k}:{(v or b'').decode()}" for k, v in r.headers) or "NO_HEADERS",
            (r.key or b"").decode(),
            (r.value or b"").decode(),
        )
        for r in stored
    }
    assert _formatted(ran.out) == want, _formatted(ran.out) ^ want
    assert f"Processed a total of {len(stored)} messages" in ran.err, ran.err
    one = t.tool(
        "kafka-console-consumer",
        *("--bootstrap-server", t.bootstrap, "--topic", topic, "--partition", "1"),
        *("--offset", "2", "--max-messages", "1", "--timeout-ms", "30000", *FORMAT),
    ).expect(0)
    assert [(p, o) for p, o, *_ in _formatted(one.out)] == [(1, 2)], one.out
    return (
        "--from-beginning --max-messages with timestamp, partition, offset, headers and key "
        "printed: every stored record exactly once, as stored; --partition --offset reads one"
    )


def console_consumer_group(t: Target) -> str:
    topic = _topic_with(t, "cgrp", 3)
    group = t.name("cgrp")
    args = ["--bootstrap-server", t.bootstrap, "--topic", topic, "--group", group]
    first = t.tool("kafka-console-consumer", *args, "--from-beginning", "--max-messages", "6")
    assert sorted(first.expect(0).lines) == sorted(f"v{p}-{i}" for p in (0, 1) for i in range(3))
    with t.wire() as w:
        assert w.committed(group, topic, [0, 1]) == {0: 3, 1: 3}, w.committed(group, topic, [0, 1])
        w.produce(topic, 0, [RecordSpec(b"n", b"new-0")])
        w.produce(topic, 1, [RecordSpec(b"n", b"new-1")])
    again = t.tool("kafka-console-consumer", *args, "--max-messages", "2", "--timeout-ms", "30000")
    assert sorted(again.expect(0).lines) == ["new-0", "new-1"], again.out
    with t.wire() as w:
        assert w.committed(group, topic, [0, 1]) == {0: 4, 1: 4}, w.committed(group, topic, [0, 1])
    return (
        "--group --max-messages commits what it consumed (OffsetFetch); a second run of the "
        "group resumes there and gets exactly the two new records"
    )


def console_consumer_isolation(t: Target) -> str:
    topic = t.name("iso")
    with t.wire() as w:
        w.create_topic(topic, 1)
        txn = WireTxn(w, t.name("iso-txn"))
        for values, commit in ((["c1", "c2"], True), (["a1", "a2"], False), (["c3"], True)):
            txn.add(topic, [0])
            txn.produce(topic, 0, [RecordSpec(None, v.encode()) for v in values])
            txn.end(commit)
    base = ["--bootstrap-server", t.bootstrap, "--topic", topic, "--from-beginning"]
    base += ["--timeout-ms", "30000"]
    committed = t.tool(
        "kafka-console-consumer",
        *base,
        "--max-messages",
        "3",
        "--isolation-level",
        "read_committed",
    )
    assert committed.expect(0).lines == ["c1", "c2", "c3"], committed.out
    every = t.tool(
        "kafka-console-consumer",
        *base,
        "--max-messages",
        "5",
        "--isolation-level",
        "read_uncommitted",
    )
    assert every.expect(0).lines == ["c1", "c2", "a1", "a2", "c3"], every.out
    return (
        "after commit, abort, commit: --isolation-level read_committed prints the committed "
        "records only, read_uncommitted all five, in order"
    )


def console_consumer_kip848(t: Target) -> str:
    topic = _topic_with(t, "k848", 2)
    group = t.name("k848")
    ran = t.tool(
        "kafka-console-consumer",
        *("--bootstrap-server", t.bootstrap, "--topic", topic, "--group", group),
        *("--from-beginning", "--max-messages", "4", "--timeout-ms", "30000"),
        *("--command-property", "group.protocol=consumer"),
    )
    assert "UnsupportedVersionException" not in ran.out + ran.err, (
        "the consumer met UnsupportedVersionException: the broker does not serve the "
        "consumer group protocol (ConsumerGroupHeartbeat)"
    )
    want = sorted(f"v{p}-{i}" for p in (0, 1) for i in range(2))
    assert sorted(ran.expect(0).lines) == want, f"consumed {ran.lines}: {ran.error()}"
    with t.wire() as w:
        assert w.committed(group, topic, [0, 1]) == {0: 2, 1: 2}, w.committed(group, topic, [0, 1])
    return (
        "with group.protocol=consumer (KIP-848, Kafka 4's rebalance protocol) the group "
        "consumer gets every record and commits (OffsetFetch)"
    )

"""Consumer groups with kafka-python 3.x against a wirebroker subprocess (issue 3).

What passing proves, Kafka's behaviour being the spec:

- resume: a subscribed consumer in a group (FindCoordinator, JoinGroup incl. the
  MEMBER_ID_REQUIRED round trip, SyncGroup, Heartbeat, OffsetFetch, OffsetCommit, LeaveGroup)
  reads every record, commits, closes; the next consumer of the group starts exactly at the
  committed offsets (also after a commit that rewinds, with metadata kept);
- three member PROCESSES over six partitions (kafka-python members, then again with
  confluent-kafka members: `_group_procs.py`): in every generation no partition has two owners,
  a member only gets records of its own partitions, no record is delivered twice within a
  generation and every record is delivered; after `kill -9` of one member its partitions move
  to the two others within session.timeout.ms + 2 s, and committed offsets never go backwards
  (OffsetFetch polled all along);
- broker `kill -9` and restart on the same data dir: committed offsets (with metadata) and group
  metadata are replayed: an Empty group stays Empty, a group whose member died with the broker
  comes back Stable with that member and its assignment, then goes Empty once the member's
  session times out (Kafka schedules every loaded member's session anew); consumers resume at
  the commits;
- admin: list / describe / delete groups, list / delete group offsets; deleting a group with
  members -> NON_EMPTY_GROUP, deleting an unknown group -> GROUP_ID_NOT_FOUND, deleting the
  offsets of a topic the group is subscribed to -> GROUP_SUBSCRIBED_TO_TOPIC.
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from _broker import BrokerProcess
from _group_procs import (
    REQUEST_TIMEOUT_MS,
    GroupWorker,
    admin_client,
    committed_offsets,
    create_topic,
    produce,
    wait_until,
)
from kafka import KafkaConsumer, TopicPartition
from kafka.errors import GroupSubscribedToTopicError, NoError
from kafka.structs import OffsetAndMetadata

pytestmark = pytest.mark.compat

SESSION_TIMEOUT_MS = 6000  # Kafka's group.min.session.timeout.ms


def _consumer(bootstrap: str, group: str, **config: Any) -> KafkaConsumer:
    return KafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=group,
        client_id=config.pop("client_id", f"kp-{group}"),
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        session_timeout_ms=SESSION_TIMEOUT_MS,
        heartbeat_interval_ms=500,
        request_timeout_ms=REQUEST_TIMEOUT_MS,
        fetch_max_wait_ms=100,
        **config,
    )


def _poll_exactly(
    consumer: KafkaConsumer, n: int, timeout: float = 30.0
) -> dict[int, list[tuple[int, bytes | None, bytes | None]]]:
    """Poll until `n` records arrived; {partition: [(offset, key, value), ...]}."""
    got: dict[int, list[tuple[int, bytes | None, bytes | None]]] = {}
    deadline = time.monotonic() + timeout
    total = 0
    while total < n:
        left = deadline - time.monotonic()
        assert left > 0, f"got {total} of {n} records in {timeout} s: {got}"
        for tp, records in consumer.poll(timeout_ms=min(1000, int(left * 1000) + 1)).items():
            got.setdefault(tp.partition, []).extend((r.offset, r.key, r.value) for r in records)
            total += len(records)
    return got


def _expected(
    sent: dict[int, list[tuple[bytes | None, bytes]]], starts: dict[int, int]
) -> dict[int, list[tuple[int, bytes | None, bytes | None]]]:
    """The records of `sent` (which start at offset 0) from offset starts[p] on."""
    return {
        p: [(o, k, v) for o, (k, v) in enumerate(sent[p]) if o >= starts[p]]
        for p in sent
        if len(sent[p]) > starts[p]
    }


# --------------------------------------------------------------------------------------------
# a. one consumer: read all, commit, close; the next run resumes at the commit
# --------------------------------------------------------------------------------------------


def test_subscribe_commit_close_then_resume(broker: BrokerProcess) -> None:
    bootstrap = broker.bootstrap
    topic, group = "kpg-resume", "kpg-resume-group"
    create_topic(bootstrap, topic, 2)
    sent = produce(bootstrap, topic, 2, 0, 40)
    tps = [TopicPartition(topic, p) for p in range(2)]

    # Run 1: everything from the beginning (no committed offsets yet -> auto.offset.reset).
    consumer = _consumer(bootstrap, group)
    try:
        consumer.subscribe([topic])
        got = _poll_exactly(consumer, 80)
        assert got == _expected(sent, {0: 0, 1: 0})
        assert consumer.assignment() == set(tps)
        consumer.commit(timeout_ms=REQUEST_TIMEOUT_MS)
        assert [consumer.committed(tp, timeout_ms=REQUEST_TIMEOUT_MS) for tp in tps] == [40, 40]
    finally:
        consumer.close(autocommit=False, timeout_ms=10_000)

    more = produce(bootstrap, topic, 2, 40, 10)
    for p in range(2):
        sent[p].extend(more[p])

    # Run 2: exactly the 20 new records, starting at the commit; then commit a rewind.
    consumer = _consumer(bootstrap, group)
    try:
        consumer.subscribe([topic])
        got = _poll_exactly(consumer, 20)
        assert got == _expected(sent, {0: 40, 1: 40})
        consumer.commit(
            offsets={
                tps[0]: OffsetAndMetadata(7, "rewind \u00e9 0", -1),
                tps[1]: OffsetAndMetadata(13, "", -1),
            },
            timeout_ms=REQUEST_TIMEOUT_MS,
        )
    finally:
        consumer.close(autocommit=False, timeout_ms=10_000)

    admin = admin_client(bootstrap)
    try:
        assert committed_offsets(admin, group) == {
            (topic, 0): (7, "rewind \u00e9 0"),
            (topic, 1): (13, ""),
        }
    finally:
        admin.close()

    # Run 3: starts exactly at the rewound commits and reads to the end.
    consumer = _consumer(bootstrap, group)
    try:
        consumer.subscribe([topic])
        got = _poll_exactly(consumer, (50 - 7) + (50 - 13))
        assert got == _expected(sent, {0: 7, 1: 13})
    finally:
        consumer.close(autocommit=False, timeout_ms=10_000)


# --------------------------------------------------------------------------------------------
# b. three member processes over six partitions; kill -9 one of them
# --------------------------------------------------------------------------------------------


class _OffsetWatch:
    """Polls the group's committed offsets; asserts none ever goes backwards."""

    def __init__(self, bootstrap: str, group: str, topic: str) -> None:
        self.admin = admin_client(bootstrap)
        self.group = group
        self.topic = topic
        self.last: dict[int, int] = {}
        self.polls = 0

    def poll(self) -> dict[int, int]:
        now = {
            p: off
            for (t, p), (off, _meta) in committed_offsets(self.admin, self.group).items()
            if t == self.topic
        }
        self.polls += 1
        for p, off in self.last.items():
            assert now.get(p, -1) >= off, (
                f"committed offset of partition {p} went back: {self.last} -> {now}"
            )
        self.last = now
        return now

    def close(self) -> None:
        self.admin.close()


def _check_generations(
    workers: list[GroupWorker], sent: dict[int, list[tuple[bytes | None, bytes]]]
) -> None:
    """Exclusive ownership, no duplicate within a generation, every record delivered intact."""
    owners: dict[int, dict[int, str]] = {}  # gen -> partition -> worker
    for w in workers:
        for a in w.snapshot("assigned"):
            for p in a["partitions"]:
                other = owners.setdefault(a["gen"], {}).get(p)
                assert other is None, (
                    f"generation {a['gen']}: partition {p} held by {other} and {w.name}"
                )
                owners[a["gen"]][p] = w.name
    delivered: dict[int, Counter[tuple[int, int]]] = {}
    seen: set[tuple[int, int]] = set()
    for w in workers:
        for e in w.snapshot("records"):
            gen = e["gen"]
            for p, offset, key_hex, value_hex in e["records"]:
                assert owners.get(gen, {}).get(p) == w.name, (
                    f"{w.name} got partition {p} offset {offset} in generation {gen}, "
                    f"owned by {owners.get(gen, {}).get(p)}"
                )
                key = None if key_hex is None else bytes.fromhex(key_hex)
                value = None if value_hex is None else bytes.fromhex(value_hex)
                assert (key, value) == sent[p][offset], (p, offset)
                delivered.setdefault(gen, Counter())[(p, offset)] += 1
                seen.add((p, offset))
    for gen, counts in delivered.items():
        twice = [k for k, c in counts.items() if c > 1]
        assert not twice, f"generation {gen}: delivered more than once: {twice[:10]}"
    missing = {(p, o) for p in sent for o in range(len(sent[p]))} - seen
    assert not missing, f"never delivered: {sorted(missing)[:20]} ({len(missing)} records)"


def _three_workers(
    bootstrap: str, topic: str, group: str, log_dir: Path, client: str
) -> list[GroupWorker]:
    """Three member processes m0..m2 of `client` in `group`."""
    return [
        GroupWorker(
            bootstrap=bootstrap,
            topic=topic,
            group=group,
            name=f"m{i}",
            log_dir=log_dir,
            client=client,
            session_timeout_ms=SESSION_TIMEOUT_MS,
            heartbeat_interval_ms=500,
            max_poll_records=7,
        )
        for i in range(3)
    ]


def _assert_stable_with(bootstrap: str, group: str, members: list[str]) -> None:
    """DescribeGroups: `group` is Stable with exactly `members`."""
    admin = admin_client(bootstrap)
    try:
        described = admin.describe_groups([group])[group]
    finally:
        admin.close()
    assert described["group_state"] == "Stable", described
    assert sorted(m["member_id"] for m in described["members"]) == sorted(members)


@pytest.mark.slow
@pytest.mark.parametrize("client", ["kafka-python", "confluent-kafka"])
def test_three_member_processes_then_kill9_one(
    broker: BrokerProcess, tmp_path: Path, client: str
) -> None:
    """Three member processes of one client library; kill -9 one of them."""
    bootstrap = broker.bootstrap
    topic, group = "kpg-three", "kpg-three-group"
    partitions = list(range(6))
    create_topic(bootstrap, topic, 6)
    sent = produce(bootstrap, topic, 6, 0, 30)

    workers = _three_workers(bootstrap, topic, group, tmp_path, client)
    watch = _OffsetWatch(bootstrap, group, topic)

    def status() -> str:
        return f"committed {watch.last}\n" + "\n".join(w.describe() for w in workers)

    def one_generation(members: list[GroupWorker]) -> list[dict[str, Any]] | None:
        watch.poll()
        for w in workers:
            assert not w.errors(), w.describe()
        last = [w.last_assignment() for w in members]
        if any(a is None for a in last):
            return None
        assigned = [a for a in last if a is not None]
        if len({a["gen"] for a in assigned}) != 1:
            return None
        if sorted(p for a in assigned for p in a["partitions"]) != partitions:
            return None
        return assigned

    def all_committed(n: int) -> bool:
        return watch.poll() == dict.fromkeys(partitions, n)

    try:
        stable = wait_until(lambda: one_generation(workers), 45, status)
        assert sorted(len(a["partitions"]) for a in stable) == [2, 2, 2]
        wait_until(lambda: all_committed(30), 30, status)
        before = dict(watch.last)

        victim, survivors = workers[1], [workers[0], workers[2]]
        victim_gen = stable[1]["gen"]
        t_kill = victim.kill9()
        after = wait_until(
            lambda: (a := one_generation(survivors)) and a[0]["gen"] > victim_gen and a,
            SESSION_TIMEOUT_MS / 1000 + 15,
            status,
        )
        moved_after = max(a["t"] for a in after) - t_kill
        assert moved_after <= SESSION_TIMEOUT_MS / 1000 + 2, (
            f"partitions of the killed member moved after {moved_after:.2f} s"
        )
        assert sorted(len(a["partitions"]) for a in after) == [3, 3]
        assert all(off >= before[p] for p, off in watch.poll().items())

        # The group now has exactly the two survivors.
        _assert_stable_with(bootstrap, group, [a["member"] for a in after])

        # New records on every partition (the moved ones included) reach the survivors.
        more = produce(bootstrap, topic, 6, 30, 20)
        for p in partitions:
            sent[p].extend(more[p])
        wait_until(lambda: all_committed(50), 30, status)
        for w in survivors:
            assert w.stop() == 0, w.describe()
            assert w.snapshot("closed"), w.describe()
        _check_generations(workers, sent)
        assert watch.poll() == dict.fromkeys(partitions, 50)
        assert watch.polls > 10
    finally:
        watch.close()
        for w in workers:
            w.close()


# --------------------------------------------------------------------------------------------
# c. broker kill -9: offsets and group metadata recovered
# --------------------------------------------------------------------------------------------


def _describe(admin: Any, group: str) -> dict[str, Any]:
    result: dict[str, Any] = admin.describe_groups([group])[group]
    return result


def _member_partitions(member: dict[str, Any]) -> list[tuple[str, int]]:
    assignment = member["member_assignment"]
    if isinstance(assignment, dict):
        topics = assignment["assigned_partitions"]
        return sorted((t["topic"], p) for t in topics for p in t["partitions"])
    return sorted((tp.topic, tp.partition) for tp in assignment.partitions())


def _check_replayed(
    admin: Any,
    topic: str,
    groups: tuple[str, str],
    before: dict[str, Any],
    assignment: dict[str, Any],
) -> None:
    """After the broker's restart: both groups' offsets and metadata as before the crash."""
    empty_group, live_group = groups
    # Offsets replayed, metadata included.
    assert committed_offsets(admin, empty_group) == {
        (topic, p): (10 + p, f"m{p}") for p in range(3)
    }
    assert {k: off for k, (off, _m) in committed_offsets(admin, live_group).items()} == {
        (topic, p): 30 for p in range(3)
    }

    # Group metadata replayed: Empty stays Empty; the live group comes back Stable with
    # its member and assignment (Kafka restores members and restarts their sessions).
    empty = _describe(admin, empty_group)
    assert (empty["group_state"], empty["protocol_type"], empty["members"]) == (
        "Empty",
        "consumer",
        [],
    ), empty
    live = _describe(admin, live_group)
    assert live["group_state"] == "Stable", live
    assert live["protocol_type"] == "consumer"
    assert live["protocol_data"] == before["protocol_data"] == "range"
    assert [m["member_id"] for m in live["members"]] == [assignment["member"]]
    assert live["members"][0]["client_id"] == "wb-live"
    assert _member_partitions(live["members"][0]) == [(topic, p) for p in range(3)]


def _check_resumed(
    bootstrap: str, topic: str, sent: dict[int, list[Any]], empty_group: str, live_group: str
) -> None:
    """Consumers of both groups resume exactly at the recovered commits."""
    for group, starts in (
        (empty_group, {0: 10, 1: 11, 2: 12}),
        (live_group, dict.fromkeys(range(3), 30)),
    ):
        consumer = _consumer(bootstrap, group)
        try:
            consumer.subscribe([topic])
            expected = _expected(sent, starts)
            got = _poll_exactly(consumer, sum(len(v) for v in expected.values()))
            assert got == expected, group
        finally:
            consumer.close(autocommit=False, timeout_ms=10_000)


@pytest.mark.slow
def test_broker_kill9_recovers_offsets_and_groups(broker: BrokerProcess, tmp_path: Path) -> None:
    bootstrap = broker.bootstrap
    topic = "kpg-crash"
    empty_group, live_group = "kpg-crash-empty", "kpg-crash-live"
    create_topic(bootstrap, topic, 3)
    sent = produce(bootstrap, topic, 3, 0, 30)
    tps = [TopicPartition(topic, p) for p in range(3)]

    # An Empty group with offsets: read all, commit mid offsets with metadata, leave.
    consumer = _consumer(bootstrap, empty_group)
    try:
        consumer.subscribe([topic])
        assert _poll_exactly(consumer, 90) == _expected(sent, dict.fromkeys(range(3), 0))
        consumer.commit(
            offsets={
                tp: OffsetAndMetadata(10 + tp.partition, f"m{tp.partition}", -1) for tp in tps
            },
            timeout_ms=REQUEST_TIMEOUT_MS,
        )
    finally:
        consumer.close(autocommit=False, timeout_ms=10_000)

    # A Stable group whose only member (a process) dies together with the broker.
    worker = GroupWorker(
        bootstrap=bootstrap, topic=topic, group=live_group, name="live", log_dir=tmp_path
    )
    admin = admin_client(bootstrap)
    try:
        wait_until(
            lambda: (
                {p: o for (_t, p), (o, _m) in committed_offsets(admin, live_group).items()}
                == {0: 30, 1: 30, 2: 30}
            ),
            30,
            worker.describe,
        )
        assignment = worker.last_assignment()
        assert assignment is not None and assignment["partitions"] == [0, 1, 2]
        before = _describe(admin, live_group)
        assert before["group_state"] == "Stable", before
    finally:
        admin.close()

    worker.kill9()
    broker.kill9()
    worker.close()
    bootstrap = broker.restart()

    admin = admin_client(bootstrap)
    try:
        _check_replayed(admin, topic, (empty_group, live_group), before, assignment)

        # Nobody heartbeats for that member: it expires after its session timeout.
        t0 = time.monotonic()
        wait_until(
            lambda: _describe(admin, live_group)["group_state"] == "Empty",
            SESSION_TIMEOUT_MS / 1000 + 10,
            lambda: f"live group still {_describe(admin, live_group)}",
        )
        assert time.monotonic() - t0 <= SESSION_TIMEOUT_MS / 1000 + 4
        assert _describe(admin, live_group)["members"] == []
    finally:
        admin.close()

    more = produce(bootstrap, topic, 3, 30, 5)
    for p in range(3):
        sent[p].extend(more[p])

    _check_resumed(bootstrap, topic, sent, empty_group, live_group)


# --------------------------------------------------------------------------------------------
# d. admin: list, describe, delete groups; list and delete group offsets
# --------------------------------------------------------------------------------------------


def _check_listed(admin: Any, active: str, empty: str, simple: str) -> None:
    """ListGroups: the three groups, their protocol types and states; the Stable filter."""
    listed = {g["group_id"]: g for g in admin.list_groups()}
    assert {active, empty, simple} <= set(listed), listed
    assert (listed[active]["protocol_type"], listed[active]["group_state"]) == (
        "consumer",
        "Stable",
    )
    assert (listed[empty]["protocol_type"], listed[empty]["group_state"]) == (
        "consumer",
        "Empty",
    )
    assert (listed[simple]["protocol_type"], listed[simple]["group_state"]) == ("", "Empty")
    assert {listed[g].get("group_type", "classic") for g in (active, empty, simple)} == {"classic"}
    assert [g["group_id"] for g in admin.list_groups(states_filter=["Stable"])] == [active]


def _check_described(admin: Any, topic: str, active: str, empty: str, simple: str) -> None:
    """DescribeGroups: the active group's member and assignment, the two Empty ones."""
    described = admin.describe_groups([active, empty, simple])
    a = described[active]
    assert (a["error"], a["group_state"], a["protocol_type"], a["protocol_data"]) == (
        None,
        "Stable",
        "consumer",
        "range",
    ), a
    assert len(a["members"]) == 1
    m = a["members"][0]
    assert m["client_id"] == "kp-active-member"
    assert m["member_id"].startswith("kp-active-member-"), m["member_id"]
    assert m["client_host"]
    assert _member_partitions(m) == [(topic, 0), (topic, 1)]
    for g in (empty, simple):
        assert described[g]["error"] is None, described[g]
        assert described[g]["group_state"] == "Empty", described[g]
        assert described[g]["members"] == [], described[g]
    assert described[simple]["protocol_type"] == ""


def _check_offsets(admin: Any, tps: list[Any], active: str, empty: str, simple: str) -> None:
    """OffsetFetch through the admin: each group's committed offsets and metadata."""
    offsets = admin.list_group_offsets([active, empty, simple])
    assert {tp: (o.offset, o.metadata) for tp, o in offsets[active].items()} == {
        tps[0]: (10, "a0"),
        tps[1]: (5, "a1"),
    }
    assert {tp: o.offset for tp, o in offsets[empty].items()} == {tps[0]: 10, tps[1]: 10}
    assert {tp: (o.offset, o.metadata) for tp, o in offsets[simple].items()} == {
        tps[0]: (3, "s"),
        tps[1]: (4, ""),
    }


def test_admin_list_describe_delete_groups(broker: BrokerProcess) -> None:
    bootstrap = broker.bootstrap
    topic = "kpg-admin"
    active, empty, simple = "kpg-admin-active", "kpg-admin-empty", "kpg-admin-simple"
    create_topic(bootstrap, topic, 2)
    sent = produce(bootstrap, topic, 2, 0, 10)
    tps = [TopicPartition(topic, p) for p in range(2)]

    # "empty": joined, committed, left.
    consumer = _consumer(bootstrap, empty)
    try:
        consumer.subscribe([topic])
        assert _poll_exactly(consumer, 20) == _expected(sent, {0: 0, 1: 0})
        consumer.commit(timeout_ms=REQUEST_TIMEOUT_MS)
    finally:
        consumer.close(autocommit=False, timeout_ms=10_000)

    # "simple": assign() + commit: a group that only stores offsets (no protocol type).
    consumer = _consumer(bootstrap, simple)
    try:
        consumer.assign(tps)
        consumer.commit(
            offsets={tps[0]: OffsetAndMetadata(3, "s", -1), tps[1]: OffsetAndMetadata(4, "", -1)},
            timeout_ms=REQUEST_TIMEOUT_MS,
        )
    finally:
        consumer.close(autocommit=False, timeout_ms=10_000)

    # "active": a member that stays in the group while the admin works.
    member = _consumer(bootstrap, active, client_id="kp-active-member")
    admin = admin_client(bootstrap)
    try:
        member.subscribe([topic])
        assert _poll_exactly(member, 20) == _expected(sent, {0: 0, 1: 0})
        member.commit(
            offsets={
                tps[0]: OffsetAndMetadata(10, "a0", -1),
                tps[1]: OffsetAndMetadata(5, "a1", -1),
            },
            timeout_ms=REQUEST_TIMEOUT_MS,
        )

        _check_listed(admin, active, empty, simple)
        _check_described(admin, topic, active, empty, simple)

        _check_offsets(admin, tps, active, empty, simple)

        # OffsetDelete: not for a topic the group is subscribed to; fine for an Empty group.
        assert admin.delete_group_offsets(active, [tps[0]]) == {tps[0]: GroupSubscribedToTopicError}
        assert admin.delete_group_offsets(empty, [tps[0]]) == {tps[0]: NoError}
        remaining = admin.list_group_offsets(empty)[empty]
        assert {tp: o.offset for tp, o in remaining.items()} == {tps[1]: 10}

        # DeleteGroups: a group with a member is refused; the others go.
        results = admin.delete_groups([active, empty, simple])
        assert results == {
            active: "NonEmptyGroupError",
            empty: "OK",
            simple: "OK",
        }, results
        assert admin.delete_groups([empty]) == {empty: "GroupIdNotFoundError"}
        listed_after = {g["group_id"] for g in admin.list_groups()}
        assert active in listed_after and not {empty, simple} & listed_after
        assert admin.list_group_offsets(simple)[simple] == {}
    finally:
        member.close(autocommit=False, timeout_ms=10_000)

    try:
        # The member left: the group is Empty and can be deleted, offsets and all.
        wait_until(
            lambda: _describe(admin, active)["group_state"] == "Empty", 10, "active group not Empty"
        )
        assert admin.delete_groups([active]) == {active: "OK"}
        assert admin.list_group_offsets(active)[active] == {}
        assert active not in {g["group_id"] for g in admin.list_groups()}
    finally:
        admin.close()

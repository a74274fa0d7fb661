"""A ZooKeeper-coordinated cluster of three real `Broker`s in one trio run, over the in-memory
ZooKeeper (`_memory_cluster.py`): the whole cluster runtime (registration, controller, topic
admin, state watches, roles, fetchers over real sockets, ISR writes, controlled shutdown)
driven through the Kafka protocol, with faults injected through the ZooKeeper server (session
expiry) or the brokers' objects (a follower's fetcher, a broker's serve scope).

Each test starts its own cluster (about 0.1 s) and stops it broker by broker. Known limits
the tests work around: a broker that is also the controller keeps its leaderships when its
session expires and it registers again before a successor is elected (the successor does not
know that it bounced, as in Kafka), so failover cases pick a victim that is not the controller.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import trio
from _memory_cluster import (
    CLUSTER_ID,
    LAG_MS,
    OFFSETS_PARTITIONS,
    Cluster,
    committed_bytes,
    eventually,
    leader_of,
    start_cluster,
    wait_roles,
)

from protocol.api import ApiKey
from protocol.errors import ErrorCode
from wirebroker.cluster import zk_layout as zl
from wirebroker.coordination.api import SetData, TransactionError
from wirebroker.group.runtime import OFFSETS_TOPIC
from wirebroker.replication.partition import Role

TOPIC = "t"
RESOURCE_TOPIC = 2


@pytest.fixture
async def cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Cluster]:
    async with trio.open_nursery() as nursery:
        c = await start_cluster(nursery, tmp_path, monkeypatch=monkeypatch)
        yield c
        await c.stop_all()
        nursery.cancel_scope.cancel()


# -- helpers ------------------------------------------------------------------------------------


async def isr_of(cluster: Cluster, topic: str, index: int) -> list[int]:
    state, _version = await cluster.state(topic, index)
    return sorted(state.isr)


def values(records: list[tuple[int, bytes]]) -> list[bytes]:
    return [v for _o, v in records]


# -- 1. topic creation and metadata ----------------------------------------------------------


async def test_created_topic_has_the_same_metadata_on_every_broker(cluster: Cluster) -> None:
    assert await cluster.create_topic(1, TOPIC, 3, 3) == ErrorCode.NONE
    # CreateTopics answers once the answering broker's metadata shows every partition led
    md = await cluster.metadata(1, [TOPIC])
    assert all(p.leader_id >= 0 for p in md.topics[0].partitions)

    async def znode_view() -> list[tuple[int, int, int, list[int], list[int]]]:
        data = await cluster.zk_get(zl.topic_path(TOPIC))
        assignment = zl.decode_topic(TOPIC, data)
        out = []
        for i in range(3):
            state, _v = await cluster.state(TOPIC, i)
            out.append(
                (
                    i,
                    state.leader,
                    state.leader_epoch,
                    list(assignment.replicas(i)),
                    sorted(state.isr),
                )
            )
        return out

    def view(md: Any) -> list[tuple[int, int, int, list[int], list[int]]]:
        (topic,) = md.topics
        assert topic.error_code == ErrorCode.NONE and topic.name == TOPIC
        return sorted(
            (
                p.partition_index,
                p.leader_id,
                p.leader_epoch,
                list(p.replica_nodes),
                sorted(p.isr_nodes),
            )
            for p in topic.partitions
        )

    expected = await znode_view()

    async def every_broker_agrees() -> bool:
        views = [view(await cluster.metadata(n, [TOPIC])) for n in range(3)]
        return all(v == expected for v in views)

    await eventually(every_broker_agrees, "every broker's Metadata equals the state znodes")
    for _index, leader, epoch, replicas, isr in expected:
        assert sorted(replicas) == [0, 1, 2] and isr == [0, 1, 2]
        assert leader == replicas[0] and epoch == 0  # the preferred replica, first election
    assert Counter(leader for _i, leader, *_rest in expected) == {0: 1, 1: 1, 2: 1}
    await wait_roles(cluster, TOPIC, 3)

    controller, _epoch = await cluster.controller()
    assert controller in (0, 1, 2)
    for n in range(3):
        md = await cluster.metadata(n, [TOPIC])
        assert sorted(b.node_id for b in md.brokers) == [0, 1, 2]
        assert md.controller_id == controller and md.cluster_id == CLUSTER_ID
        desc = await cluster.request(n, ApiKey.DESCRIBE_CLUSTER, 0, {})
        assert desc.error_code == ErrorCode.NONE
        assert desc.controller_id == controller and desc.cluster_id == CLUSTER_ID
        ports = {b.broker_id: (b.host, b.port) for b in desc.brokers}
        assert ports == {node.node_id: node.address for node in cluster.nodes}


async def test_a_batch_of_topics_created_at_once_is_led_on_every_broker(
    cluster: Cluster,
) -> None:
    """One CreateTopics of many topics (and concurrent one-topic requests): every topic is
    created, the answering broker already shows every partition led, and every broker ends
    up leading or following each of its replicas, with the topics in its store."""
    names = [f"batch-{i:02d}" for i in range(24)]
    body = {
        "topics": [
            {
                "name": name,
                "num_partitions": 2,
                "replication_factor": 3,
                "assignments": [],
                "configs": [{"name": "retention.ms", "value": "3600000"}] if i % 2 else [],
            }
            for i, name in enumerate(names)
        ],
        "timeout_ms": 15_000,
        "validate_only": False,
    }
    resp = await cluster.request(2, ApiKey.CREATE_TOPICS, 5, body)
    assert [(t.name, t.error_code) for t in resp.topics] == [(n, 0) for n in names]
    md = await cluster.metadata(2, names)
    assert all(p.leader_id >= 0 for t in md.topics for p in t.partitions)

    singles = [f"single-{i:02d}" for i in range(8)]
    codes: dict[str, int] = {}

    async def create_one(name: str) -> None:
        codes[name] = await cluster.create_topic(1, name, 2, 3)

    async with trio.open_nursery() as nursery:
        for name in singles:
            nursery.start_soon(create_one, name)
    assert codes == dict.fromkeys(singles, ErrorCode.NONE)

    everything = names + singles

    async def every_broker_shows_all() -> bool:
        for n in range(3):
            md = await cluster.metadata(n, everything)
            for t in md.topics:
                if t.error_code or len(t.partitions) != 2:
                    return False
                if any(p.leader_id < 0 or sorted(p.isr_nodes) != [0, 1, 2] for p in t.partitions):
                    return False
        return True

    await eventually(every_broker_shows_all, "every broker's Metadata shows every topic led")
    for name in everything:
        await wait_roles(cluster, name, 2)
    for node in cluster.nodes:
        store = node.broker.topics
        for i, name in enumerate(names):
            info = store.get(name)
            assert info is not None and len(info.assignment) == 2
            assert dict(info.configs) == ({"retention.ms": "3600000"} if i % 2 else {})
            for index in range(2):
                assert node.part(name, index).log.config.retention_ms == (
                    3_600_000 if i % 2 else 7 * 24 * 3_600_000
                )


# -- 2. acks=-1, byte-identical replicas, reads below the HW ----------------------------------


async def test_acks_all_replicates_byte_for_byte_and_consumers_stop_at_the_hw(
    cluster: Cluster,
) -> None:
    assert await cluster.create_topic(0, TOPIC, 1, 3, configs={"min.insync.replicas": "2"}) == 0
    await wait_roles(cluster, TOPIC, 1)
    leader = await leader_of(cluster, TOPIC, 0)
    followers = [n for n in range(3) if n != leader]
    acked: list[bytes] = []
    for i in range(20):
        batch = [b"v%d-%d" % (i, j) for j in range(3)]
        assert await cluster.produce(leader, TOPIC, 0, batch) == (ErrorCode.NONE, 3 * i)
        acked.extend(batch)
    lead = cluster.nodes[leader].part(TOPIC, 0)
    assert lead.high_watermark == 60
    # acknowledged with acks=-1: every ISR member has the records already
    for f in followers:
        assert cluster.nodes[f].part(TOPIC, 0).log_end_offset == 60
    await eventually(
        lambda: all(cluster.nodes[f].part(TOPIC, 0).high_watermark == 60 for f in followers),
        "followers' HW",
    )
    for f in followers:
        assert committed_bytes(cluster.nodes[f].part(TOPIC, 0)) == committed_bytes(lead)
    assert values(await cluster.read_all(leader, TOPIC, 0)) == acked
    code, _hw, _data = await cluster.fetch(followers[0], TOPIC, 0, 0)
    assert code == ErrorCode.NOT_LEADER_OR_FOLLOWER

    # the followers stop fetching: an acks=1 record stays above the HW, invisible to consumers
    for f in followers:
        fetchers = cluster.nodes[f].broker.fetchers
        assert fetchers is not None
        fetchers.unfollow(TOPIC, 0)
    assert await cluster.produce(leader, TOPIC, 0, [b"pending"], acks=1) == (ErrorCode.NONE, 60)
    assert lead.log_end_offset == 61
    code, hw, data = await cluster.fetch(leader, TOPIC, 0, 0)
    assert (code, hw) == (ErrorCode.NONE, 60)
    assert b"pending" not in data
    assert await cluster.fetch(leader, TOPIC, 0, 60) == (ErrorCode.NONE, 60, b"")
    assert values(await cluster.read_all(leader, TOPIC, 0)) == acked

    # fetching again: the HW moves and the record becomes readable, on every replica
    for f in followers:
        part = cluster.nodes[f].part(TOPIC, 0)
        fetchers = cluster.nodes[f].broker.fetchers
        assert fetchers is not None
        fetchers.follow(TOPIC, 0, part.leader_id, part.leader_epoch)
    await eventually(lambda: lead.high_watermark == 61, "HW after the followers resume")
    assert values(await cluster.read_all(leader, TOPIC, 0)) == [*acked, b"pending"]
    await eventually(
        lambda: all(cluster.nodes[f].part(TOPIC, 0).high_watermark == 61 for f in followers),
        "followers' HW",
    )
    for f in followers:
        assert committed_bytes(cluster.nodes[f].part(TOPIC, 0)) == committed_bytes(lead)


# -- 3. failover on the leader's session expiry -----------------------------------------------


async def test_leader_session_expiry_moves_leadership_and_the_old_leader_rejoins(
    cluster: Cluster,
) -> None:
    controller, _epoch = await cluster.controller()
    old = next(n for n in range(3) if n != controller)  # the leader; not the controller
    others = [n for n in range(3) if n != old]
    assignment = {0: [old, *others]}
    code = await cluster.create_topic(
        controller, TOPIC, 1, assignment=assignment, configs={"min.insync.replicas": "2"}
    )
    assert code == ErrorCode.NONE
    await wait_roles(cluster, TOPIC, 1)
    acked = []
    for i in range(5):
        assert (await cluster.produce(old, TOPIC, 0, [b"a%d" % i]))[0] == ErrorCode.NONE
        acked.append(b"a%d" % i)
    before, _version = await cluster.state(TOPIC, 0)
    assert before.leader == old
    old_epoch = cluster.nodes[old].broker_epoch
    registration = await cluster.zk_get(zl.broker_path(old))
    assert registration is not None

    # ZooKeeper expires the leader's session. Its registration is taken over at once by
    # another session (as when a previous session of the same broker id has not expired
    # yet), so the broker cannot register again until that one goes: a long window in which
    # it has lost its session but hears of no new leader.
    cluster.expire(old)
    await cluster.observer.create(zl.broker_path(old), registration, ephemeral=True)
    part = cluster.nodes[old].part(TOPIC, 0)

    async def moved() -> bool:
        state, _v = await cluster.state(TOPIC, 0)
        return state.leader not in (old, -1)

    await eventually(moved, "leadership moves off the expired broker")
    after, _v = await cluster.state(TOPIC, 0)
    assert after.leader in before.isr and after.leader_epoch > before.leader_epoch
    assert old not in after.isr
    new = after.leader
    # the old leader gave its leadership up: no zombie writes, not even acks=1
    await eventually(lambda: part.role is not Role.LEADER, "the old leader resigns")
    assert cluster.nodes[old].broker_epoch == old_epoch  # not registered again yet
    code, _ = await cluster.produce(old, TOPIC, 0, [b"zombie"], acks=1)
    assert code in (
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.FENCED_LEADER_EPOCH,
        ErrorCode.UNKNOWN_LEADER_EPOCH,
    ), ErrorCode(code).name
    # the new leader takes acks=-1 writes (ISR: the two others, min.insync.replicas=2)
    for i in range(3):
        code, _ = await cluster.produce(new, TOPIC, 0, [b"b%d" % i])
        assert code == ErrorCode.NONE
        acked.append(b"b%d" % i)
    assert values(await cluster.read_all(new, TOPIC, 0)) == acked

    # the stale registration goes: the broker registers with a new epoch and follows
    await cluster.observer.delete(zl.broker_path(old))
    await eventually(
        lambda: cluster.nodes[old].broker_epoch != old_epoch, "the old leader registers again"
    )
    # the old broker is registered again with a new epoch, and follows the new leader
    stat = await cluster.observer.exists(zl.broker_path(old))
    assert stat is not None and stat.czxid == cluster.nodes[old].broker_epoch > old_epoch

    async def rejoined() -> bool:
        return old in await isr_of(cluster, TOPIC, 0)

    await eventually(rejoined, "the old leader rejoins the ISR")
    await wait_roles(cluster, TOPIC, 1)
    part = cluster.nodes[old].part(TOPIC, 0)
    assert part.role is Role.FOLLOWER and part.leader_id == new
    lead = cluster.nodes[new].part(TOPIC, 0)
    await eventually(lambda: part.high_watermark == lead.high_watermark, "old leader's HW")
    assert committed_bytes(part) == committed_bytes(lead)


# -- 4. a stopped follower leaves the ISR, and comes back ------------------------------------


async def test_stopped_follower_leaves_the_isr_and_rejoins(cluster: Cluster) -> None:
    assert await cluster.create_topic(0, TOPIC, 1, 3, configs={"min.insync.replicas": "3"}) == 0
    await wait_roles(cluster, TOPIC, 1)
    leader = await leader_of(cluster, TOPIC, 0)
    follower = (leader + 1) % 3
    assert await cluster.produce(leader, TOPIC, 0, [b"a"]) == (ErrorCode.NONE, 0)

    fetchers = cluster.nodes[follower].broker.fetchers
    assert fetchers is not None
    fetchers.unfollow(TOPIC, 0)
    stopped_at = trio.current_time()
    # it falls behind (a stopped follower at the leader's log end stays in sync, as in Kafka)
    assert await cluster.produce(leader, TOPIC, 0, [b"b"], acks=1) == (ErrorCode.NONE, 1)

    async def dropped() -> bool:
        return follower not in await isr_of(cluster, TOPIC, 0)

    await eventually(dropped, "the stopped follower leaves the ISR")
    took = trio.current_time() - stopped_at
    # out of sync only after replica.lag.time.max.ms; checked every lag/2
    assert LAG_MS / 1000 - 0.2 < took < 3 * LAG_MS / 1000, took
    lead = cluster.nodes[leader].part(TOPIC, 0)
    assert follower not in lead.isr
    code, _ = await cluster.produce(leader, TOPIC, 0, [b"refused"])
    assert code == ErrorCode.NOT_ENOUGH_REPLICAS
    assert (await cluster.produce(leader, TOPIC, 0, [b"c"], acks=1))[0] == ErrorCode.NONE

    part = cluster.nodes[follower].part(TOPIC, 0)
    fetchers.follow(TOPIC, 0, part.leader_id, part.leader_epoch)

    async def back() -> bool:
        return await isr_of(cluster, TOPIC, 0) == [0, 1, 2]

    await eventually(back, "the follower rejoins the ISR")
    assert sorted(lead.isr) == [0, 1, 2]
    assert (await cluster.produce(leader, TOPIC, 0, [b"d"]))[0] == ErrorCode.NONE
    assert values(await cluster.read_all(leader, TOPIC, 0)) == [b"a", b"b", b"c", b"d"]
    await eventually(lambda: part.high_watermark == 4, "follower's HW")
    assert committed_bytes(part) == committed_bytes(lead)


# -- 5. controlled shutdown -------------------------------------------------------------------


@pytest.mark.parametrize("victim_is_controller", [True, False], ids=["controller", "other"])
async def test_controlled_shutdown_moves_leaderships_before_the_logs_close(
    cluster: Cluster, victim_is_controller: bool
) -> None:
    assert await cluster.create_topic(0, TOPIC, 3, 3, configs={"min.insync.replicas": "2"}) == 0
    await wait_roles(cluster, TOPIC, 3)
    controller, _epoch = await cluster.controller()
    victim = controller if victim_is_controller else (controller + 1) % 3
    acked: dict[int, list[bytes]] = {i: [] for i in range(3)}
    for i in range(3):
        for j in range(3):
            value = b"%d-%d" % (i, j)
            code, _ = await cluster.produce(await leader_of(cluster, TOPIC, i), TOPIC, i, [value])
            assert code == ErrorCode.NONE
            acked[i].append(value)
    led = [i for i in range(3) if await leader_of(cluster, TOPIC, i) == victim]
    assert led, "the victim leads a partition"

    node = cluster.nodes[victim]
    at_close: dict[str, Any] = {}
    close = node.broker.logs.close

    def close_logs() -> None:
        at_close["roles"] = {p.index: p.role for p in node.broker.replicas.partitions_of(TOPIC)}
        states = [cluster.peek_state(TOPIC, i) for i in range(3)]
        at_close["leaders"] = {i: st.leader for i, st in enumerate(states)}
        at_close["isrs"] = {i: st.isr for i, st in enumerate(states)}
        close()

    node.broker.logs.close = close_logs  # type: ignore[method-assign]
    started = trio.current_time()
    await node.stop()
    took = trio.current_time() - started
    assert took < 3.0, f"controlled shutdown took {took:.1f} s"
    # when its logs closed the broker led nothing, ZooKeeper named other leaders, and it was
    # in no ISR (it stopped fetching once removed, so no leader took it back meanwhile)
    assert Role.LEADER not in at_close["roles"].values(), at_close
    assert victim not in at_close["leaders"].values(), at_close
    assert all(victim not in isr for isr in at_close["isrs"].values()), at_close
    for i in led:
        assert at_close["leaders"][i] in (0, 1, 2)

    # the two others serve every partition with acks=-1 (ISR: the two of them)
    for i in range(3):

        async def isr_without_victim(i: int = i) -> bool:
            return victim not in await isr_of(cluster, TOPIC, i)

        await eventually(isr_without_victim, "ISR without the stopped broker")
        leader = await leader_of(cluster, TOPIC, i)
        assert leader != victim
        code, _ = await cluster.produce(leader, TOPIC, i, [b"after"])
        assert code == ErrorCode.NONE
        acked[i].append(b"after")
        assert values(await cluster.read_all(leader, TOPIC, i)) == acked[i]
    new_controller, _ = await cluster.controller()
    assert new_controller not in (-1, victim)


# -- 6. controller fencing --------------------------------------------------------------------


async def test_expired_controller_is_fenced_by_the_controller_epoch(cluster: Cluster) -> None:
    assert await cluster.create_topic(0, TOPIC, 3, 3) == ErrorCode.NONE  # one led by each
    await wait_roles(cluster, TOPIC, 3)
    controller, epoch = await cluster.controller()
    old = cluster.controllers[-1]
    assert (old.member.node_id, old.epoch) == (controller, epoch)

    cluster.expire(controller)

    async def replaced() -> bool:
        now, now_epoch = await cluster.controller()
        return now >= 0 and now_epoch > epoch

    await eventually(replaced, "a new controller")
    new, new_epoch = await cluster.controller()
    assert new_epoch == epoch + 1
    current = cluster.controllers[-1]
    assert current is not old and (current.member.node_id, current.epoch) == (new, new_epoch)
    await eventually(
        lambda: [n.node_id for n in cluster.nodes if n.broker.member.is_controller] == [new],  # type: ignore[union-attr]
        "exactly one broker runs the controller",
    )

    # the old controller object can never write again: its epoch check fails (op 0)
    data, stat = await cluster.observer.get(zl.state_path(TOPIC, 0))
    with pytest.raises(Exception) as failed:  # the controller's resignation
        await old._write_all([SetData(zl.state_path(TOPIC, 0), data, stat.version)])
    refused = failed.value.__cause__
    assert isinstance(refused, TransactionError) and refused.index == 0
    _data, after = await cluster.observer.get(zl.state_path(TOPIC, 0))
    assert after.version == stat.version

    # every partition is served again, the old controller's included (its successor may not
    # know that it bounced, as in Kafka: then it leads again at the same epoch)
    for i in range(3):

        async def writable(i: int = i) -> bool:
            code, _ = await cluster.produce(await leader_of(cluster, TOPIC, i), TOPIC, i, [b"x"])
            return code == ErrorCode.NONE

        await eventually(writable, f"{TOPIC}-{i} takes acks=-1 writes")
    await wait_roles(cluster, TOPIC, 3)

    # the new controller works: a new topic gets leaders written at the new epoch
    assert await cluster.create_topic(new, "t2", 2, 3) == ErrorCode.NONE
    for i in range(2):
        state, _v = await cluster.state("t2", i)
        assert state.leader >= 0 and state.controller_epoch == new_epoch


# -- 7. admin requests through any broker reach every broker ----------------------------------


async def test_preferred_election_configs_growth_and_deletion(cluster: Cluster) -> None:
    assert await cluster.create_topic(0, TOPIC, 3, 3, configs={"min.insync.replicas": "2"}) == 0
    await wait_roles(cluster, TOPIC, 3)
    assignment = zl.decode_topic(TOPIC, await cluster.zk_get(zl.topic_path(TOPIC)))
    # a partition whose preferred replica is not the controller: a bounced controller keeps
    # its leaderships (its successor does not know it bounced, as in Kafka)
    controller, _epoch = await cluster.controller()
    index = next(i for i in range(3) if assignment.replicas(i)[0] != controller)
    other = next(i for i in range(3) if i != index)
    preferred = assignment.replicas(index)[0]
    before, _v = await cluster.state(TOPIC, index)
    assert before.leader == preferred

    # the preferred leader's session expires: leadership moves, it comes back as a follower
    cluster.expire(preferred)

    async def moved_and_back() -> bool:
        state, _v = await cluster.state(TOPIC, index)
        return state.leader not in (preferred, -1) and preferred in state.isr

    await eventually(moved_and_back, "leadership moved and the preferred replica in the ISR")
    await wait_roles(cluster, TOPIC, 3)
    moved, _v = await cluster.state(TOPIC, index)

    asker = (preferred + 1) % 3
    body = {
        "election_type": 0,
        "topic_partitions": [{"topic": TOPIC, "partitions": [index, other]}],
        "timeout_ms": 10_000,
    }
    resp = await cluster.request(asker, ApiKey.ELECT_LEADERS, 1, body)
    assert resp.error_code == ErrorCode.NONE
    (result,) = resp.replica_election_results
    results = {r.partition_id: r.error_code for r in result.partition_result}
    assert results == {index: ErrorCode.NONE, other: ErrorCode.ELECTION_NOT_NEEDED}
    after, _v = await cluster.state(TOPIC, index)
    assert after.leader == preferred and after.leader_epoch > moved.leader_epoch
    assert await cluster.zk_get(zl.PREFERRED_REPLICA_ELECTION) is None
    await wait_roles(cluster, TOPIC, 3)
    assert (await cluster.produce(preferred, TOPIC, index, [b"x"]))[0] == ErrorCode.NONE

    await _configs_reach_every_broker(cluster)
    await _growth_reaches_every_broker(cluster)
    await _deletion_reaches_every_broker(cluster)


async def _configs_reach_every_broker(cluster: Cluster) -> None:
    """AlterConfigs and IncrementalAlterConfigs through one broker reach every broker."""
    # AlterConfigs through one broker: every broker's partitions take min.insync.replicas=3
    body = {
        "resources": [
            {
                "resource_type": RESOURCE_TOPIC,
                "resource_name": TOPIC,
                "configs": [{"name": "min.insync.replicas", "value": "3"}],
            }
        ],
        "validate_only": False,
    }
    resp = await cluster.request(1, ApiKey.ALTER_CONFIGS, 1, body)
    assert resp.responses[0].error_code == ErrorCode.NONE

    def min_isr_everywhere(want: int) -> bool:
        return all(
            p.min_insync_replicas == want
            for node in cluster.nodes
            for p in node.broker.replicas.partitions_of(TOPIC)
        )

    await eventually(lambda: min_isr_everywhere(3), "min.insync.replicas=3 on every broker")
    config = zl.decode_topic_config(TOPIC, await cluster.zk_get(zl.topic_config_path(TOPIC)))
    assert config["min.insync.replicas"] == "3"
    # IncrementalAlterConfigs (SET) through another broker
    body = {
        "resources": [
            {
                "resource_type": RESOURCE_TOPIC,
                "resource_name": TOPIC,
                "configs": [{"name": "min.insync.replicas", "config_operation": 0, "value": "2"}],
            }
        ],
        "validate_only": False,
    }
    resp = await cluster.request(2, ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, body)
    assert resp.responses[0].error_code == ErrorCode.NONE
    await eventually(lambda: min_isr_everywhere(2), "min.insync.replicas=2 on every broker")
    config = zl.decode_topic_config(TOPIC, await cluster.zk_get(zl.topic_config_path(TOPIC)))
    assert config["min.insync.replicas"] == "2"


async def _growth_reaches_every_broker(cluster: Cluster) -> None:
    """CreatePartitions (3 -> 5) through one broker reaches every broker."""
    # CreatePartitions through one broker: replicas on every broker (RF 3 of 3)
    body = {
        "topics": [{"name": TOPIC, "count": 5, "assignments": None}],
        "timeout_ms": 10_000,
        "validate_only": False,
    }
    resp = await cluster.request(2, ApiKey.CREATE_PARTITIONS, 1, body)
    assert resp.results[0].error_code == ErrorCode.NONE
    grown = zl.decode_topic(TOPIC, await cluster.zk_get(zl.topic_path(TOPIC)))
    assert sorted(grown.partitions) == [0, 1, 2, 3, 4]
    assert all(sorted(grown.replicas(i)) == [0, 1, 2] for i in (3, 4))
    await wait_roles(cluster, TOPIC, 5)
    for node in cluster.nodes:
        assert [p.index for p in node.broker.replicas.partitions_of(TOPIC)] == [0, 1, 2, 3, 4]
        md = await cluster.metadata(node.node_id, [TOPIC])
        assert len(md.topics[0].partitions) == 5
    for i in (3, 4):
        code, _ = await cluster.produce(await leader_of(cluster, TOPIC, i), TOPIC, i, [b"new"])
        assert code == ErrorCode.NONE


async def _deletion_reaches_every_broker(cluster: Cluster) -> None:
    """DeleteTopics through one broker deletes the logs on every broker."""
    # DeleteTopics through one broker: the logs go on every broker
    dirs = [
        Path(node.broker.config.log_dirs[0]) / f"{TOPIC}-{i}"
        for node in cluster.nodes
        for i in range(5)
    ]
    assert all(d.is_dir() for d in dirs)
    resp = await cluster.request(
        0, ApiKey.DELETE_TOPICS, 4, {"topic_names": [TOPIC], "timeout_ms": 10_000}
    )
    assert resp.responses[0].error_code == ErrorCode.NONE

    def gone() -> bool:
        return not any(d.exists() for d in dirs) and all(
            node.broker.replicas.partitions_of(TOPIC) == [] for node in cluster.nodes
        )

    await eventually(gone, "the topic's logs deleted on every broker")
    assert await cluster.zk_get(zl.topic_path(TOPIC)) is None
    for n in range(3):
        md = await cluster.metadata(n, [TOPIC])
        assert md.topics[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


# -- 8. group coordinator failover ------------------------------------------------------------


async def find_coordinator(cluster: Cluster, node: int, group: str) -> int:
    """The coordinator broker FindCoordinator (v3) names, retried while not available."""
    found: list[int] = []

    async def ask() -> bool:
        resp = await cluster.request(
            node, ApiKey.FIND_COORDINATOR, 3, {"key": group, "key_type": 0}
        )
        if resp.error_code != ErrorCode.NONE:
            assert resp.error_code == ErrorCode.COORDINATOR_NOT_AVAILABLE, resp
            return False
        assert cluster.nodes[resp.node_id].address == (resp.host, resp.port)
        found.append(int(resp.node_id))
        return True

    await eventually(ask, f"a coordinator for {group}")
    return found[-1]


async def fetch_offsets(cluster: Cluster, node: int, group: str) -> tuple[int, dict[int, int]]:
    body = {"group_id": group, "topics": [{"name": TOPIC, "partition_indexes": [0, 1]}]}
    resp = await cluster.request(node, ApiKey.OFFSET_FETCH, 7, body)
    if resp.error_code != ErrorCode.NONE:
        return int(resp.error_code), {}
    return 0, {p.partition_index: p.committed_offset for p in resp.topics[0].partitions}


async def test_group_offsets_survive_a_coordinator_failover(cluster: Cluster) -> None:
    assert await cluster.create_topic(0, TOPIC, 2, 3) == ErrorCode.NONE
    await find_coordinator(cluster, 0, "probe")  # creates __consumer_offsets
    await wait_roles(cluster, OFFSETS_TOPIC, OFFSETS_PARTITIONS)
    # a group whose coordinator is not the controller (a bounced controller keeps its
    # leaderships: its successor does not know it bounced, as in Kafka)
    controller, _epoch = await cluster.controller()
    runtime = cluster.nodes[0].broker.group_coordinator
    leaders = [await leader_of(cluster, OFFSETS_TOPIC, i) for i in range(OFFSETS_PARTITIONS)]
    group = next(
        g
        for g in (f"group-{i}" for i in range(100))
        if leaders[runtime.partition_for(g)] != controller
    )
    coordinator = await find_coordinator(cluster, 0, group)
    assert coordinator != controller
    body = {
        "group_id": group,
        "generation_id_or_member_epoch": -1,
        "member_id": "",
        "group_instance_id": None,
        "topics": [
            {
                "name": TOPIC,
                "partitions": [
                    {"partition_index": 0, "committed_offset": 42, "committed_metadata": "m0"},
                    {"partition_index": 1, "committed_offset": 7, "committed_metadata": "m1"},
                ],
            }
        ],
    }
    codes: list[int] = []

    async def committed() -> bool:
        resp = await cluster.request(coordinator, ApiKey.OFFSET_COMMIT, 7, body)
        codes[:] = [p.error_code for p in resp.topics[0].partitions]
        return codes != [ErrorCode.COORDINATOR_LOAD_IN_PROGRESS] * 2

    await eventually(committed, "OffsetCommit past the coordinator's load")
    assert codes == [ErrorCode.NONE, ErrorCode.NONE]
    assert await fetch_offsets(cluster, coordinator, group) == (0, {0: 42, 1: 7})

    # the coordinator's session expires: its __consumer_offsets partition moves
    cluster.expire(coordinator)
    asker = (coordinator + 1) % 3

    async def moved() -> bool:
        return await find_coordinator(cluster, asker, group) != coordinator

    await eventually(moved, "FindCoordinator names another broker")
    new = await find_coordinator(cluster, asker, group)
    seen: list[int] = []

    async def loaded() -> bool:
        code, _offsets = await fetch_offsets(cluster, new, group)
        seen.append(code)
        return code != ErrorCode.COORDINATOR_LOAD_IN_PROGRESS

    await eventually(loaded, "the new coordinator loaded the group")
    assert set(seen) <= {ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.NONE}, seen
    assert await fetch_offsets(cluster, new, group) == (0, {0: 42, 1: 7})

    # the old coordinator does not answer for the group any more
    async def resigned() -> bool:
        code, _ = await fetch_offsets(cluster, coordinator, group)
        return code == ErrorCode.NOT_COORDINATOR

    await eventually(resigned, "the old coordinator answers NOT_COORDINATOR")

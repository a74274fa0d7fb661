"""Leader / follower partitions in multi-broker mode: transitions, follower state, high
watermark, ISR proposals (commit, reject, zombie), follower appends, the HW checkpoint.

A real ReplicaManager over a LogManager in tmp_path, node 0; the time is
passed in (`now_ms`), nothing sleeps.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from protocol.errors import ErrorCode
from protocol.records import build_batch
from tests.unit.local_metadata import LocalTopicAdmin
from wirebroker.config import BrokerConfig
from wirebroker.log.log_manager import REPLICATION_OFFSET_CHECKPOINT, LogManager
from wirebroker.metadata.topic_store import TopicInfo, TopicStore
from wirebroker.replication.partition import (
    NotEnoughReplicasError,
    NotLeaderOrFollowerError,
    Partition,
    Role,
)
from wirebroker.replication.replica_manager import ReplicaManager

NOW = 1_700_000_000_000
LAG = 10_000


@dataclass
class Proposals:
    """An IsrChangeListener that records proposals and leaves them in flight."""

    calls: list[tuple[str, int, int, int, list[int]]] = field(default_factory=list)

    def propose_isr(
        self, topic: str, index: int, *, leader_epoch: int, partition_epoch: int, isr: list[int]
    ) -> None:
        self.calls.append((topic, index, leader_epoch, partition_epoch, isr))


class Env:
    def __init__(self, data: Path, **overrides: str) -> None:
        self.data = data
        self.overrides = overrides
        self.open()

    def open(self) -> None:
        self.config = BrokerConfig(
            {
                "node.id": "0",
                "log.dirs": str(self.data),
                "replica.lag.time.max.ms": str(LAG),
                **self.overrides,
            }
        )
        self.topics = TopicStore.open(self.data)
        self.logs = LogManager([self.data])
        self.data_events: list[tuple[str, int]] = []
        self.hw_events: list[tuple[str, int]] = []
        self.roles: list[tuple[str, Role]] = []
        self.rm = ReplicaManager(
            self.config,
            self.logs,
            self.topics,
            node_id=0,
            on_data=lambda t, i: self.data_events.append((t, i)),
        )
        self.rm.add_hw_listener(lambda t, i: self.hw_events.append((t, i)))
        self.rm.add_role_listener(lambda p: self.roles.append((f"{p.topic}-{p.index}", p.role)))
        self.rm.load(NOW)
        self.admin = LocalTopicAdmin(
            self.config, self.topics, self.logs, node_id=0, listener=self.rm
        )

    def reopen(self) -> None:
        self.rm.checkpoint_high_watermarks()
        self.logs.close()
        self.open()

    def topic(self, name: str = "t", **configs: str) -> Partition:
        self.admin.create_topic(name, 1, configs=configs or None, now_ms=NOW)
        part = self.rm.partition(name, 0)
        assert part is not None
        return part

    def lead(self, part: Partition, epoch: int = 1, isr=(0, 1, 2), pe: int = 1, now=NOW) -> bool:
        return self.rm.make_leader(
            part.topic,
            part.index,
            leader_epoch=epoch,
            isr=list(isr),
            replicas=[0, 1, 2],
            partition_epoch=pe,
            now_ms=now,
        )

    def follow(self, part: Partition) -> bool:
        """Follow broker 1 at epoch 1 (replicas [1, 0])."""
        return self.rm.make_follower(
            part.topic,
            part.index,
            leader_id=1,
            leader_epoch=1,
            isr=[1, 0],
            replicas=[1, 0],
            partition_epoch=1,
            now_ms=NOW,
        )

    def append(self, part: Partition, n: int = 1, acks: int = 1) -> int:
        batch = build_batch([(None, b"v%d" % i) for i in range(n)], base_timestamp=NOW)
        return self.rm.append(part, batch, now_ms=NOW, required_acks=acks).last_offset


@pytest.fixture
def env(tmp_path: Path) -> Iterator[Env]:
    e = Env(tmp_path / "data")
    yield e
    e.logs.close()


def fetch(env: Env, part: Partition, replica: int, offset: int, now: int = NOW) -> None:
    env.rm.record_follower_fetch(part, replica, fetch_offset=offset, log_start_offset=0, now_ms=now)


# -- roles ---------------------------------------------------------------------------------


def test_multi_broker_partitions_start_without_a_role(env: Env) -> None:
    part = env.topic()
    assert part.role is Role.NONE and part.leader_id == -1 and part.leader_epoch == -1
    with pytest.raises(NotLeaderOrFollowerError):
        env.append(part)
    assert part.check_leader(-1) is ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert env.rm.missing_code("t", 0) is ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert env.rm.missing_code("t", 1) is ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert env.rm.missing_code("nope", 0) is ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_make_leader_takes_the_epoch_and_resets_followers(env: Env) -> None:
    part = env.topic()
    assert env.lead(part, epoch=3, isr=(0, 1), now=NOW)
    assert part.role is Role.LEADER and part.leader_id == 0 and part.leader_epoch == 3
    assert part.epoch_entries() == [(3, 0)]
    assert part.followers[1].last_caught_up_ms == NOW  # ISR member: caught up now
    assert part.followers[2].last_caught_up_ms == -1  # outside: never
    assert env.roles == [("t-0", Role.LEADER)]
    env.append(part, 3)
    assert part.epoch_entries() == [(3, 0)]
    # stale and equal states change nothing
    assert not env.lead(part, epoch=2, pe=9)
    assert not env.lead(part, epoch=3, isr=(0,), pe=1)
    # same leadership, newer partition epoch: the ISR changes, followers keep their state
    fetch(env, part, 1, 2)
    assert env.lead(part, epoch=3, isr=(0, 1, 2), pe=2)
    assert part.isr == [0, 1, 2] and part.followers[1].log_end_offset == 2
    assert env.roles == [("t-0", Role.LEADER)]  # no new leadership
    # a new leader epoch restarts the epoch at the log end
    assert env.lead(part, epoch=5, pe=3)
    assert part.epoch_entries() == [(3, 0), (5, 3)]
    assert part.followers[1].log_end_offset == -1


def test_make_follower_and_back(env: Env) -> None:
    part = env.topic()
    env.lead(part, epoch=1)
    assert env.rm.make_follower(
        "t",
        0,
        leader_id=2,
        leader_epoch=2,
        isr=[2, 0],
        replicas=[0, 1, 2],
        partition_epoch=2,
        now_ms=NOW,
    )
    assert part.role is Role.FOLLOWER and part.leader_id == 2 and part.followers == {}
    assert not env.rm.make_follower(
        "t",
        0,
        leader_id=1,
        leader_epoch=1,
        isr=[1],
        replicas=[0, 1, 2],
        partition_epoch=3,
        now_ms=NOW,
    )
    with pytest.raises(NotLeaderOrFollowerError):
        env.append(part)
    assert part.check_leader(2) is ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert part.check_leader(3) is ErrorCode.UNKNOWN_LEADER_EPOCH
    assert part.check_leader(1) is ErrorCode.FENCED_LEADER_EPOCH
    assert env.lead(part, epoch=3, pe=3)
    assert env.roles == [("t-0", Role.LEADER), ("t-0", Role.FOLLOWER), ("t-0", Role.LEADER)]


def test_stop_replica(env: Env) -> None:
    part = env.topic()
    env.lead(part)
    env.rm.stop_replica("t", 0, delete=False)
    assert part.role is Role.NONE and env.rm.partition("t", 0) is part
    directory = part.log.directory
    env.rm.stop_replica("t", 0, delete=True)
    assert env.rm.partition("t", 0) is None and not directory.exists()
    assert env.roles[-1] == ("t-0", Role.NONE)


def test_ensure_partition_creates_the_log(env: Env) -> None:
    info = env.admin.create_topic("t", 1, now_ms=NOW)
    other = TopicInfo("u", info.topic_id.__class__(int=7), 3, 3)
    part = env.rm.ensure_partition(other, 2, now_ms=NOW)
    assert (part.topic, part.index, part.role) == ("u", 2, Role.NONE)
    assert env.rm.ensure_partition(other, 2, now_ms=NOW) is part
    assert env.logs.get("u", 2) is part.log and env.rm.partition("u", 0) is None
    assert [p.index for p in env.rm.partitions_of("u")] == [2]


# -- high watermark --------------------------------------------------------------------------


def test_high_watermark_is_the_least_isr_log_end(env: Env) -> None:
    part = env.topic()
    env.lead(part)
    env.append(part, 4)
    assert part.high_watermark == 0  # nobody has fetched yet
    fetch(env, part, 1, 4)
    assert part.high_watermark == 0
    env.hw_events.clear()
    fetch(env, part, 2, 3)
    assert part.high_watermark == 3 and env.hw_events == [("t", 0)]
    fetch(env, part, 2, 4)
    assert part.high_watermark == 4
    fetch(env, part, 2, 1)  # a follower that went back (truncated) cannot lower it
    assert part.high_watermark == 4


def test_a_caught_up_follower_outside_the_isr_holds_the_hw(env: Env) -> None:
    zk = Proposals()
    env.rm.isr_listener = zk
    part = env.topic()
    env.lead(part, isr=(0, 1))
    env.append(part, 4)
    fetch(env, part, 1, 4)
    assert part.high_watermark == 4
    env.rm.isr_rejected("t", 0)  # fenced: 2 cannot join the ISR below
    fetch(env, part, 2, 4, now=NOW + 100)  # at the leader's end: caught up at NOW + 100
    env.append(part, 4)
    fetch(env, part, 1, 8, now=NOW + 200)
    assert part.isr == [0, 1] and part.high_watermark == 4  # 2 is caught up: it counts
    env.rm.maybe_shrink_isr(NOW + 100 + LAG + 1)  # 2 no longer caught up: HW moves on
    assert part.high_watermark == 8


def test_a_follower_at_the_hw_joins_the_isr(env: Env) -> None:
    part = env.topic()
    env.lead(part, isr=(0, 1))
    env.append(part, 4)
    fetch(env, part, 2, 0)  # HW 0: 2 is at it (no listener: committed at once)
    assert part.isr == [0, 1, 2] and part.partition_epoch == 2
    fetch(env, part, 1, 4)
    assert part.high_watermark == 0  # now 2 holds it
    fetch(env, part, 2, 4)
    assert part.high_watermark == 4


def test_hw_frozen_below_min_insync_replicas(env: Env) -> None:
    part = env.topic(**{"min.insync.replicas": "2"})
    env.lead(part, isr=(0,))
    env.append(part, 2)
    assert part.high_watermark == 0  # ISR [0] < 2 (Kafka 3.9)
    with pytest.raises(NotEnoughReplicasError):
        env.append(part, 1, acks=-1)


def test_single_replica_partition_keeps_hw_at_log_end(env: Env) -> None:
    part = env.topic(**{"min.insync.replicas": "2"})
    env.rm.make_leader("t", 0, leader_epoch=1, isr=[0], replicas=[0], partition_epoch=1, now_ms=NOW)
    assert part.single_replica
    env.append(part, 2)
    assert part.high_watermark == 2


def test_a_quiet_follower_stamp_and_touch(env: Env) -> None:
    """The stamp exists only while the follower is in the ISR, at the log end, with the HW
    there too; a touch moves its caught-up time as a fetch at the end would, nothing else."""
    part = env.topic()
    env.lead(part, isr=(0, 1, 2))
    env.append(part, 3)
    assert part.quiet_follower_stamp(1) is None  # has not fetched
    fetch(env, part, 1, 3)
    assert part.quiet_follower_stamp(1) is None  # HW 0: 2 has not fetched
    fetch(env, part, 2, 3)
    stamp = part.quiet_follower_stamp(1)
    assert part.high_watermark == 3 and stamp == (1, 3, 0, 3)
    before = part.followers[1]
    env.rm.touch_quiet_follower(part, 1, NOW + 5_000)
    after = part.followers[1]
    assert (after.last_caught_up_ms, after.last_fetch_ms) == (NOW + 5_000, NOW + 5_000)
    assert (after.log_end_offset, after.log_start_offset) == (3, before.log_start_offset)
    assert part.quiet_follower_stamp(1) == stamp
    env.append(part, 1)
    assert part.quiet_follower_stamp(1) is None  # behind the log end now
    other = env.topic("u")
    env.lead(other, isr=(0, 1))
    env.rm.isr_rejected("u", 0)
    fetch(env, other, 2, 0)
    assert other.quiet_follower_stamp(2) is None  # not in the ISR (fenced: cannot join)
    env.follow(other)
    assert other.quiet_follower_stamp(1) is None  # not the leader


# -- ISR -------------------------------------------------------------------------------------


def test_isr_expansion_is_proposed_and_committed(env: Env) -> None:
    zk = Proposals()
    env.rm.isr_listener = zk
    part = env.topic()
    env.lead(part, isr=(0, 1), pe=4)
    env.append(part, 4)
    fetch(env, part, 1, 4)
    assert part.high_watermark == 4
    fetch(env, part, 2, 2)  # behind the HW: may not join
    assert zk.calls == []
    env.append(part, 2)
    fetch(env, part, 2, 4)  # at the HW (4) and past the epoch start (0): joins
    assert zk.calls == [("t", 0, 1, 4, [0, 1, 2])]
    assert part.pending_isr == [0, 1, 2] and part.isr == [0, 1]
    # the maximal ISR holds the HW: 1 is at 6, but pending member 2 is at 4
    fetch(env, part, 1, 6)
    assert part.high_watermark == 4
    fetch(env, part, 2, 5)  # no second proposal while one is in flight
    assert len(zk.calls) == 1
    env.rm.isr_committed("t", 0, isr=[0, 1, 2], partition_epoch=5, now_ms=NOW)
    assert part.isr == [0, 1, 2] and part.pending_isr is None and part.partition_epoch == 5
    env.rm.isr_committed("t", 0, isr=[0], partition_epoch=5)  # stale: ignored
    assert part.isr == [0, 1, 2]


def test_isr_shrink_after_the_lag_time(env: Env) -> None:
    part = env.topic()
    env.lead(part, now=NOW)
    env.append(part, 2)
    fetch(env, part, 1, 2, now=NOW + 1000)
    fetch(env, part, 2, 0, now=NOW + 1000)
    assert env.rm.maybe_shrink_isr(NOW + LAG) == 0  # 2 was caught up at NOW (reset)
    fetch(env, part, 1, 2, now=NOW + LAG)
    assert env.rm.maybe_shrink_isr(NOW + LAG + 1) == 1  # no listener: committed at once
    assert part.isr == [0, 1] and part.partition_epoch == 2
    assert part.high_watermark == 2  # the shrink let the HW advance


def test_a_rejected_proposal_fences_the_leader_until_new_leadership(env: Env) -> None:
    zk = Proposals()
    env.rm.isr_listener = zk
    part = env.topic()
    env.lead(part, now=NOW)
    env.append(part, 2)
    fetch(env, part, 1, 2, now=NOW + LAG)
    env.rm.maybe_shrink_isr(NOW + LAG + 1)
    assert zk.calls == [("t", 0, 1, 1, [0, 1])]
    env.rm.isr_rejected("t", 0)  # the znode moved: maybe a newer leader exists
    assert part.isr_fenced and part.pending_isr is None and part.isr == [0, 1, 2]
    assert env.rm.maybe_shrink_isr(NOW + 3 * LAG) == 0
    assert part.high_watermark == 0  # a zombie cannot shrink the ISR to ack writes
    env.lead(part, epoch=2, pe=3, now=NOW + 3 * LAG)
    assert not part.isr_fenced
    assert env.rm.maybe_shrink_isr(NOW + 5 * LAG) == 1


def test_a_rejection_arriving_after_new_leadership_is_ignored(env: Env) -> None:
    """The leader proposes a shrink, the controller meanwhile elects it again at a newer
    epoch (the state the proposal's CAS then fails against): the stale refusal must not
    fence the new leadership, or its ISR could never grow back (seen in the cluster chaos
    harness: a zombie fault never healed)."""
    zk = Proposals()
    env.rm.isr_listener = zk
    part = env.topic()
    env.lead(part, now=NOW)
    env.append(part, 2)
    fetch(env, part, 1, 2, now=NOW + LAG)
    env.rm.maybe_shrink_isr(NOW + LAG + 1)
    assert zk.calls == [("t", 0, 1, 1, [0, 1])]
    env.lead(part, epoch=2, pe=3, now=NOW + LAG + 2)
    env.rm.isr_rejected("t", 0, leader_epoch=1, partition_epoch=1)
    assert not part.isr_fenced
    fetch(env, part, 2, 2, now=NOW + LAG + 3)
    assert part.isr == [0, 1, 2]
    env.rm.isr_rejected("t", 0, leader_epoch=2, partition_epoch=3)  # a current one fences
    assert part.isr_fenced


# -- replica sets (the assignment changes under a leadership) --------------------------------


def test_a_leader_takes_a_shrunk_replica_set_without_a_newer_state(env: Env) -> None:
    """A reassignment's end shrinks the replica set; the role call that brings it has a state
    that is not newer (the assignment changed, the state did not). The leader takes it: the
    leaving replica is no follower any more (its fetches are refused, it can never join the
    ISR again) and, still in the ISR, is proposed out of it at once. Before: the replica set
    changed only with a newer state, so the leader kept the leaving replica as a follower,
    in its ISR until replica.lag.time.max.ms, holding the high watermark back."""
    zk = Proposals()
    env.rm.isr_listener = zk
    part = env.topic()
    assert env.lead(part, epoch=2, isr=(0, 1, 2), pe=3)
    env.append(part, 2)
    fetch(env, part, 1, 2)
    fetch(env, part, 2, 2)
    assert part.high_watermark == 2
    replicas = [0, 1]
    assert not env.rm.make_leader(
        "t", 0, leader_epoch=2, isr=[0, 1, 2], replicas=replicas, partition_epoch=3, now_ms=NOW
    )
    assert part.replicas == [0, 1] and sorted(part.followers) == [1]
    assert part.followers[1].log_end_offset == 2  # a staying follower keeps its state
    assert zk.calls == [("t", 0, 2, 3, [0, 1])]
    with pytest.raises(NotLeaderOrFollowerError):
        fetch(env, part, 2, 2)
    assert part.isr_to_expand(2) is None
    env.rm.isr_committed("t", 0, isr=[0, 1], partition_epoch=4, now_ms=NOW)
    assert part.isr == [0, 1] and len(zk.calls) == 1
    env.append(part, 1)
    fetch(env, part, 1, 3)
    assert part.high_watermark == 3


def test_a_leader_never_takes_a_broker_outside_its_replica_set_into_the_isr(env: Env) -> None:
    """The ISR only ever grows with the replica set's followers: a broker that is not one
    (or no longer one) is refused as a follower however caught up it is."""
    zk = Proposals()
    env.rm.isr_listener = zk
    part = env.topic()
    env.rm.make_leader(
        "t", 0, leader_epoch=1, isr=[0], replicas=[0, 1], partition_epoch=1, now_ms=NOW
    )
    env.append(part, 2)
    for broker in (2, 3):
        with pytest.raises(NotLeaderOrFollowerError):
            fetch(env, part, broker, 2)
        assert part.isr_to_expand(broker) is None
    assert zk.calls == []
    fetch(env, part, 1, 2)
    assert zk.calls == [("t", 0, 1, 1, [0, 1])]


def test_an_expansion_in_flight_for_a_replica_since_removed_is_undone(env: Env) -> None:
    """The leaving replica's ISR expansion was in flight when the replica set shrank: once it
    is committed, the leader proposes the ISR without it."""
    zk = Proposals()
    env.rm.isr_listener = zk
    part = env.topic()
    env.lead(part, epoch=1, isr=(0, 1), pe=1)
    fetch(env, part, 1, 0)
    fetch(env, part, 2, 0)
    assert zk.calls == [("t", 0, 1, 1, [0, 1, 2])]
    env.rm.make_leader(
        "t", 0, leader_epoch=1, isr=[0, 1], replicas=[0, 1], partition_epoch=1, now_ms=NOW
    )
    assert part.replicas == [0, 1] and len(zk.calls) == 1  # one proposal at a time
    env.rm.isr_committed("t", 0, isr=[0, 1, 2], partition_epoch=2, now_ms=NOW)
    assert zk.calls[1:] == [("t", 0, 1, 2, [0, 1])]


def test_a_grown_replica_set_is_followed_without_a_newer_state(env: Env) -> None:
    """A reassignment's start adds a replica: the leader (and a follower) take it from the
    assignment, so the new replica may fetch and join the ISR once caught up."""
    part = env.topic()
    env.rm.make_leader(
        "t", 0, leader_epoch=1, isr=[0, 1], replicas=[0, 1], partition_epoch=1, now_ms=NOW
    )
    env.append(part, 2)
    with pytest.raises(NotLeaderOrFollowerError):
        fetch(env, part, 2, 2)
    env.rm.make_leader(
        "t", 0, leader_epoch=1, isr=[0, 1], replicas=[2, 0, 1], partition_epoch=1, now_ms=NOW
    )
    assert part.followers[2].last_caught_up_ms == -1  # new: never caught up
    fetch(env, part, 1, 2)
    fetch(env, part, 2, 2)
    assert part.isr == [0, 1, 2]  # no listener: committed at once
    other = env.topic("u")
    env.follow(other)
    assert not env.rm.make_follower(
        "u",
        0,
        leader_id=1,
        leader_epoch=1,
        isr=[1, 0],
        replicas=[1, 0, 2],
        partition_epoch=1,
        now_ms=NOW,
    )
    assert other.replicas == [1, 0, 2] and other.role is Role.FOLLOWER


# -- follower side --------------------------------------------------------------------------


def test_follower_append_takes_the_leaders_hw(env: Env, tmp_path: Path) -> None:
    part = env.topic()
    leader_env = Env(tmp_path / "leader")
    try:
        leader = leader_env.topic()
        leader_env.lead(leader, epoch=1)
        for _ in range(3):
            leader_env.append(leader, 1)
        env.follow(part)
        data = leader.log.read(0, max_bytes=1 << 20)
        env.rm.append_as_follower(part, data, leader_high_watermark=2, now_ms=NOW)
        assert part.log_end_offset == 3 and part.high_watermark == 2
        env.rm.append_as_follower(part, b"", leader_high_watermark=9, now_ms=NOW)
        assert part.high_watermark == 3  # min(leader's HW, own log end)
        env.rm.truncate(part, 1)
        assert part.log_end_offset == 1 and part.high_watermark == 1
        env.rm.truncate_fully_and_start_at(part, 40)
        assert (part.log_start_offset, part.log_end_offset) == (40, 40)
        env.lead(part, epoch=2, pe=2)
        with pytest.raises(NotLeaderOrFollowerError):
            env.rm.append_as_follower(part, data, leader_high_watermark=0, now_ms=NOW)
    finally:
        leader_env.logs.close()


def test_replication_checkpoint_restores_the_hw(env: Env) -> None:
    part = env.topic()
    env.lead(part)
    env.append(part, 5)
    fetch(env, part, 1, 3)
    fetch(env, part, 2, 3)
    assert part.high_watermark == 3
    env.reopen()
    text = (env.data / REPLICATION_OFFSET_CHECKPOINT).read_text()
    assert text == "0\n1\nt 0 3\n"
    part = env.rm.partition("t", 0)
    assert part is not None and part.role is Role.NONE
    assert part.high_watermark == 3 and part.log_end_offset == 5  # not the log end


def test_multi_broker_load_does_not_create_missing_logs(env: Env) -> None:
    env.admin.create_topic("t", 3, now_ms=NOW)
    env.rm.stop_replica("t", 1, delete=True)  # partition 1 lives on other brokers
    env.reopen()
    assert [p.index for p in env.rm.partitions_of("t")] == [0, 2]
    assert env.logs.get("t", 1) is None


def test_replication_status_for_the_purgatory(env: Env) -> None:
    part = env.topic(**{"min.insync.replicas": "2"})
    env.lead(part, isr=(0, 1))
    env.append(part, 2)
    assert part.replication_status(2) is None
    fetch(env, part, 1, 2)
    assert part.replication_status(2) is ErrorCode.NONE
    assert part.replication_status(2, leader_epoch=0) is ErrorCode.NOT_LEADER_OR_FOLLOWER
    env.rm.isr_committed("t", 0, isr=[0], partition_epoch=2, now_ms=NOW)
    assert part.replication_status(2) is ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
    env.rm.stop_replica("t", 0, delete=False)
    assert part.replication_status(2) is ErrorCode.NOT_LEADER_OR_FOLLOWER


def test_delete_records_status_waits_for_the_followers_log_starts(env: Env) -> None:
    part = env.topic()
    env.lead(part)
    env.append(part, 6)
    fetch(env, part, 1, 6)
    fetch(env, part, 2, 6)
    assert part.high_watermark == 6
    everyone = {0, 1, 2}.__contains__
    assert part.delete_records_status(0, everyone) == (ErrorCode.NONE, 0)
    part.delete_records_before(4)
    assert part.log_start_offset == 4 and part.low_watermark(everyone) == 0
    assert part.delete_records_status(4, everyone) is None
    env.hw_events.clear()
    env.rm.record_follower_fetch(part, 1, fetch_offset=6, log_start_offset=4, now_ms=NOW)
    assert env.hw_events == [("t", 0)]  # a follower's log start moved: the waiters look again
    assert part.delete_records_status(4, everyone) is None  # 2 still starts at 0
    assert part.delete_records_status(4, {0, 1}.__contains__) == (ErrorCode.NONE, 4)  # 2 dead
    env.rm.record_follower_fetch(part, 2, fetch_offset=6, log_start_offset=4, now_ms=NOW)
    assert part.delete_records_status(4, everyone) == (ErrorCode.NONE, 4)
    env.hw_events.clear()
    env.rm.record_follower_fetch(part, 2, fetch_offset=6, log_start_offset=4, now_ms=NOW)
    assert env.hw_events == []  # nothing moved
    env.lead(part, epoch=2, pe=2)  # a new leadership: the followers' log starts are unknown
    assert part.low_watermark(everyone) == -1
    env.rm.stop_replica("t", 0, delete=False)
    assert part.delete_records_status(4, everyone) == (ErrorCode.NOT_LEADER_OR_FOLLOWER, -1)


def test_single_replica_low_watermark_is_its_log_start(env: Env) -> None:
    part = env.topic()
    env.rm.make_leader("t", 0, leader_epoch=1, isr=[0], replicas=[0], partition_epoch=1, now_ms=NOW)
    env.append(part, 3)
    part.delete_records_before(2)
    assert part.delete_records_status(2, lambda node: False) == (ErrorCode.NONE, 2)


def test_follower_follows_the_leaders_log_start(env: Env) -> None:
    """Kafka's maybeIncrementLogStartOffset on the follower: up to its own log end, whole
    segments below it deleted."""
    part = env.topic(**{"internal.segment.bytes": "1024"})
    env.follow(part)
    for i in range(20):
        batch = build_batch(
            [(None, b"x" * 300)], base_timestamp=NOW, base_offset=i, partition_leader_epoch=1
        )
        env.rm.append_as_follower(part, batch, leader_high_watermark=i, now_ms=NOW)
    segments = len(part.log.segments)
    assert segments > 2 and part.log_start_offset == 0
    env.rm.append_as_follower(
        part, b"", leader_high_watermark=20, leader_log_start_offset=12, now_ms=NOW
    )
    assert part.log_start_offset == 12
    bases = [seg.base_offset for seg in part.log.segments]
    assert len(bases) < segments and bases[0] <= 12 and (len(bases) == 1 or bases[1] > 12)
    env.rm.append_as_follower(
        part, b"", leader_high_watermark=20, leader_log_start_offset=99, now_ms=NOW
    )
    assert part.log_start_offset == 20  # never past its own log end


def test_an_epoch_bump_while_leading_keeps_waiting_appends(env: Env) -> None:
    """ZooKeeper mode: the controller removing a dead follower from the ISR bumps the leader
    epoch of a leader that stays leader. Appends waiting for replication keep waiting and
    complete (Kafka's DelayedProduce); only a leadership lost in between fails them."""
    part = env.topic()
    env.lead(part, epoch=1, isr=(0, 1, 2))
    env.append(part, 2)
    assert env.lead(part, epoch=2, isr=(0, 1), pe=2)  # broker 2 died: ISR shrunk, epoch 2
    assert part.replication_status(2, leader_epoch=1) is None
    fetch(env, part, 1, 2)
    assert part.replication_status(2, leader_epoch=1) is ErrorCode.NONE
    env.append(part, 1)
    assert env.rm.make_follower(  # lost the leadership ...
        "t",
        0,
        leader_id=1,
        leader_epoch=3,
        isr=[1, 0],
        replicas=[0, 1, 2],
        partition_epoch=3,
        now_ms=NOW,
    )
    assert env.lead(part, epoch=5, isr=(0, 1), pe=4)  # ... and got it back
    assert part.replication_status(3, leader_epoch=2) is ErrorCode.NOT_LEADER_OR_FOLLOWER

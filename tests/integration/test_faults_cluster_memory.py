"""Cluster faults on three in-process brokers over the in-memory ZooKeeper (the fast check of
`FaultControl.move_leader` / `shrink_isr`; tests/cluster/test_cluster_faults.py runs them over
HTTP on real processes and a real ZooKeeper, with kafka-python).

What passing proves: move_leader, asked of a broker that is not involved, moves the leadership
to the replica asked for through the controller (leader epoch + 1, every broker plays its new
role) and refuses a replica outside the ISR or the current leader; shrink_isr on the leader
writes the smaller ISR to ZooKeeper and keeps the followers out while they keep fetching
(acks=all with min.insync.replicas=2 answers NOT_ENOUGH_REPLICAS), removing the fault lets them
rejoin; on a broker that does not lead it is refused naming the leader.
"""

from __future__ import annotations

from typing import Any

import pytest
import trio
from _memory_cluster import eventually, leader_of, wait_roles

from protocol.errors import ErrorCode
from wirebroker.faults.control import FaultError

pytestmark = pytest.mark.filterwarnings("ignore:unclosed <socket.socket:ResourceWarning")

TOPIC = "faulty"


async def _topic(cluster: Any) -> int:
    code = await cluster.create_topic(0, TOPIC, 1, 3, configs={"min.insync.replicas": "2"})
    assert code == 0
    await wait_roles(cluster, TOPIC, 1)

    async def full_isr() -> bool:
        return sorted(cluster.peek_state(TOPIC, 0).isr) == [0, 1, 2]

    await eventually(full_isr, "the whole ISR")
    return await leader_of(cluster, TOPIC, 0)


async def test_move_leader_through_the_controller(cluster: Any) -> None:
    leader = await _topic(cluster)
    epoch = cluster.peek_state(TOPIC, 0).leader_epoch
    target, bystander = (i for i in range(3) if i != leader)
    control = cluster.nodes[bystander].broker.fault_control
    with pytest.raises(FaultError, match="already leads"):
        await control.move_leader(TOPIC, 0, to=leader)
    with pytest.raises(FaultError, match="not a replica"):
        await control.move_leader(TOPIC, 0, to=7)
    with trio.fail_after(20):
        result = await control.move_leader(TOPIC, 0, to=target)
    assert result["leader"] == target
    assert result["replicas"][0] == target
    state = cluster.peek_state(TOPIC, 0)
    assert state.leader == target and state.leader_epoch > epoch
    await wait_roles(cluster, TOPIC, 1)
    code, _ = await cluster.produce(target, TOPIC, 0, [b"at-the-new-leader"])
    assert code == 0
    code, _ = await cluster.produce(leader, TOPIC, 0, [b"at-the-old-leader"])
    assert code == ErrorCode.NOT_LEADER_OR_FOLLOWER


async def test_shrink_isr_holds_the_followers_out_until_removed(cluster: Any) -> None:
    leader = await _topic(cluster)
    follower = next(i for i in range(3) if i != leader)
    with pytest.raises(FaultError) as refused:
        cluster.nodes[follower].broker.fault_control.shrink_isr(TOPIC, 0)
    assert refused.value.details == {"leader": leader}
    control = cluster.nodes[leader].broker.fault_control
    fault = control.shrink_isr(TOPIC, 0)
    assert fault.params["isr"] == [leader]

    async def shrunk() -> bool:
        in_zookeeper = list(cluster.peek_state(TOPIC, 0).isr) == [leader]
        return in_zookeeper and cluster.nodes[leader].part(TOPIC, 0).isr == [leader]

    await eventually(shrunk, "the ISR shrunk to the leader, in ZooKeeper and at the leader")
    code, _ = await cluster.produce(leader, TOPIC, 0, [b"x"], acks=1)
    assert code == 0  # the followers fetch it and are caught up, yet stay out
    code, _ = await cluster.produce(leader, TOPIC, 0, [b"y"])
    assert code == ErrorCode.NOT_ENOUGH_REPLICAS
    assert list(cluster.peek_state(TOPIC, 0).isr) == [leader]
    assert control.remove(fault.id) is fault

    async def whole() -> bool:
        return sorted(cluster.peek_state(TOPIC, 0).isr) == [0, 1, 2]

    await eventually(whole, "the followers back in the ISR")
    code, _ = await cluster.produce(leader, TOPIC, 0, [b"z"])
    assert code == 0

"""A broker's registration in ZooKeeper: /brokers/ids/<id> and its broker epoch.

`Registration.register()` creates the ephemeral /brokers/ids/<id>; its czxid is the broker
epoch. A registration held by another session (this broker's previous process, killed, whose
session has not expired yet) is waited out for at most the session timeout +
REGISTRATION_MARGIN_S, with one log line; still held then: `BrokerIdTakenError` (another live
broker has this id: Kafka's registration fails at once). `registered` is False from a session
loss until the next registration: roles, ISR writes and the controller election look at it.
`resolve_cluster_id` reads or creates /cluster/id.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import trio

from wirebroker.cluster import zk_layout as zl
from wirebroker.cluster.zk_layout import Endpoints
from wirebroker.coordination.api import Coordination, NodeExistsError, Stat
from wirebroker.metadata.errors import BrokerIdTakenError

__all__ = [
    "DEFAULT_SESSION_TIMEOUT_MS",
    "REGISTRATION_MARGIN_S",
    "Registration",
    "resolve_cluster_id",
]

log = logging.getLogger("wirebroker.cluster")

DEFAULT_SESSION_TIMEOUT_MS = 6000  # (wirebroker.config's default; used without a config)
#: Beyond the session timeout, how long a registration held by a previous session is waited
#: for: ZooKeeper expires a session up to one tick after its timeout (Kafka's sample
#: zookeeper.properties has tickTime=2000), and the expiry must reach us.
REGISTRATION_MARGIN_S = 3.0


async def resolve_cluster_id(coord: Coordination, proposed: str) -> str:
    """The cluster's id: /cluster/id, created with `proposed` when the cluster is new."""
    try:
        await coord.create(zl.CLUSTER_ID, zl.encode_cluster_id(proposed), makepath=True)
        return proposed
    except NodeExistsError:
        data, _stat = await coord.get(zl.CLUSTER_ID)
        return zl.decode_cluster_id(data)


class Registration:
    """This broker's /brokers/ids/<id> (see the module docstring)."""

    def __init__(
        self,
        coord: Coordination,
        *,
        node_id: int,
        rack: str | None,
        address: Callable[[], tuple[str, int]],
        clock: Callable[[], int],
        wait_s: float,
        endpoints: Callable[[], Endpoints] | None = None,
    ) -> None:
        self.coord = coord
        self.node_id = node_id
        self.rack = rack
        self.address = address
        #: (every listener's (name, host, port), name -> protocol); None: PLAINTEXT at address
        self.endpoints = endpoints
        self.clock = clock
        #: how long a registration held by another session is waited out (see register)
        self.wait_s = wait_s
        self.registered = False
        self.broker_epoch = -1

    async def register(self) -> None:
        """Create /brokers/ids/<id> (ephemeral). When it exists and another session owns it,
        wait for it to go, at most `wait_s`: a broker restarted right after a kill -9 finds
        its previous process's registration there until that session expires (at most a
        session timeout after the kill, plus ZooKeeper's tick). Still there after that:
        another live broker has this id, which Kafka refuses at once (BrokerIdTakenError; the
        broker exits with that one line)."""
        host, port = self.address()
        endpoints, protocols = self.endpoints() if self.endpoints is not None else ((), ())
        reg = zl.BrokerRegistration(
            self.node_id, host, port, self.rack, self.clock(), endpoints, protocols
        )
        path = zl.broker_path(self.node_id)
        deadline: float | None = None
        while True:
            try:
                await self.coord.create(path, zl.encode_broker(reg), ephemeral=True)
                break
            except NodeExistsError:
                pass
            gone = trio.Event()

            def on_change(_data: bytes | None, stat: Stat | None, gone: trio.Event = gone) -> None:
                if stat is None or stat.ephemeral_owner == self.coord.session_id:
                    gone.set()

            # (the watch's first call is the current value: gone already, or ours after a
            # lost answer of our own create; the loop then creates or finds it ours)
            watch = await self.coord.watch_data(path, on_change)
            try:
                stat = await self.coord.exists(path)
                if stat is not None and stat.ephemeral_owner == self.coord.session_id:
                    break
                if deadline is None:
                    deadline = trio.current_time() + self.wait_s
                    log.warning(
                        "broker id %d is registered by another ZooKeeper session: waiting up to "
                        "%.1f s for the previous session of broker %d to expire",
                        self.node_id,
                        self.wait_s,
                        self.node_id,
                    )
                with trio.move_on_at(deadline):
                    await gone.wait()
            finally:
                watch.cancel()
            if not gone.is_set():
                raise BrokerIdTakenError(
                    f"broker id {self.node_id} is registered in ZooKeeper by another live "
                    f"session after {self.wait_s:.1f} s (is another broker running "
                    f"with node.id {self.node_id}?)"
                )
        stat = await self.coord.exists(path)
        assert stat is not None
        self.broker_epoch = stat.czxid
        self.registered = True
        log.info(
            "registered broker %d at %s:%d (broker epoch %d)",
            self.node_id,
            host,
            port,
            self.broker_epoch,
        )

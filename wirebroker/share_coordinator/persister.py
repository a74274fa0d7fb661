"""The `Persister` backed by the share coordinator (trio): Kafka's `DefaultStatePersister`.

The share partitions (ShareFetch / ShareAcknowledge on the partition leader) and the group
coordinator (initialising and deleting share-group state) keep share-partition state through
the `Persister` interface (docs/share-groups.md; `wirebroker.share.persister` defines it, with
`StateBatch` / `PartitionState` of the same shape as below). `CoordinatorPersister` serves it
from `__share_group_state`:

- the key's coordinator is the leader of its `__share_group_state` partition
  (`SharePartitionKey.state_partition`, what FindCoordinator key type 2 answers, read from the
  broker's cluster view); the topic is created on first use (`ensure_topic`);
- when this broker is that leader, the local `ShareCoordinatorRuntime` is called directly;
  otherwise the state RPC (InitializeShareGroupState v0, ReadShareGroupState v0,
  WriteShareGroupState v1, ReadShareGroupStateSummary v1, DeleteShareGroupState v0) goes to
  the leader over a `replication.broker_client.BrokerConnection` (one per broker, reused;
  one request at a time per connection);
- NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS and connection
  failures are retried (the leader looked up again) up to `attempts` times, `backoff_s` apart,
  doubling, as Kafka's persister retries its find-coordinator/state calls; the last error is
  returned. Every other error is returned as the RPC gives it: e.g. INVALID_REQUEST for a
  read or write of a share partition never initialised, FENCED_STATE_EPOCH,
  FENCED_LEADER_EPOCH, UNKNOWN_TOPIC_OR_PARTITION (unknown topic id or partition).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import trio

from protocol.api import ApiKey
from protocol.errors import ErrorCode
from wirebroker.replication.broker_client import BrokerConnection, BrokerConnectionError
from wirebroker.share.persister import PartitionState, StateBatch
from wirebroker.share_coordinator import batches as _batches
from wirebroker.share_coordinator.core import Outcome, WriteRequest
from wirebroker.share_coordinator.keys import SharePartitionKey
from wirebroker.share_coordinator.state import ShareState

if TYPE_CHECKING:
    from wirebroker.share_coordinator.runtime import ShareCoordinatorRuntime

__all__ = ["CoordinatorPersister", "PartitionState", "StateBatch"]

log = logging.getLogger(__name__)

_RETRIABLE = frozenset(
    {
        ErrorCode.NOT_COORDINATOR,
        ErrorCode.COORDINATOR_NOT_AVAILABLE,
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    }
)
Leader = tuple[int, str, int]


def _state(outcome: Outcome, leader_epoch: int) -> PartitionState:
    state = outcome.state
    assert state is not None
    return PartitionState(
        state.state_epoch,
        state.start_offset,
        leader_epoch if leader_epoch >= 0 else state.leader_epoch,
        tuple(StateBatch(*b) for b in state.batches),
    )


def _error(code: int) -> ErrorCode:
    try:
        return ErrorCode(code)
    except ValueError:
        return ErrorCode.UNKNOWN


class CoordinatorPersister:
    """See the module docstring. `leader_of(p)`: (node id, host, port) of the leader of
    `__share_group_state`-`p`, or None."""

    def __init__(
        self,
        local: ShareCoordinatorRuntime,
        leader_of: Callable[[int], Leader | None],
        *,
        node_id: int,
        client_id: str = "wirebroker-share-persister",
        max_frame_bytes: int = 100 * 1024 * 1024,
        timeout_s: float = 30.0,
        attempts: int = 8,
        backoff_s: float = 0.05,
    ) -> None:
        self.local = local
        self.leader_of = leader_of
        self.node_id = node_id
        self.client_id = client_id
        self.max_frame_bytes = max_frame_bytes
        self.timeout_s = timeout_s
        self.attempts = attempts
        self.backoff_s = backoff_s
        self._conns: dict[int, BrokerConnection] = {}
        self._locks: dict[int, trio.Lock] = {}

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Hold the peer connections until cancelled, then close them."""
        task_status.started()
        try:
            await trio.sleep_forever()
        finally:
            with trio.CancelScope(shield=True):
                for conn in list(self._conns.values()):
                    await conn.aclose()
                self._conns.clear()

    # == the Persister interface ===========================================================
    async def initialize_state(
        self,
        group_id: str,
        topic_id: uuid.UUID,
        partition: int,
        state_epoch: int,
        start_offset: int,
    ) -> ErrorCode:
        key = SharePartitionKey(group_id, topic_id, partition)
        body = _body(key, {"state_epoch": state_epoch, "start_offset": start_offset})
        outcome = await self._call(
            key,
            lambda: self.local.initialize(key, state_epoch, start_offset),
            ApiKey.INITIALIZE_SHARE_GROUP_STATE,
            0,
            body,
        )
        return outcome.error

    async def read_state(
        self, group_id: str, topic_id: uuid.UUID, partition: int, leader_epoch: int
    ) -> PartitionState | ErrorCode:
        key = SharePartitionKey(group_id, topic_id, partition)
        outcome = await self._call(
            key,
            lambda: self.local.read(key, leader_epoch),
            ApiKey.READ_SHARE_GROUP_STATE,
            0,
            _body(key, {"leader_epoch": leader_epoch}),
        )
        if outcome.error is not ErrorCode.NONE:
            return outcome.error
        return _state(outcome, leader_epoch)

    async def write_state(
        self, group_id: str, topic_id: uuid.UUID, partition: int, state: PartitionState
    ) -> ErrorCode:
        key = SharePartitionKey(group_id, topic_id, partition)
        request = WriteRequest(
            state_epoch=state.state_epoch,
            leader_epoch=state.leader_epoch,
            start_offset=state.start_offset,
            batches=tuple(
                _batches.StateBatch(
                    b.first_offset, b.last_offset, b.delivery_state, b.delivery_count
                )
                for b in state.batches
            ),
        )
        fields = {
            "state_epoch": state.state_epoch,
            "leader_epoch": state.leader_epoch,
            "start_offset": state.start_offset,
            "delivery_complete_count": -1,
            "state_batches": [b._asdict() for b in request.batches],
        }
        outcome = await self._call(
            key,
            lambda: self.local.write(key, request),
            ApiKey.WRITE_SHARE_GROUP_STATE,
            1,
            _body(key, fields),
        )
        return outcome.error

    async def read_summary(
        self, group_id: str, topic_id: uuid.UUID, partition: int, leader_epoch: int
    ) -> PartitionState | ErrorCode:
        key = SharePartitionKey(group_id, topic_id, partition)
        outcome = await self._call(
            key,
            lambda: self.local.read_summary(key),
            ApiKey.READ_SHARE_GROUP_STATE_SUMMARY,
            1,
            _body(key, {"leader_epoch": leader_epoch}),
        )
        if outcome.error is not ErrorCode.NONE:
            return outcome.error
        state = _state(outcome, -1)
        assert outcome.state is not None
        dcc = outcome.state.delivery_complete_count
        return PartitionState(state.state_epoch, state.start_offset, state.leader_epoch, (), dcc)

    async def delete_state(self, group_id: str, topic_id: uuid.UUID, partition: int) -> ErrorCode:
        key = SharePartitionKey(group_id, topic_id, partition)
        outcome = await self._call(
            key,
            lambda: self.local.delete(key),
            ApiKey.DELETE_SHARE_GROUP_STATE,
            0,
            _body(key, {}),
        )
        return outcome.error

    # == routing ===========================================================================
    async def _call(
        self,
        key: SharePartitionKey,
        local: Callable[[], Awaitable[Outcome]],
        api: ApiKey,
        version: int,
        body: dict[str, Any],
    ) -> Outcome:
        """One state call, local or remote, with the retries of the module docstring."""
        outcome = Outcome.failed(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        delay = self.backoff_s
        for attempt in range(self.attempts):
            if attempt:
                await trio.sleep(delay)
                delay *= 2
            outcome = await self._once(key, local, api, version, body)
            if outcome.error not in _RETRIABLE:
                return outcome
        return outcome

    async def _once(
        self,
        key: SharePartitionKey,
        local: Callable[[], Awaitable[Outcome]],
        api: ApiKey,
        version: int,
        body: dict[str, Any],
    ) -> Outcome:
        error = self.local.ensure_topic()
        if error is not ErrorCode.NONE:
            return Outcome.failed(error)
        leader = self.leader_of(self.local.partition_for(key))
        if leader is None:
            return Outcome.failed(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        if leader[0] == self.node_id:
            return await local()
        try:
            response = await self._request(leader, api, version, body)
        except (BrokerConnectionError, trio.TooSlowError) as exc:
            log.info("share state %s to broker %d: %s", api.name, leader[0], exc)
            return Outcome.failed(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        return _outcome(api, response)

    async def _request(
        self, leader: Leader, api: ApiKey, version: int, body: dict[str, Any]
    ) -> Any:
        node, host, port = leader
        lock = self._locks.setdefault(node, trio.Lock())
        async with lock:
            conn = self._conns.get(node)
            if conn is not None and (conn.closed or conn.address != (host, port)):
                await conn.aclose()
                conn = None
            with trio.fail_after(self.timeout_s):
                if conn is None:
                    conn = await BrokerConnection.open(
                        host, port, client_id=self.client_id, max_frame_bytes=self.max_frame_bytes
                    )
                    self._conns[node] = conn
                return await conn.request(int(api), version, body)


def _body(key: SharePartitionKey, fields: dict[str, Any]) -> dict[str, Any]:
    return {
        "group_id": key.group_id,
        "topics": [
            {"topic_id": key.topic_id, "partitions": [{"partition": key.partition, **fields}]}
        ],
    }


def _outcome(api: ApiKey, response: Any) -> Outcome:
    """The one partition result of a state RPC's response as an `Outcome`."""
    try:
        result = response.results[0].partitions[0]
    except (AttributeError, IndexError):
        return Outcome.failed(ErrorCode.UNKNOWN)
    error = _error(result.error_code)
    if error is not ErrorCode.NONE:
        return Outcome(error, result.error_message)
    if api == ApiKey.READ_SHARE_GROUP_STATE:
        state = ShareState(
            snapshot_epoch=0,
            state_epoch=result.state_epoch,
            leader_epoch=-1,
            start_offset=result.start_offset,
            batches=tuple(
                _batches.StateBatch(
                    b.first_offset, b.last_offset, b.delivery_state, b.delivery_count
                )
                for b in result.state_batches
            ),
        )
        return Outcome(state=state)
    if api == ApiKey.READ_SHARE_GROUP_STATE_SUMMARY:
        state = ShareState(
            snapshot_epoch=0,
            state_epoch=result.state_epoch,
            leader_epoch=result.leader_epoch,
            start_offset=result.start_offset,
            delivery_complete_count=int(getattr(result, "delivery_complete_count", -1)),
        )
        return Outcome(state=state)
    return Outcome()

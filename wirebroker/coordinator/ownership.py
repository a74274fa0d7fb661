"""Which partitions of its internal topic a coordinator owns on this broker (pure).

A coordinator (groups: `__consumer_offsets`, transactions: `__transaction_state`) follows the
leadership of its topic's partitions, as Kafka's coordinators do (`onElection` /
`onResignation`, coordinator-common's `CoordinatorRuntime.scheduleLoadOperation` /
`scheduleUnloadOperation`): it serves the keys of a partition only while this broker leads
it, and only once it has replayed the partition's log. `wirebroker.coordinator.runtime` keeps
one `Ownership` per coordinator and mirrors each transition into the coordinator's core
(`begin_loading`, `complete_loading`, `unload`), whose checks give the answers in the last
column ("groups": the keys the partition holds; the transaction coordinator's transactional ids
the same way).

    state     became_leader(p, e)        resigned(p, e?)      its load ends    requests
    NOT_OWNED e < known epoch: stale,    ignored              (stale: result   NOT_COORDINATOR
              ignored; else -> LOADING                        discarded)
              with a new token
    LOADING   e > epoch: epoch recorded, -> NOT_OWNED (groups token current -> COORDINATOR_
              the load goes on; else     dropped)             LOADED; else     LOAD_IN_PROGRESS
              ignored                                         discarded
    LOADED    e > epoch: epoch recorded  -> NOT_OWNED (groups -                served
              (still the leader, nothing dropped, parked
              reloads); else ignored     JoinGroup/SyncGroup
                                         answered
                                         NOT_COORDINATOR)

Epochs: the partition leader epoch of each notification. `Owned.elected_epoch` is the epoch of
the notification that started the ownership (NOT_OWNED -> LOADING); it stays while later
epochs are recorded (the transaction coordinator's coordinator epoch). The highest epoch heard
of per partition is kept across resignations (Kafka's `epochForPartitionId`); a notification
below it is stale and ignored (a resignation without an epoch always applies). Equal epochs
are duplicates: a second `became_leader` with the epoch already owned changes nothing.

Tokens: every NOT_OWNED -> LOADING transition draws a new token. A load captures the token
when it starts and installs its result only while the partition is still LOADING with that
token, so a load overtaken by a resignation (and maybe a new election, which starts its own
load) never installs stale state. An append captures the token too: when its replication wait
fails after the token changed, the partition was lost meanwhile (NOT_COORDINATOR).

The cluster layer must report a lost leadership (`resigned`) before a regained one: a higher
epoch while LOADED is taken as "still the leader" (Kafka's `addLoadingPartition` skips owned
partitions the same way), so nothing reloads.
"""

from __future__ import annotations

import dataclasses
import enum
import itertools
from dataclasses import dataclass

__all__ = ["Owned", "Ownership", "PartitionState"]


class PartitionState(enum.Enum):
    NOT_OWNED = "not owned"
    LOADING = "loading"
    LOADED = "loaded"


@dataclass(frozen=True)
class Owned:
    """An owned partition: its state, the leader epoch it is owned at, its load token, the
    leader epoch its ownership started at."""

    state: PartitionState
    epoch: int
    token: int
    elected_epoch: int


class Ownership:
    """The table of the module docstring, for every partition of one internal topic."""

    def __init__(self) -> None:
        self._owned: dict[int, Owned] = {}
        self._epochs: dict[int, int] = {}
        self._tokens = itertools.count(1)

    # -- queries ------------------------------------------------------------------------------
    def state(self, partition: int) -> PartitionState:
        owned = self._owned.get(partition)
        return PartitionState.NOT_OWNED if owned is None else owned.state

    def get(self, partition: int) -> Owned | None:
        return self._owned.get(partition)

    def token(self, partition: int) -> int | None:
        """The partition's current token (None: not owned)."""
        owned = self._owned.get(partition)
        return None if owned is None else owned.token

    def epoch(self, partition: int) -> int | None:
        """The highest leader epoch heard of for `partition` (None: never heard of)."""
        return self._epochs.get(partition)

    def owned(self) -> list[int]:
        """Owned partitions (LOADING or LOADED), in order."""
        return sorted(self._owned)

    def is_current_load(self, partition: int, token: int) -> bool:
        """Whether a load that started with `token` may still install its result."""
        owned = self._owned.get(partition)
        return owned is not None and owned.state is PartitionState.LOADING and owned.token == token

    # -- transitions --------------------------------------------------------------------------
    def became_leader(self, partition: int, epoch: int) -> int | None:
        """This broker leads `partition` at `epoch`: the token of the load to start (the
        partition is now LOADING), or None when nothing is to be loaded (stale, duplicate, or
        already owned)."""
        known = self._epochs.get(partition)
        if known is not None and epoch < known:
            return None
        self._epochs[partition] = epoch
        owned = self._owned.get(partition)
        if owned is not None:
            if epoch > owned.epoch:
                self._owned[partition] = dataclasses.replace(owned, epoch=epoch)
            return None
        token = next(self._tokens)
        self._owned[partition] = Owned(PartitionState.LOADING, epoch, token, epoch)
        return token

    def resigned(self, partition: int, epoch: int | None = None) -> bool:
        """This broker no longer leads `partition` (`epoch`: the partition's new leader epoch,
        when known). True when it was owned and must be unloaded."""
        if epoch is not None:
            known = self._epochs.get(partition)
            if known is not None and epoch < known:
                return False
            self._epochs[partition] = epoch
        return self._owned.pop(partition, None) is not None

    def finish_load(self, partition: int, token: int) -> bool:
        """LOADING with `token` -> LOADED (True); False for a stale load (nothing changes)."""
        if not self.is_current_load(partition, token):
            return False
        owned = self._owned[partition]
        self._owned[partition] = dataclasses.replace(owned, state=PartitionState.LOADED)
        return True

    def drop(self, partition: int) -> None:
        """Forget `partition` (a failed load or reload): NOT_OWNED until the next election."""
        self._owned.pop(partition, None)

    def drop_all(self) -> list[int]:
        """Forget every partition (shutdown); the ones that were owned."""
        dropped = self.owned()
        self._owned.clear()
        return dropped

"""Kafka's replication rules as pure functions: ISR, high watermark, truncation (leader
election is the controller's: `wirebroker.metadata.elections`).

No I/O, no clock of their own (`now_ms` is an argument), no state beyond what is passed in:
the cluster's leader and controller apply them (issue 12). Each follows the Kafka 3.9 code
named in its docstring (facts: shared/reference/replication.md).

Invariants they keep:
- a leader is only ever chosen from the ISR, in assignment order, unless unclean election is
  enabled (then from any live replica, with the ISR reset to the leader alone);
- the high watermark never decreases and never passes an ISR member's log end offset;
- an ISR member is dropped only when it has not caught up within `replica.lag.time.max.ms`;
  a follower rejoins only with its log end offset at the high watermark and within the
  leader's current epoch;
- a follower truncates to no more than both logs agree on for the diverging epoch (KIP-101/279);
- a DeleteRecords is complete only when every live replica's log start reached it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

__all__ = [
    "FollowerState",
    "high_watermark",
    "is_caught_up",
    "low_watermark",
    "may_join_isr",
    "out_of_sync",
    "own_end_offset_below",
    "record_fetch",
    "truncate_on_fetch_offset",
    "truncation_offset",
]


@dataclass(frozen=True)
class FollowerState:
    """What a leader knows of one follower (Kafka's Replica): offsets from its last fetch.
    -1 is "never" (or unknown). A new leader starts its ISR members with `last_caught_up_ms =
    now` (Kafka's resetReplicaState), so they get `replica.lag.time.max.ms` to fetch before
    being dropped; `log_start_offset` is the one the follower's last Fetch carried."""

    replica_id: int
    log_end_offset: int = -1
    last_fetch_ms: int = -1
    last_fetch_leader_leo: int = -1
    last_caught_up_ms: int = -1
    log_start_offset: int = -1


def record_fetch(
    state: FollowerState,
    fetch_offset: int,
    leader_leo: int,
    now_ms: int,
    *,
    log_start_offset: int | None = None,
) -> FollowerState:
    """The state after a follower fetch at `fetch_offset` (Kafka's updateFetchStateOrThrow):
    caught up now when it asked for the leader's end; caught up as of its previous fetch when
    it asked for at least what the leader's end was then. `log_start_offset`: the one the
    fetch carried (None: unchanged)."""
    if fetch_offset >= leader_leo:
        caught_up = max(state.last_caught_up_ms, now_ms)
    elif fetch_offset >= state.last_fetch_leader_leo >= 0:
        caught_up = max(state.last_caught_up_ms, state.last_fetch_ms)
    else:
        caught_up = state.last_caught_up_ms
    return FollowerState(  # not dataclasses.replace: this runs per partition per fetch
        state.replica_id,
        fetch_offset,
        now_ms,
        leader_leo,
        caught_up,
        state.log_start_offset if log_start_offset is None else log_start_offset,
    )


def is_caught_up(state: FollowerState, leader_leo: int, now_ms: int, lag_ms: int) -> bool:
    """At the leader's end, or caught up within the last `replica.lag.time.max.ms`."""
    if state.log_end_offset == leader_leo:
        return True
    return state.last_caught_up_ms >= 0 and now_ms - state.last_caught_up_ms <= lag_ms


def out_of_sync(
    isr: Iterable[int],
    leader: int,
    followers: Mapping[int, FollowerState],
    leader_leo: int,
    now_ms: int,
    lag_ms: int,
) -> list[int]:
    """ISR members to drop (Kafka's getOutOfSyncReplicas; checked every lag_ms / 2, so a
    stopped follower leaves after 1-1.5x lag_ms)."""
    return [
        r
        for r in isr
        if r != leader
        and not is_caught_up(followers.get(r, FollowerState(r)), leader_leo, now_ms, lag_ms)
    ]


def low_watermark(
    leader_log_start: int,
    followers: Iterable[FollowerState],
    is_alive: Callable[[int], bool],
) -> int:
    """Kafka's Partition.lowWatermarkIfLeader: the least log start offset of the leader and of
    every follower on a live broker (`is_alive(replica_id)`); a live follower not heard from
    since this leadership began counts as -1, so nothing is complete until it has fetched. A
    DeleteRecords to offset N is complete once this reaches N (DelayedDeleteRecords)."""
    low = leader_log_start
    for state in followers:
        if state.log_start_offset < low and is_alive(state.replica_id):
            low = state.log_start_offset
    return low


def may_join_isr(state: FollowerState, high_watermark: int, epoch_start_offset: int) -> bool:
    """A follower outside the ISR rejoins once its end reaches the high watermark and the start
    of the leader's current epoch (Kafka's isFollowerInSync + epoch check)."""
    return state.log_end_offset >= high_watermark and state.log_end_offset >= epoch_start_offset


def high_watermark(
    current: int,
    leader_leo: int,
    isr: Iterable[int],
    leader: int,
    followers: Mapping[int, FollowerState],
    now_ms: int,
    lag_ms: int,
    *,
    min_isr: int = 1,
) -> int:
    """Kafka's maybeIncrementLeaderHW: the least log end offset of the leader, every ISR member
    and every caught-up follower outside it; never below `current`; not advanced while the ISR
    is smaller than `min.insync.replicas` (3.9)."""
    members = set(isr)
    if len(members) < min_isr:
        return current
    candidate = leader_leo
    for replica in (members | followers.keys()) - {leader}:
        state = followers.get(replica, FollowerState(replica))  # unheard of: end unknown (-1)
        if replica in members or is_caught_up(state, leader_leo, now_ms, lag_ms):
            candidate = min(candidate, state.log_end_offset)
    return max(current, candidate)


def truncation_offset(
    leader_epoch: int,
    leader_end_offset: int,
    own_epochs: Sequence[tuple[int, int]],
    own_leo: int,
    own_hw: int,
) -> int | None:
    """Where a follower truncates after OffsetForLeaderEpoch answered (`leader_epoch`,
    `leader_end_offset`) for its latest epoch (Kafka's getOffsetTruncationState):
    - an undefined end offset (-1): to its own high watermark;
    - no epoch in the answer (an old leader): min(leader's end, its log end offset);
    - an epoch it does not have: None -- truncate to the end of its largest epoch below it,
      then ask again for that one (`own_end_offset_below`);
    - else: min(leader's end, its own end of that epoch, its log end offset).
    `own_epochs` is its leader-epoch cache, (epoch, start offset) ascending."""
    if leader_end_offset < 0:
        return min(own_hw, own_leo)
    if leader_epoch < 0:
        return min(leader_end_offset, own_leo)
    epochs = [e for e, _ in own_epochs]
    if leader_epoch not in epochs:
        return None
    i = epochs.index(leader_epoch)
    own_end = own_epochs[i + 1][1] if i + 1 < len(own_epochs) else own_leo
    return min(leader_end_offset, own_end, own_leo)


def own_end_offset_below(epoch: int, own_epochs: Sequence[tuple[int, int]], own_leo: int) -> int:
    """The end of the follower's largest epoch below `epoch` (where it truncates before asking
    again when the leader answered an epoch it lacks); the start of its first epoch when it has
    none below (nothing before it is known to agree)."""
    below = [(e, s) for e, s in own_epochs if e < epoch]
    if not below:
        return own_epochs[0][1] if own_epochs else own_leo
    idx = own_epochs.index(below[-1])
    return own_epochs[idx + 1][1] if idx + 1 < len(own_epochs) else own_leo


def truncate_on_fetch_offset(
    leader_epoch: int,
    leader_end_offset: int,
    own_epochs: Sequence[tuple[int, int]],
    own_leo: int,
    own_hw: int,
) -> int:
    """Where a follower truncates when its leader answered a fetch with a diverging epoch
    (`leader_epoch`, `leader_end_offset`) (Kafka 3.x truncation on fetch): `truncation_offset`,
    or, for an epoch the follower lacks, the end of its largest epoch below it (it then fetches
    again with that epoch as its last fetched one, and the leader answers for it)."""
    found = truncation_offset(leader_epoch, leader_end_offset, own_epochs, own_leo, own_hw)
    if found is None:
        return own_end_offset_below(leader_epoch, own_epochs, own_leo)
    return found

"""A member's next state toward its target assignment (Kafka's CurrentAssignmentBuilder).

`reconcile(member, target, target_epoch, owned, owner_of)`:
- STABLE at `target_epoch`: unchanged.
- UNREVOKED_PARTITIONS: unchanged while the member still owns a partition pending
  revocation (or did not say what it owns: `owned` None); once it reports them gone, the
  next assignment is computed.
- otherwise (STABLE at an older epoch, UNRELEASED_PARTITIONS) the next assignment:
    kept       = current & target
    revoking   = current - target
    assigning  = target - current, less what another member still owns (unreleased)
  with revoking partitions the member still owns -> UNREVOKED_PARTITIONS at its own epoch
  (assigned = kept, pending_revocation = revoking); else it moves to `target_epoch` with
  assigned = kept + assigning, in UNRELEASED_PARTITIONS while some target partition is
  still owned elsewhere, STABLE otherwise.
The epoch only moves forward; `previous_member_epoch` keeps the one before.
"""

from __future__ import annotations

from collections.abc import Callable

from wirebroker.group.consumer.model import (
    Assignment,
    ConsumerMember,
    MemberState,
    TopicKey,
    freeze,
)

OwnerOf = Callable[[TopicKey, int], str | None]


def reconcile(
    member: ConsumerMember,
    target: Assignment,
    target_epoch: int,
    owned: Assignment | None,
    owner_of: OwnerOf,
) -> ConsumerMember:
    if member.state is MemberState.STABLE and member.member_epoch == target_epoch:
        return member
    if member.state is MemberState.UNREVOKED_PARTITIONS and _still_owns(
        owned, member.pending_revocation
    ):
        return member
    return _next_assignment(member, target, target_epoch, owned, owner_of)


def _still_owns(owned: Assignment | None, revoking: Assignment) -> bool:
    if owned is None:
        return True
    return any(owned.get(t, frozenset()) & ps for t, ps in revoking.items())


def _next_assignment(
    member: ConsumerMember,
    target: Assignment,
    target_epoch: int,
    owned: Assignment | None,
    owner_of: OwnerOf,
) -> ConsumerMember:
    kept: dict[TopicKey, frozenset[int]] = {}
    revoking: dict[TopicKey, frozenset[int]] = {}
    assigning: dict[TopicKey, frozenset[int]] = {}
    unreleased = False
    for topic in set(target) | set(member.assigned):
        want = target.get(topic, frozenset())
        have = member.assigned.get(topic, frozenset())
        kept[topic] = have & want
        revoking[topic] = have - want
        free = frozenset(p for p in want - have if owner_of(topic, p) in (None, member.member_id))
        unreleased = unreleased or len(free) != len(want - have)
        assigning[topic] = free
    kept, revoking, assigning = freeze(kept), freeze(revoking), freeze(assigning)
    if revoking and _still_owns(owned, revoking):
        return member.with_(
            state=MemberState.UNREVOKED_PARTITIONS,
            assigned=kept,
            pending_revocation=revoking,
        )
    state = MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE
    merged = {
        t: kept.get(t, frozenset()) | assigning.get(t, frozenset())
        for t in set(kept) | set(assigning)
    }
    return _at_epoch(member, target_epoch).with_(
        state=state, assigned=freeze(merged), pending_revocation={}
    )


def _at_epoch(member: ConsumerMember, epoch: int) -> ConsumerMember:
    if member.member_epoch == epoch:
        return member
    return member.with_(member_epoch=epoch, previous_member_epoch=member.member_epoch)

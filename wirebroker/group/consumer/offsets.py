"""OffsetCommit / TxnOffsetCommit / OffsetFetch checks for KIP-848 consumer groups (Kafka's
ConsumerGroup.validateOffsetCommit / validateOffsetFetch), as Kafka 4.4 answers them:
    commit  epoch < 0 while the group has no members: a simple commit, accepted;
            (transactional) epoch < 0 and no member id: accepted;
            an unknown member: UNKNOWN_MEMBER_ID;
            a consumer-protocol member below OffsetCommit v9: UNSUPPORTED_VERSION;
            an epoch other than the member's: STALE_MEMBER_EPOCH (ILLEGAL_GENERATION for
            TxnOffsetCommit and for a classic member, whose generation is its epoch).
    fetch   no member id (admin, v8 and older): served; else the member must exist at that
            epoch (UNKNOWN_MEMBER_ID, STALE_MEMBER_EPOCH; ILLEGAL_GENERATION for a classic
            member).
A commit is not a heartbeat for these members (KIP-848)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from protocol.errors import ErrorCode
from wirebroker.group.consumer.model import ConsumerGroup

if TYPE_CHECKING:
    from wirebroker.group.messages import CommitRequest, TxnCommitRequest
    from wirebroker.group.state import CoordinatorState


def consumer_commit_error(
    group: ConsumerGroup, req: CommitRequest | TxnCommitRequest, *, transactional: bool
) -> ErrorCode:
    epoch = req.generation_id
    if epoch < 0 and not group.members:
        return ErrorCode.NONE
    if transactional and epoch < 0 and req.member_id == "":
        return ErrorCode.NONE
    member = group.members.get(req.member_id)
    if member is None:
        return ErrorCode.UNKNOWN_MEMBER_ID
    if (
        not transactional
        and not member.uses_classic
        and not getattr(req, "member_epoch_version", True)
    ):
        return ErrorCode.UNSUPPORTED_VERSION
    if epoch != member.member_epoch:
        if transactional or member.uses_classic:
            return ErrorCode.ILLEGAL_GENERATION
        return ErrorCode.STALE_MEMBER_EPOCH
    return ErrorCode.NONE


def consumer_fetch_error(
    state: CoordinatorState, group_id: str, member_id: str | None, member_epoch: int
) -> ErrorCode:
    group = state.consumer_groups.get(group_id)
    if group is None or member_id is None:
        return ErrorCode.NONE
    member = group.members.get(member_id)
    if member is None:
        return ErrorCode.UNKNOWN_MEMBER_ID
    if member_epoch != member.member_epoch:
        if member.uses_classic:
            return ErrorCode.ILLEGAL_GENERATION
        return ErrorCode.STALE_MEMBER_EPOCH
    return ErrorCode.NONE

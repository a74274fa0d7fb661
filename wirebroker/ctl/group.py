"""`wirebroker group list|describe|reset-offsets|delete` (admin client).

describe, per group: state, protocol type and assignor, the members (id, client id, host,
assigned partitions) and one row per partition that is committed or assigned: committed
offset, log end offset (the high watermark), lag = log end - committed (None when nothing is
committed), and the member it is assigned to. A group the coordinator does not know (state
Dead, no offsets) is an error, as in kafka-consumer-groups ("does not exist").

reset-offsets follows kafka-consumer-groups: the new offset of every selected partition is
computed (earliest / latest / N / first offset at a time / committed + N), clamped to the
partition's [earliest, latest], and shown; only `--execute` commits them (OffsetCommit with
generation -1, as the Admin API does), and only when the group has no members (Empty or
unknown), else the coordinator would reject the commit or the members would overwrite it.

JSON shapes: list [{"group", "state", "protocol_type"}];
describe [{"group", "state", "protocol_type", "protocol", "coordinator", "members": [{"member_id",
"client_id", "host", "assignment": [[topic, partition]]}], "offsets": [{"topic", "partition",
"committed", "log_end", "lag", "member_id"}]}];
reset-offsets {"group", "executed", "offsets": [{"topic", "partition", "current", "new"}]};
delete [{"group", "ok", "error"}].
"""

from __future__ import annotations

import argparse
from typing import Any

from wirebroker.ctl import CliError
from wirebroker.ctl._kafka import admin, parse_timestamp, partition_offsets, topic_metadata
from wirebroker.ctl._output import emit_json, note, table

_INACTIVE = ("Empty", "Dead", "")


def list_groups(args: argparse.Namespace) -> int:
    with admin(args) as client:
        groups = client.list_groups()
    rows = sorted(
        (
            {
                "group": g["group_id"],
                "state": g.get("group_state"),
                "protocol_type": g.get("protocol_type"),
            }
            for g in groups
        ),
        key=lambda g: g["group"],
    )
    if args.format == "json":
        emit_json(rows)
    else:
        table(
            ["group", "state", "type"], [[r["group"], r["state"], r["protocol_type"]] for r in rows]
        )
    return 0


def _assignment(member: Any) -> list[tuple[str, int]]:
    """The (topic, partition) pairs of a member's decoded ConsumerProtocolAssignment (a dict
    after kafka-python's to_dict, or the object); [] for another protocol's bytes."""
    decoded = member.get("member_assignment")
    if not decoded or isinstance(decoded, bytes | bytearray):
        return []
    if isinstance(decoded, dict):
        topics = decoded.get("assigned_partitions") or []
    else:
        topics = getattr(decoded, "assigned_partitions", None) or []
    pairs: list[tuple[str, int]] = []
    for topic in topics:
        if isinstance(topic, dict):
            name, partitions = topic.get("topic"), topic.get("partitions") or []
        elif isinstance(topic, tuple | list):
            name, partitions = topic[0], topic[1]
        else:
            name, partitions = topic.topic, topic.partitions
        pairs.extend((str(name), int(p)) for p in partitions)
    return sorted(pairs)


def _describe_one(client: Any, group_id: str, found: dict[str, Any]) -> dict[str, Any]:
    from kafka.admin import OffsetSpec

    info = found.get(group_id) or {}
    if info.get("error") and "GroupIdNotFound" in info["error"]:
        raise CliError(f"group {group_id!r} does not exist")
    if info.get("error"):
        raise CliError(f"group {group_id!r}: {info['error']}")
    committed = client.list_group_offsets({group_id: None}).get(group_id, {})
    state = info.get("group_state") or ""
    if state == "Dead" and not committed:
        raise CliError(f"group {group_id!r} does not exist")
    members = []
    owner: dict[tuple[str, int], str] = {}
    for member in info.get("members", []):
        assignment = _assignment(member)
        for pair in assignment:
            owner[pair] = member["member_id"]
        members.append(
            {
                "member_id": member["member_id"],
                "client_id": member.get("client_id"),
                "host": member.get("client_host"),
                "assignment": [list(p) for p in assignment],
            }
        )
    from kafka import TopicPartition

    pairs = sorted({(tp.topic, tp.partition) for tp in committed} | set(owner))
    tps = [TopicPartition(t, p) for t, p in pairs]
    log_end = partition_offsets(client, tps, OffsetSpec.LATEST)
    offsets = []
    for tp in tps:
        mark = committed.get(tp)
        current = mark.offset if mark is not None and mark.offset >= 0 else None
        end = log_end.get(tp)
        offsets.append(
            {
                "topic": tp.topic,
                "partition": tp.partition,
                "committed": current,
                "log_end": end,
                "lag": end - current if end is not None and current is not None else None,
                "member_id": owner.get((tp.topic, tp.partition)),
            }
        )
    return {
        "group": group_id,
        "state": state or None,
        "protocol_type": info.get("protocol_type"),
        "protocol": info.get("protocol_data") or None,
        "members": members,
        "offsets": offsets,
    }


def describe(args: argparse.Namespace) -> int:
    names = list(dict.fromkeys(args.groups))
    with admin(args) as client:
        found = client.describe_groups(names)
        documents = [_describe_one(client, name, found) for name in names]
    if args.format == "json":
        emit_json(documents)
        return 0
    for i, doc in enumerate(documents):
        if i:
            print()
        total_lag = sum(o["lag"] or 0 for o in doc["offsets"])
        table(
            ["group", "state", "type", "assignor", "members", "total lag"],
            [
                [
                    doc["group"],
                    doc["state"],
                    doc["protocol_type"],
                    doc["protocol"],
                    len(doc["members"]),
                    total_lag,
                ]
            ],
        )
        if doc["members"]:
            print()
            table(
                ["member id", "client id", "host", "partitions"],
                [
                    [
                        m["member_id"],
                        m["client_id"],
                        m["host"],
                        ", ".join(f"{t}-{p}" for t, p in m["assignment"]) or "-",
                    ]
                    for m in doc["members"]
                ],
                title="MEMBERS",
            )
        print()
        table(
            ["topic", "partition", "current-offset", "log-end-offset", "lag", "member id"],
            [
                [o["topic"], o["partition"], o["committed"], o["log_end"], o["lag"], o["member_id"]]
                for o in doc["offsets"]
            ],
            title="OFFSETS",
        )
    return 0


def _selected_partitions(
    client: Any, args: argparse.Namespace, committed: dict[Any, Any]
) -> list[Any]:
    from kafka import TopicPartition

    if args.all_topics:
        if not committed:
            raise CliError(f"group {args.group!r} has no committed offsets: name a --topic")
        return sorted(committed, key=lambda tp: (tp.topic, tp.partition))
    selected: list[Any] = []
    for item in args.topic:
        name, _, listed = item.partition(":")
        meta = topic_metadata(client, [name])[name]
        known = {p["partition_index"] for p in meta["partitions"]}
        if listed:
            try:
                wanted = [int(p) for p in listed.split(",") if p.strip()]
            except ValueError:
                raise CliError(f"bad --topic {item!r}: expected TOPIC:P,P,...", code=2) from None
            for p in wanted:
                if p not in known:
                    raise CliError(f"topic {name!r} has no partition {p} (it has {len(known)})")
        else:
            wanted = sorted(known)
        selected.extend(TopicPartition(name, p) for p in wanted)
    return list(dict.fromkeys(selected))


def reset_offsets(args: argparse.Namespace) -> int:
    from kafka.admin import OffsetSpec, OffsetTimestamp
    from kafka.structs import OffsetAndMetadata

    timestamp = parse_timestamp(args.to_datetime) if args.to_datetime is not None else None
    with admin(args) as client:
        info = client.describe_groups([args.group]).get(args.group) or {}
        state = info.get("group_state") or ""
        if args.execute and (state not in _INACTIVE or info.get("members")):
            raise CliError(
                f"group {args.group!r} is {state} with {len(info.get('members', []))} members: "
                "offsets can only be reset while it has none (stop its consumers first)"
            )
        committed = client.list_group_offsets({args.group: None}).get(args.group, {})
        tps = _selected_partitions(client, args, committed)
        earliest = partition_offsets(client, tps, OffsetSpec.EARLIEST)
        latest = partition_offsets(client, tps, OffsetSpec.LATEST)
        at_time: dict[Any, int | None] = {}
        if timestamp is not None:
            at_time = partition_offsets(client, tps, OffsetTimestamp(timestamp))
        rows = []
        for tp in tps:
            low, high = earliest.get(tp), latest.get(tp)
            if low is None or high is None:
                raise CliError(f"cannot read the offsets of {tp.topic}-{tp.partition}")
            mark = committed.get(tp)
            current = mark.offset if mark is not None and mark.offset >= 0 else None
            if args.to_earliest:
                target = low
            elif args.to_latest:
                target = high
            elif args.to_offset is not None:
                target = args.to_offset
            elif timestamp is not None:
                hit = at_time.get(tp)
                target = hit if hit is not None else high
            else:
                target = (current if current is not None else high) + args.shift_by
            rows.append(
                {
                    "topic": tp.topic,
                    "partition": tp.partition,
                    "current": current,
                    "new": min(max(target, low), high),
                }
            )
        if args.execute:
            result = client.alter_group_offsets(
                args.group,
                {
                    tp: OffsetAndMetadata(row["new"], "", None)
                    for tp, row in zip(tps, rows, strict=True)
                },
            )
            failures = [
                f"{tp.topic}-{tp.partition}: {err.__name__}"
                for tp, err in result.items()
                if err.errno
            ]
            if failures:
                raise CliError(f"group {args.group!r}: reset failed: {'; '.join(failures)}")
    if args.format == "json":
        emit_json({"group": args.group, "executed": bool(args.execute), "offsets": rows})
    else:
        table(
            ["group", "topic", "partition", "current-offset", "new-offset"],
            [[args.group, r["topic"], r["partition"], r["current"], r["new"]] for r in rows],
        )
    if not args.execute:
        note("dry run: nothing was committed; add --execute to apply these offsets")
    return 0


def delete(args: argparse.Namespace) -> int:
    names = list(dict.fromkeys(args.groups))
    with admin(args) as client:
        result = client.delete_groups(names)
    rows = [
        {
            "group": name,
            "ok": result.get(name) == "OK",
            "error": None if result.get(name) == "OK" else result.get(name, "no answer"),
        }
        for name in names
    ]
    if args.format == "json":
        emit_json(rows)
    else:
        table(
            ["group", "status"],
            [[r["group"], "deleted" if r["ok"] else f"FAILED {r['error']}"] for r in rows],
        )
    return 0 if all(r["ok"] for r in rows) else 1

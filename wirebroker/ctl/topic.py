"""`wirebroker topic create|list|describe|delete|alter-config|add-partitions` (admin client).

JSON shapes (`--format json`):
    create/delete   [{"topic", "ok", "error"}]          (error: null or "ErrorName: message")
    list            [{"topic", "partitions", "replication_factor", "internal"}]
    describe        [{"topic", "topic_id", "internal",
                      "partitions": [{"partition", "leader", "leader_epoch", "replicas", "isr",
                                      "offline_replicas", "earliest", "latest"}],
                      "configs": {KEY: {"value", "source", "read_only", "sensitive"}}}]
    alter-config    {"topic", "set": {KEY: VALUE}, "deleted": [KEY]}
    add-partitions  {"topic", "partitions_before", "partitions"}
A command whose items failed prints them all and exits 1.
"""

from __future__ import annotations

import argparse
from typing import Any

from wirebroker.ctl import CliError
from wirebroker.ctl._kafka import (
    admin,
    error_text,
    partition_offsets,
    topic_metadata,
)
from wirebroker.ctl._output import emit_json, note, table

_TOPIC_EXISTS = 36
_UNKNOWN_TOPIC = 3


def _results(args: argparse.Namespace, rows: list[dict[str, Any]], verb: str) -> int:
    if args.format == "json":
        emit_json(rows)
    else:
        table(
            ["topic", "status"],
            [[r["topic"], verb if r["ok"] else f"FAILED {r['error']}"] for r in rows],
        )
    return 0 if all(r["ok"] for r in rows) else 1


def create(args: argparse.Namespace) -> int:
    spec: dict[str, Any] = {}
    if args.partitions is not None:
        spec["num_partitions"] = args.partitions
    if args.replication_factor is not None:
        spec["replication_factor"] = args.replication_factor
    if args.config:
        spec["configs"] = dict(args.config)
    with admin(args) as client:
        response = client.create_topics(
            {name: dict(spec) for name in dict.fromkeys(args.topics)}, raise_errors=False
        )
    rows = []
    for item in response["topics"]:
        code = item["error_code"]
        ok = code == 0 or (code == _TOPIC_EXISTS and args.if_not_exists)
        rows.append(
            {
                "topic": item["name"],
                "ok": ok,
                "error": None if code == 0 else error_text(code, item.get("error_message")),
            }
        )
    return _results(args, rows, "created")


def delete(args: argparse.Namespace) -> int:
    with admin(args) as client:
        response = client.delete_topics(list(dict.fromkeys(args.topics)), raise_errors=False)
    rows = []
    for item in response["topics"]:
        code = item["error_code"]
        ok = code == 0 or (code == _UNKNOWN_TOPIC and args.if_exists)
        rows.append(
            {
                "topic": item["name"],
                "ok": ok,
                "error": None if code == 0 else error_text(code, item.get("error_message")),
            }
        )
    return _results(args, rows, "deleted")


def list_topics(args: argparse.Namespace) -> int:
    with admin(args) as client:
        topics = client.describe_topics(None)
    rows = []
    for t in sorted(topics, key=lambda t: t["name"] or ""):
        if t["is_internal"] and not args.internal:
            continue
        partitions = t["partitions"]
        rf = max((len(p["replica_nodes"]) for p in partitions), default=0)
        rows.append(
            {
                "topic": t["name"],
                "partitions": len(partitions),
                "replication_factor": rf,
                "internal": bool(t["is_internal"]),
            }
        )
    if args.format == "json":
        emit_json(rows)
    else:
        table(
            ["name", "partitions", "replicas"],
            [[r["topic"], r["partitions"], r["replication_factor"]] for r in rows],
        )
    return 0


def describe(args: argparse.Namespace) -> int:
    names = list(dict.fromkeys(args.topics))
    documents = _describe_documents(args, names)
    if args.format == "json":
        emit_json(documents)
        return 0
    for i, doc in enumerate(documents):
        if i:
            print()
        _print_description(args, doc)
    return 0


def _describe_documents(args: argparse.Namespace, names: list[str]) -> list[dict[str, Any]]:
    """One document per topic: its partitions (leader, replicas, ISR, offsets) and configs."""
    from kafka import TopicPartition
    from kafka.admin import ConfigResource, ConfigResourceType, OffsetSpec

    with admin(args) as client:
        meta = topic_metadata(client, names)
        tps = [
            TopicPartition(name, p["partition_index"])
            for name in names
            for p in meta[name]["partitions"]
        ]
        earliest: dict[Any, int | None] = {}
        latest: dict[Any, int | None] = {}
        if not args.no_offsets:
            earliest = partition_offsets(client, tps, OffsetSpec.EARLIEST)
            latest = partition_offsets(client, tps, OffsetSpec.LATEST)
        configs: dict[str, dict[str, Any]] = {}
        if not args.no_configs:
            found = client.describe_configs(
                [ConfigResource(ConfigResourceType.TOPIC, name) for name in names],
                config_filter="all" if args.all_configs else "modified",
            )
            configs = found.get("topic", {})
    documents = []
    for name in names:
        partitions = []
        for p in sorted(meta[name]["partitions"], key=lambda p: p["partition_index"]):
            tp = TopicPartition(name, p["partition_index"])
            partitions.append(
                {
                    "partition": p["partition_index"],
                    "leader": p["leader_id"],
                    "leader_epoch": p.get("leader_epoch"),
                    "replicas": p["replica_nodes"],
                    "isr": p["isr_nodes"],
                    "offline_replicas": p.get("offline_replicas", []),
                    "earliest": earliest.get(tp),
                    "latest": latest.get(tp),
                }
            )
        documents.append(
            {
                "topic": name,
                "topic_id": meta[name].get("topic_id"),
                "internal": bool(meta[name]["is_internal"]),
                "partitions": partitions,
                "configs": {
                    key: {
                        "value": c.get("value"),
                        "source": c.get("config_source"),
                        "read_only": c.get("read_only"),
                        "sensitive": c.get("is_sensitive"),
                    }
                    for key, c in sorted(configs.get(name, {}).items())
                },
            }
        )
    return documents


def _print_description(args: argparse.Namespace, doc: dict[str, Any]) -> None:
    """One topic's SUMMARY, PARTITIONS and CONFIGS tables."""
    rf = max((len(p["replicas"]) for p in doc["partitions"]), default=0)
    table(
        ["name", "topic id", "partitions", "replicas", "internal"],
        [[doc["topic"], doc["topic_id"], len(doc["partitions"]), rf, doc["internal"]]],
        title="SUMMARY",
    )
    print()
    columns = ["partition", "leader", "epoch", "replicas", "isr"]
    if any(p["offline_replicas"] for p in doc["partitions"]):
        columns.append("offline")
    if not args.no_offsets:
        columns += ["earliest", "latest"]
    rows = []
    for p in doc["partitions"]:
        row = [p["partition"], p["leader"], p["leader_epoch"], p["replicas"], p["isr"]]
        if "offline" in columns:
            row.append(p["offline_replicas"])
        if not args.no_offsets:
            row += [p["earliest"], p["latest"]]
        rows.append(row)
    table(columns, rows, title="PARTITIONS")
    if not args.no_configs:
        print()
        table(
            ["key", "value", "source"],
            [
                [key, "*****" if c["sensitive"] else c["value"], c["source"]]
                for key, c in doc["configs"].items()
            ],
            title="CONFIGS" + ("" if args.all_configs else " (set on the topic)"),
        )


def alter_config(args: argparse.Namespace) -> int:
    from kafka.admin import AlterConfigOp, ConfigResource, ConfigResourceType

    if not args.set and not args.delete:
        raise CliError("nothing to change: give --set KEY=VALUE and/or --delete KEY", code=2)
    changes: dict[str, Any] = {key: (AlterConfigOp.SET, value) for key, value in args.set}
    for key in args.delete:
        if key in changes:
            raise CliError(f"{key!r} is both set and deleted", code=2)
        changes[key] = (AlterConfigOp.DELETE, None)
    with admin(args) as client:
        topic_metadata(client, [args.topic])
        result = client.alter_configs(
            [ConfigResource(ConfigResourceType.TOPIC, args.topic, configs=changes)],
            raise_on_unknown=False,
        )
    outcome = result.get("topic", {}).get(args.topic, "OK")
    if outcome != "OK":
        raise CliError(f"topic {args.topic!r}: {outcome}")
    document = {"topic": args.topic, "set": dict(args.set), "deleted": list(args.delete)}
    if args.format == "json":
        emit_json(document)
    else:
        rows = [[key, value, "set"] for key, value in args.set]
        rows += [[key, "-", "deleted"] for key in args.delete]
        table(["key", "value", "change"], rows, title=f"topic {args.topic}")
    return 0


def add_partitions(args: argparse.Namespace) -> int:
    with admin(args) as client:
        before = len(topic_metadata(client, [args.topic])[args.topic]["partitions"])
        total = before + args.num if args.num is not None else args.total
        if total <= before:
            raise CliError(
                f"topic {args.topic!r} has {before} partitions already: --total must be more"
            )
        response = client.create_partitions({args.topic: total}, raise_errors=False)
    for item in response.results:
        if item.error_code:
            raise CliError(
                f"topic {args.topic!r}: {error_text(item.error_code, item.error_message)}"
            )
    document = {"topic": args.topic, "partitions_before": before, "partitions": total}
    if args.format == "json":
        emit_json(document)
    else:
        note(f"topic {args.topic}: {before} -> {total} partitions")
        table(["topic", "partitions"], [[args.topic, total]])
    return 0

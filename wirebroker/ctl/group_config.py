"""`wirebroker group configs|alter-config` (admin client): a group's configs, the GROUP config
resource of Kafka 4 (KIP-848), as `kafka-configs --entity-type groups` shows and changes them.

configs        the group's overrides (`--all-configs`: every group config, defaults included),
               with their source (DYNAMIC_GROUP_CONFIG for an override, DEFAULT_CONFIG or the
               broker config's source for a default); any group name, existing or not
alter-config   set (`-s KEY=VALUE`) and remove (`-d KEY`) overrides in one
               IncrementalAlterConfigs; refused as the broker refuses them (Kafka's text)

JSON shapes (`--format json`):
    configs        {"group", "configs": {KEY: {"value", "source"}}}
    alter-config   {"group", "set": {KEY: VALUE}, "deleted": [KEY]}
"""

from __future__ import annotations

import argparse
from typing import Any

from wirebroker.ctl import CliError
from wirebroker.ctl._kafka import admin
from wirebroker.ctl._output import emit_json, table


def configs(args: argparse.Namespace) -> int:
    from kafka.admin import ConfigResource, ConfigResourceType

    with admin(args) as client:
        found = client.describe_configs(
            [ConfigResource(ConfigResourceType.GROUP, args.group)],
            config_filter="all" if args.all_configs else "modified",
        )
    described = found.get("group", {}).get(args.group, {})
    if isinstance(described, str):  # kafka-python gives a refused resource's error as text
        raise CliError(f"group {args.group!r}: {described}")
    document = {
        "group": args.group,
        "configs": {
            key: {"value": c.get("value"), "source": c.get("config_source")}
            for key, c in sorted(described.items())
        },
    }
    if args.format == "json":
        emit_json(document)
    else:
        table(
            ["key", "value", "source"],
            [[key, c["value"], c["source"]] for key, c in document["configs"].items()],
            title=f"group {args.group}" + ("" if args.all_configs else " (set on the group)"),
        )
    return 0


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
        result = client.alter_configs(
            [ConfigResource(ConfigResourceType.GROUP, args.group, configs=changes)],
            raise_on_unknown=False,
        )
    outcome = result.get("group", {}).get(args.group, "OK")
    if outcome != "OK":
        raise CliError(f"group {args.group!r}: {outcome}")
    document = {"group": args.group, "set": dict(args.set), "deleted": list(args.delete)}
    if args.format == "json":
        emit_json(document)
    else:
        rows = [[key, value, "set"] for key, value in args.set]
        rows += [[key, "-", "deleted"] for key in args.delete]
        table(["key", "value", "change"], rows, title=f"group {args.group}")
    return 0

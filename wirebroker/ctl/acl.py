"""`wirebroker acl`: ACLs through Kafka's own APIs (CreateAcls, DescribeAcls, DeleteAcls), with
kafka-acls' main options, so it works against any Kafka with an authorizer as well as
wirebroker.

    wirebroker acl list [--topic T | --group G | --transactional-id X | --cluster]
                        [--principal P] [--resource-pattern-type any|match|literal|prefixed]
    wirebroker acl add (--allow-principal P | --deny-principal P)... [--host H]
                       [--operation OP]... (--topic T | --group G | --transactional-id X |
                       --cluster) [--resource-pattern-type literal|prefixed]
    wirebroker acl remove   the same options as add; without --operation every operation,
                            without a principal every principal

Operations are Kafka's names (Read, Write, Create, Delete, Alter, Describe, ClusterAction,
DescribeConfigs, AlterConfigs, IdempotentWrite, All; any case, '-' or '_' between words). add's
default operation is All. A refusal by the broker (no authorizer: SECURITY_DISABLED; not
allowed to ALTER the cluster; an invalid ACL) is the command's one-line error, exit 1.

JSON: list -> {"acls": [{"resource_type", "resource_name", "pattern_type", "principal",
"host", "operation", "permission_type"}]}; add / remove -> {"added"|"removed": [same]}.
"""

from __future__ import annotations

import argparse
from typing import Any

from wirebroker.ctl import CliError
from wirebroker.ctl._kafka import admin
from wirebroker.ctl._output import emit_json, table

_HEADERS = ["resource type", "name", "pattern", "principal", "host", "operation", "permission"]


def _enum_name(value: Any) -> str:
    return str(value.name if hasattr(value, "name") else value)


def _operation(name: str) -> Any:
    """Kafka's operation name in any spelling (ClusterAction, cluster-action, CLUSTER_ACTION)."""
    from kafka.admin import ACLOperation

    key = name.replace("-", "").replace("_", "").upper()
    for member in ACLOperation:
        if member.name.replace("_", "") == key and member.name != "ANY":
            return member
    raise CliError(f"unknown operation {name!r}", code=2)


def _resource(args: argparse.Namespace, *, filtering: bool) -> tuple[Any, str | None]:
    from kafka.admin import ResourceType

    chosen = [
        (ResourceType.TOPIC, args.topic),
        (ResourceType.GROUP, args.group),
        (ResourceType.TRANSACTIONAL_ID, args.transactional_id),
        (ResourceType.CLUSTER, "kafka-cluster" if args.cluster else None),
    ]
    named = [(t, n) for t, n in chosen if n is not None]
    if len(named) > 1:
        raise CliError("name one resource: --topic, --group, --transactional-id or --cluster", 2)
    if not named:
        if filtering:
            return ResourceType.ANY, None
        raise CliError("name a resource: --topic, --group, --transactional-id or --cluster", 2)
    return named[0]


def _pattern(args: argparse.Namespace, default: str) -> Any:
    from kafka.admin import ACLResourcePatternType

    return ACLResourcePatternType[(args.resource_pattern_type or default).upper()]


def _row(acl: Any) -> dict[str, Any]:
    pattern = acl.resource_pattern
    return {
        "resource_type": _enum_name(pattern.resource_type),
        "resource_name": pattern.resource_name,
        "pattern_type": _enum_name(pattern.pattern_type),
        "principal": acl.principal,
        "host": acl.host,
        "operation": _enum_name(acl.operation),
        "permission_type": _enum_name(acl.permission_type),
    }


def _show(rows: list[dict[str, Any]], key: str, title: str, args: argparse.Namespace) -> int:
    if args.format == "json":
        emit_json({key: rows})
    else:
        table(_HEADERS, [list(r.values()) for r in rows], title=title)
    return 0


def _principals(args: argparse.Namespace) -> list[tuple[str, Any]]:
    from kafka.admin import ACLPermissionType

    return [(p, ACLPermissionType.ALLOW) for p in args.allow_principal or []] + [
        (p, ACLPermissionType.DENY) for p in args.deny_principal or []
    ]


def list_acls(args: argparse.Namespace) -> int:
    from kafka.admin import ACLFilter, ACLOperation, ACLPermissionType, ResourcePatternFilter

    rtype, name = _resource(args, filtering=True)
    acl_filter = ACLFilter(
        principal=args.principal,
        host=None,
        operation=ACLOperation.ANY,
        permission_type=ACLPermissionType.ANY,
        resource_pattern=ResourcePatternFilter(rtype, name, _pattern(args, "any")),
    )
    with admin(args) as client:
        try:
            acls, _error = client.describe_acls(acl_filter)
        except Exception as exc:
            raise CliError(f"describe ACLs: {type(exc).__name__}: {exc}") from None
    rows = sorted((_row(a) for a in acls), key=lambda r: tuple(str(v) for v in r.values()))
    return _show(rows, "acls", "ACLS", args)


def add(args: argparse.Namespace) -> int:
    from kafka.admin import ACL, ResourcePattern

    rtype, name = _resource(args, filtering=False)
    principals = _principals(args)
    if not principals:
        raise CliError("give --allow-principal or --deny-principal", code=2)
    pattern = ResourcePattern(rtype, name, _pattern(args, "literal"))
    acls = [
        ACL(principal, args.host, _operation(op), permission, pattern)
        for principal, permission in principals
        for op in args.operation or ["All"]
    ]
    with admin(args) as client:
        answer = client.create_acls(acls)
    if answer["failed"]:  # kafka-python: the error class of each refused ACL
        names = sorted({getattr(e, "__name__", type(e).__name__) for e in answer["failed"]})
        raise CliError(f"ACLs not created: {', '.join(names)}")
    return _show([_row(a) for a in answer["succeeded"]], "added", "ADDED", args)


def remove(args: argparse.Namespace) -> int:
    from kafka.admin import ACLFilter, ACLOperation, ACLPermissionType, ResourcePatternFilter

    rtype, name = _resource(args, filtering=False)
    pattern = ResourcePatternFilter(rtype, name, _pattern(args, "literal"))
    principals: list[tuple[str | None, Any]] = list(_principals(args)) or [
        (None, ACLPermissionType.ANY)
    ]
    operations = [_operation(op) for op in args.operation or []] or [ACLOperation.ANY]
    filters = [
        ACLFilter(principal, args.host if principal else None, op, permission, pattern)
        for principal, permission in principals
        for op in operations
    ]
    with admin(args) as client:
        results = client.delete_acls(filters)
    removed = []
    for _filter, deleted, error in results:
        if getattr(error, "errno", None):
            raise CliError(f"ACLs not removed: {type(error).__name__}: {error}")
        removed += [_row(acl) for acl in deleted]
    return _show(removed, "removed", "REMOVED", args)

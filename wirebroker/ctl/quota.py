"""`wirebroker quota`: client quotas through Kafka's own APIs (DescribeClientQuotas,
AlterClientQuotas), so it works against any Kafka 2.6+ as well as wirebroker, as
`kafka-configs --entity-type users/clients` does.

    wirebroker quota list [ENTITY] [--strict]         entities and their quotas
    wirebroker quota set ENTITY KEY=VALUE...          set quotas (producer_byte_rate, ...)
    wirebroker quota remove ENTITY KEY...             remove quotas

ENTITY: `--user NAME` or `--default-user`, and/or `--client-id NAME` or `--default-client-id`
(a user and a client id together: that user's quota for that client id). `list` without one
lists every entity; with one, the entities naming it (all of its types unless --strict).
A refusal by the broker (an unknown key, a fractional byte rate, ...) is the command's
one-line error, exit 1.

JSON: list -> {"quotas": [{"entity": {"user": "alice", "client-id": null}, "values": {...}}]};
set / remove -> {"entity": {...}, "done": true}.
"""

from __future__ import annotations

import argparse
from typing import Any

from wirebroker.ctl import CliError
from wirebroker.ctl._kafka import admin, error_text
from wirebroker.ctl._output import emit_json, table

MATCH_EXACT, MATCH_DEFAULT = 0, 1


def _entity(args: argparse.Namespace) -> list[tuple[str, str | None]]:
    out: list[tuple[str, str | None]] = []
    if args.user is not None or args.default_user:
        out.append(("user", None if args.default_user else args.user))
    if args.client_id is not None or args.default_client_id:
        out.append(("client-id", None if args.default_client_id else args.client_id))
    return out


def _show(entity: list[tuple[str, str | None]]) -> str:
    return ", ".join(f"{t}={'<default>' if n is None else n}" for t, n in entity)


def _send(args: argparse.Namespace, request: Any) -> Any:
    with admin(args) as client:
        manager = client._manager  # kafka-python 3 has no client quota calls: its requests

        async def call() -> Any:
            return await manager.send(request)

        return manager.run(call)


def list_quotas(args: argparse.Namespace) -> int:
    from kafka.protocol.admin import DescribeClientQuotasRequest

    components = [
        (kind, MATCH_DEFAULT if name is None else MATCH_EXACT, name) for kind, name in _entity(args)
    ]
    answer = _send(args, DescribeClientQuotasRequest(components=components, strict=args.strict))
    if answer.error_code:
        raise CliError(error_text(answer.error_code, answer.error_message))
    found = []
    for entry in answer.entries or ():
        entity = sorted((e.entity_type, e.entity_name) for e in entry.entity)
        values = {v.key: v.value for v in entry.values}
        found.append((entity, values))
    found.sort(key=lambda f: [(t, n or "") for t, n in f[0]])
    if args.format == "json":
        emit_json(
            {"quotas": [{"entity": dict(entity), "values": values} for entity, values in found]}
        )
        return 0
    table(
        ["entity", "quota", "value"],
        [
            [_show(entity), k, _number(v)]
            for entity, values in found
            for k, v in sorted(values.items())
        ],
        title="CLIENT QUOTAS",
    )
    return 0


def _number(value: float) -> str:
    return str(int(value)) if value == int(value) else str(value)


def _alter(args: argparse.Namespace, ops: list[tuple[str, float, bool]]) -> int:
    from kafka.protocol.admin import AlterClientQuotasRequest

    entity = _entity(args)
    if not entity:
        raise CliError(
            "name an entity: --user/--default-user and/or --client-id/--default-client-id"
        )
    request = AlterClientQuotasRequest(entries=[(list(entity), ops)], validate_only=False)
    answer = _send(args, request)
    for entry in answer.entries:
        if entry.error_code:
            raise CliError(f"{_show(entity)}: {error_text(entry.error_code, entry.error_message)}")
    if args.format == "json":
        emit_json({"entity": dict(entity), "done": True})
    else:
        table(
            ["entity", "quota", "status"],
            [[_show(entity), k, "removed" if r else _number(v)] for k, v, r in ops],
        )
    return 0


def set_quotas(args: argparse.Namespace) -> int:
    ops = []
    for item in args.values:
        key, sep, value = item.partition("=")
        try:
            number = float(value)
        except ValueError:
            number = float("nan")
        if not sep or number != number:
            raise CliError(f"{item!r}: give KEY=NUMBER (e.g. producer_byte_rate=1048576)")
        ops.append((key.strip(), number, False))
    return _alter(args, ops)


def remove_quotas(args: argparse.Namespace) -> int:
    return _alter(args, [(key, 0.0, True) for key in args.keys])

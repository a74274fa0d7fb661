"""`wirebroker user`: SCRAM users through Kafka's own APIs (AlterUserScramCredentials,
DescribeUserScramCredentials), so it works against any Kafka 2.7+ as well as wirebroker.

    wirebroker user list [USER...]                    users, their mechanisms and iterations
    wirebroker user scram-set USER [-m M] [-p PW] [-i N]   create or replace a credential
    wirebroker user scram-delete USER [-m M]          delete a credential

The password is salted here (kafka-python's upsertion: PBKDF2 with a random salt) and never
sent. A refusal by the broker (too few iterations, a credential that does not exist, ...) is
the command's one-line error, exit 1.

JSON: list -> {"users": [{"user", "credentials": [{"mechanism", "iterations"}]}]};
scram-set / scram-delete -> {"user", "mechanism", "done": true}.
"""

from __future__ import annotations

import argparse
import getpass
import sys
from typing import Any

from wirebroker.ctl import CliError
from wirebroker.ctl._kafka import admin
from wirebroker.ctl._output import emit_json, table


def _mechanism(name: str) -> Any:
    from kafka.admin import ScramMechanism

    return ScramMechanism[name.replace("-", "_")]


def list_users(args: argparse.Namespace) -> int:
    with admin(args) as client:
        found = client.describe_user_scram_credentials(args.users or None)
    users = []
    for user, entry in sorted(found.items()):
        if entry["error"]:
            raise CliError(f"user {user!r}: {entry['error']}")
        credentials = sorted(
            (info["mechanism"].name.replace("_", "-"), info["iterations"])
            for info in entry["credential_infos"]
        )
        users.append(
            {
                "user": user,
                "credentials": [{"mechanism": m, "iterations": i} for m, i in credentials],
            }
        )
    if args.format == "json":
        emit_json({"users": users})
        return 0
    table(
        ["user", "mechanism", "iterations"],
        [[u["user"], c["mechanism"], c["iterations"]] for u in users for c in u["credentials"]],
        title="SCRAM USERS",
    )
    return 0


def _password(args: argparse.Namespace) -> str:
    if args.password is not None:
        return str(args.password)
    if sys.stdin.isatty():
        return getpass.getpass(f"password for {args.user}: ")
    password = sys.stdin.readline().rstrip("\n")
    if not password:
        raise CliError("no password: give --password or a line on stdin")
    return password


def _alter(args: argparse.Namespace, alteration: Any, verb: str) -> int:
    with admin(args) as client:
        answer = client.alter_user_scram_credentials([alteration])
    error = answer.get(args.user)
    if error:
        raise CliError(f"user {args.user!r}: {error}")
    if args.format == "json":
        emit_json({"user": args.user, "mechanism": args.mechanism, "done": True})
    else:
        table(["user", "mechanism", "status"], [[args.user, args.mechanism, verb]])
    return 0


def scram_set(args: argparse.Namespace) -> int:
    from kafka.admin import UserScramCredentialUpsertion

    upsertion = UserScramCredentialUpsertion(
        args.user, _mechanism(args.mechanism), _password(args), iterations=args.iterations
    )
    return _alter(args, upsertion, "set")


def scram_delete(args: argparse.Namespace) -> int:
    from kafka.admin import UserScramCredentialDeletion

    deletion = UserScramCredentialDeletion(args.user, _mechanism(args.mechanism))
    return _alter(args, deletion, "deleted")

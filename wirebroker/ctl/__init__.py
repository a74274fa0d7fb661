"""The client-side commands of `wirebroker`: topics, produce/consume, groups, cluster info, data.

    wirebroker topic create|list|describe|delete|alter-config|add-partitions ...
    wirebroker produce TOPIC / consume TOPIC
    wirebroker group list|describe|reset-offsets|delete|configs|alter-config ...
    wirebroker cluster info
    wirebroker user list|scram-set|scram-delete ...
    wirebroker acl list|add|remove ...
    wirebroker quota list|set|remove ...
    wirebroker dump-log DIR
    wirebroker data path|reset

Every command that talks to a broker takes `-b/--bootstrap HOST:PORT[,...]` (default
$WIREBROKER_BOOTSTRAP, else the local broker 127.0.0.1:9092) and works against any Kafka: the
client side is kafka-python (`KafkaAdminClient`, `KafkaProducer`, `KafkaConsumer`), never the
broker's own code. Output is a table for people (rich) or `--format json` for scripts (one JSON
document on stdout; `consume --format json` writes one JSON object per record per line).

Contract of every command:
    exit 0  success
    exit 1  the command failed: one line `wirebroker: error: ...` on stderr (unknown topic or
            group, an offset out of range, an unreachable bootstrap, a broker error code, ...)
    exit 2  bad usage (argparse's usage message), as for `serve`
Logs of the client library are silenced unless `--debug`.

Layout: this module only builds the argparse subcommands (cheap: nothing heavy is imported, so
`wirebroker serve` starts as fast as before); `run()` imports the implementing module
(`topic`, `records`, `group`, `group_config`, `user`, `acl`, `quota`, `info`, `data`,
`dump_log`) when the command runs, and those import kafka-python and rich. `_kafka` holds the
client plumbing (bootstrap, `--command-config`, error text), `_output` the table/JSON rendering,
`CliError` the one-line failure.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

DEFAULT_BOOTSTRAP = "127.0.0.1:9092"
BOOTSTRAP_ENV = "WIREBROKER_BOOTSTRAP"

#: The top-level commands this package adds (cli.py routes them here).
COMMANDS = (
    "topic",
    "produce",
    "consume",
    "group",
    "user",
    "acl",
    "quota",
    "dump-log",
    "data",
)

_Subparsers = argparse._SubParsersAction


class CliError(Exception):
    """A command failed: `message` is printed as one line, the process exits with `code`."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


def _client_options(*, output: bool = True) -> argparse.ArgumentParser:
    """The options every broker-talking command shares (a parent parser)."""
    common = argparse.ArgumentParser(add_help=False)
    group = common.add_argument_group("connection and output")
    group.add_argument(
        "-b",
        "--bootstrap",
        "--bootstrap-server",  # the spelling of Kafka's own tools
        dest="bootstrap",
        default=os.environ.get(BOOTSTRAP_ENV, DEFAULT_BOOTSTRAP),
        metavar="HOST:PORT[,...]",
        help=f"bootstrap servers (default ${BOOTSTRAP_ENV} or {DEFAULT_BOOTSTRAP})",
    )
    group.add_argument(
        "--timeout",
        type=float,
        default=10.0,
        metavar="S",
        help="seconds to wait for the bootstrap and for each request (default 10)",
    )
    group.add_argument(
        "--command-config",
        metavar="FILE",
        help="client properties, as Kafka's tools take them: security.protocol, "
        "sasl.mechanism, sasl.jaas.config (username, password), ssl.truststore.location (PEM)",
    )
    if output:
        group.add_argument(
            "--format",
            choices=("table", "json"),
            default="table",
            help="table for people (default) or json for scripts",
        )
    group.add_argument("--debug", action="store_true", help="show the client library's logs")
    return common


def _output_option() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--format", choices=("table", "json"), default="table", help="table (default) or json"
    )
    return common


def _key_value(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key, value


def _non_negative(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0: {text!r}")
    return value


def _positive(text: str) -> int:
    value = _non_negative(text)
    if value == 0:
        raise argparse.ArgumentTypeError("must be > 0")
    return value


def add_parsers(commands: _Subparsers) -> None:
    """Add this package's commands to `wirebroker`'s subparsers (see module doc)."""
    client = _client_options()
    _add_topic(commands, client)
    _add_produce(commands)
    _add_consume(commands)
    _add_group(commands, client)
    _add_user(commands, client)
    _add_acl(commands, client)
    _add_quota(commands, client)
    _add_dump_log(commands)
    _add_data(commands)


def add_cluster_info(cluster_commands: _Subparsers) -> None:
    """`wirebroker cluster info` (the launcher stays `wirebroker cluster [--brokers N]`)."""
    info = cluster_commands.add_parser(
        "info",
        parents=[_client_options()],
        help="show the brokers, the controller and the cluster id of a running cluster",
        description="Show the brokers, the controller and the cluster id (DescribeCluster, "
        "Metadata on older brokers).",
    )
    info.set_defaults(handler="info:cluster_info")


def _add_topic(commands: _Subparsers, client: argparse.ArgumentParser) -> None:
    topic = commands.add_parser("topic", help="create, list, describe, alter and delete topics")
    sub = topic.add_subparsers(dest="topic_command", metavar="ACTION", required=True)

    _add_topic_create(sub, client)

    lst = sub.add_parser("list", parents=[client], help="list topics")
    lst.add_argument(
        "-i", "--internal", action="store_true", help="include internal topics (__consumer_...)"
    )
    lst.set_defaults(handler="topic:list_topics")

    describe = sub.add_parser(
        "describe",
        parents=[client],
        help="partitions (leader, replicas, ISR, offsets) and configs of topics",
    )
    describe.add_argument("topics", nargs="+", metavar="TOPIC")
    describe.add_argument(
        "--no-offsets", action="store_true", help="skip the earliest/latest offsets"
    )
    describe.add_argument("--no-configs", action="store_true", help="skip the configs")
    describe.add_argument(
        "--all-configs",
        action="store_true",
        help="every config, defaults included (default: the ones set on the topic)",
    )
    describe.set_defaults(handler="topic:describe")

    delete = sub.add_parser("delete", parents=[client], help="delete topics")
    delete.add_argument("topics", nargs="+", metavar="TOPIC")
    delete.add_argument("--if-exists", action="store_true", help="a missing topic is not an error")
    delete.set_defaults(handler="topic:delete")

    _add_topic_alter(sub, client)


def _add_topic_create(sub: _Subparsers, client: argparse.ArgumentParser) -> None:
    create = sub.add_parser("create", parents=[client], help="create topics")
    create.add_argument("topics", nargs="+", metavar="TOPIC")
    create.add_argument(
        "-p", "--partitions", type=_positive, help="partitions (default: the broker's)"
    )
    create.add_argument(
        "-r", "--replication-factor", type=_positive, help="replicas (default: the broker's)"
    )
    create.add_argument(
        "-c",
        "--config",
        type=_key_value,
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a topic config (repeatable), e.g. -c cleanup.policy=compact",
    )
    create.add_argument(
        "--if-not-exists", action="store_true", help="an existing topic is not an error"
    )
    create.set_defaults(handler="topic:create")


def _add_topic_alter(sub: _Subparsers, client: argparse.ArgumentParser) -> None:
    """`topic alter-config` and `topic add-partitions`."""
    alter = sub.add_parser(
        "alter-config", parents=[client], help="set or remove configs of a topic"
    )
    alter.add_argument("topic", metavar="TOPIC")
    alter.add_argument(
        "-s",
        "--set",
        type=_key_value,
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="set a config (repeatable)",
    )
    alter.add_argument(
        "-d",
        "--delete",
        action="append",
        default=[],
        metavar="KEY",
        help="remove a config, back to the broker default (repeatable)",
    )
    alter.set_defaults(handler="topic:alter_config")

    add = sub.add_parser("add-partitions", parents=[client], help="add partitions to a topic")
    add.add_argument("topic", metavar="TOPIC")
    how = add.add_mutually_exclusive_group(required=True)
    how.add_argument("-n", "--num", type=_positive, help="how many partitions to add")
    how.add_argument("--total", type=_positive, help="the new total number of partitions")
    add.set_defaults(handler="topic:add_partitions")


def _add_produce(commands: _Subparsers) -> None:
    produce = commands.add_parser(
        "produce",
        parents=[_client_options()],
        help="send lines of stdin or a file as records",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=(
            "Send each line (without its newline) of stdin, or of --file, as one record.\n"
            "A summary goes to stderr at the end (stdout with --format json); exit 1 when\n"
            "a record was not acknowledged."
        ),
        epilog=(
            "examples:\n"
            "  seq 10 | wirebroker produce numbers\n"
            "  printf 'k1:v1\\nk2:v2\\n' | wirebroker produce t -k : -H origin=cli --acks 1"
        ),
    )
    produce.add_argument("topic", metavar="TOPIC")
    produce.add_argument("-f", "--file", help="read lines from this file (default stdin)")
    produce.add_argument(
        "-k",
        "--key-separator",
        metavar="SEP",
        help="split each line at the first SEP into key and value (a line without SEP is an error)",
    )
    produce.add_argument(
        "-H",
        "--header",
        type=_key_value,
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a header on every record (repeatable)",
    )
    produce.add_argument(
        "-p", "--partition", type=_non_negative, help="this partition (default: by key)"
    )
    produce.add_argument(
        "-z",
        "--compression",
        choices=("none", "gzip", "snappy", "lz4", "zstd"),
        default="none",
        help="batch compression (default none)",
    )
    produce.add_argument(
        "--acks",
        choices=("0", "1", "all", "-1"),
        default="all",
        help="acknowledgements to wait for (default all)",
    )
    _add_no_progress(produce)
    produce.set_defaults(handler="records:produce")


def _add_consume(commands: _Subparsers) -> None:
    consume = commands.add_parser(
        "consume",
        parents=[_client_options(output=False)],
        help="print the records of a topic",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=(
            "Print records, one per line: the value (default), a --template, or --format json\n"
            "(one object per record: topic, partition, offset, timestamp, key, value, headers).\n"
            "Runs until -n records, --exit-at-end, --idle-timeout or Ctrl-C; the number of\n"
            "records goes to stderr at the end. Without --group the partitions are assigned\n"
            "directly and nothing is committed; with --group the consumer joins the group and\n"
            "commits its offsets (starting from them, or where --from-beginning says)."
        ),
        epilog=(
            "template fields: {topic} {partition} {offset} {timestamp} {key} {value} {headers}\n"
            "examples:\n"
            "  wirebroker consume numbers --from-beginning -n 10\n"
            "  wirebroker consume t -p 0 --offset 42 -e --template '{offset} {key}={value}'\n"
            "  wirebroker consume t --from-timestamp 2024-05-01T12:00:00Z --format json\n"
            "  wirebroker consume t -g my-group --from-beginning"
        ),
    )
    consume.add_argument("topic", metavar="TOPIC")
    start = consume.add_mutually_exclusive_group()
    start.add_argument("--from-beginning", action="store_true", help="start at the earliest offset")
    start.add_argument(
        "--offset",
        type=int,
        metavar="N",
        help="start at offset N (negative: N records before the end) of each partition",
    )
    start.add_argument(
        "--from-timestamp",
        metavar="TS",
        help="start at the first record at or after TS: epoch milliseconds or ISO-8601 "
        "(UTC unless it has an offset)",
    )
    consume.add_argument(
        "-p",
        "--partition",
        type=_non_negative,
        action="append",
        metavar="P",
        help="only this partition (repeatable; default all)",
    )
    consume.add_argument(
        "-g", "--group", help="consume in this group (subscribe and commit offsets)"
    )
    consume.add_argument("-n", "--num", type=_positive, metavar="N", help="stop after N records")
    consume.add_argument(
        "-e",
        "--exit-at-end",
        action="store_true",
        help="stop at the end of the partitions as they were when the command started",
    )
    consume.add_argument(
        "--idle-timeout",
        type=float,
        metavar="S",
        help="stop when no record arrived for S seconds",
    )
    consume.add_argument(
        "--format",
        choices=("text", "json"),
        default="text",
        help="text: the template per record (default); json: one object per line",
    )
    consume.add_argument(
        "--template",
        default=None,
        help="text format of a record (default '{value}', '{key}\\t{value}' with --print-key)",
    )
    consume.add_argument(
        "--print-key", action="store_true", help="print the key, a tab, then the value"
    )
    _add_no_progress(consume)
    consume.set_defaults(handler="records:consume")


def _add_no_progress(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--no-progress",
        action="store_true",
        help="no progress bar on stderr (shown only when stderr is a terminal, or when "
        "$WIREBROKER_PROGRESS=1)",
    )


def _add_group(commands: _Subparsers, client: argparse.ArgumentParser) -> None:
    group = commands.add_parser("group", help="list, describe, reset and delete consumer groups")
    sub = group.add_subparsers(dest="group_command", metavar="ACTION", required=True)

    lst = sub.add_parser("list", parents=[client], help="list consumer groups")
    lst.set_defaults(handler="group:list_groups")

    describe = sub.add_parser(
        "describe",
        parents=[client],
        help="state, members, and per partition the committed offset, log end and lag",
    )
    describe.add_argument("groups", nargs="+", metavar="GROUP")
    describe.set_defaults(handler="group:describe")

    reset = sub.add_parser(
        "reset-offsets",
        parents=[client],
        help="move a group's committed offsets (dry run unless --execute)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=(
            "Compute new committed offsets for a group, clamped to each partition's\n"
            "[earliest, latest], and print them; as Kafka's kafka-consumer-groups does, this\n"
            "is a dry run unless --execute is given. The group must have no members."
        ),
        epilog=(
            "examples:\n"
            "  wirebroker group reset-offsets g --topic t --to-earliest --execute\n"
            "  wirebroker group reset-offsets g --topic t:0,1 --shift-by -10\n"
            "  wirebroker group reset-offsets g --all-topics --to-datetime 2024-05-01T00:00:00Z"
        ),
    )
    reset.add_argument("group", metavar="GROUP")
    scope = reset.add_mutually_exclusive_group(required=True)
    scope.add_argument(
        "--topic",
        action="append",
        metavar="TOPIC[:P,P...]",
        help="the topic's partitions (all, or the listed ones); repeatable",
    )
    scope.add_argument(
        "--all-topics", action="store_true", help="every partition the group has offsets for"
    )
    to = reset.add_mutually_exclusive_group(required=True)
    to.add_argument("--to-earliest", action="store_true", help="the earliest offset")
    to.add_argument("--to-latest", action="store_true", help="the log end offset")
    to.add_argument("--to-offset", type=int, metavar="N", help="offset N")
    to.add_argument(
        "--to-datetime",
        metavar="TS",
        help="the first offset at or after TS (epoch ms or ISO-8601, UTC unless it has an offset)",
    )
    to.add_argument(
        "--shift-by",
        type=int,
        metavar="N",
        help="the committed offset + N (N may be negative; from the log end when none)",
    )
    mode = reset.add_mutually_exclusive_group()
    mode.add_argument("--dry-run", action="store_true", help="only show the new offsets (default)")
    mode.add_argument("--execute", action="store_true", help="commit the new offsets")
    reset.set_defaults(handler="group:reset_offsets")

    delete = sub.add_parser("delete", parents=[client], help="delete groups (must be empty)")
    delete.add_argument("groups", nargs="+", metavar="GROUP")
    delete.set_defaults(handler="group:delete")
    _add_group_configs(sub, client)


def _add_group_configs(sub: _Subparsers, client: argparse.ArgumentParser) -> None:
    """`group configs` and `group alter-config` (the GROUP config resource, KIP-848)."""
    configs = sub.add_parser(
        "configs",
        parents=[client],
        help="a group's configs (as kafka-configs --entity-type groups)",
    )
    configs.add_argument("group", metavar="GROUP")
    configs.add_argument(
        "--all-configs",
        action="store_true",
        help="every group config, defaults included (default: the ones set on the group)",
    )
    configs.set_defaults(handler="group_config:configs")
    alter = sub.add_parser("alter-config", parents=[client], help="set or remove a group's configs")
    alter.add_argument("group", metavar="GROUP")
    alter.add_argument(
        "-s",
        "--set",
        type=_key_value,
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="set a config (repeatable), e.g. -s consumer.session.timeout.ms=50000",
    )
    alter.add_argument(
        "-d",
        "--delete",
        action="append",
        default=[],
        metavar="KEY",
        help="remove a config, back to the broker default (repeatable)",
    )
    alter.set_defaults(handler="group_config:alter_config")


def _add_user(commands: _Subparsers, client: argparse.ArgumentParser) -> None:
    user = commands.add_parser(
        "user", help="SCRAM users: list, set and delete credentials (Kafka's SCRAM APIs)"
    )
    sub = user.add_subparsers(dest="user_command", metavar="ACTION", required=True)
    mechanisms = ("SCRAM-SHA-256", "SCRAM-SHA-512")

    lst = sub.add_parser(
        "list", parents=[client], help="users with SCRAM credentials (mechanisms, iterations)"
    )
    lst.add_argument("users", nargs="*", metavar="USER", help="only these (default: every user)")
    lst.set_defaults(handler="user:list_users")

    set_ = sub.add_parser(
        "scram-set",
        parents=[client],
        help="create or replace a user's SCRAM credential",
        description="Create or replace USER's credential for one mechanism. The password is "
        "salted here (PBKDF2) and only the salted password is sent; without --password it is "
        "read from the first line of stdin (prompted for on a terminal).",
    )
    set_.add_argument("user", metavar="USER")
    set_.add_argument("-m", "--mechanism", choices=mechanisms, default="SCRAM-SHA-256")
    set_.add_argument("-p", "--password", help="the password (default: read from stdin)")
    set_.add_argument(
        "-i", "--iterations", type=_positive, default=4096, help="4096 to 16384 (default 4096)"
    )
    set_.set_defaults(handler="user:scram_set")

    delete = sub.add_parser(
        "scram-delete", parents=[client], help="delete a user's SCRAM credential"
    )
    delete.add_argument("user", metavar="USER")
    delete.add_argument("-m", "--mechanism", choices=mechanisms, default="SCRAM-SHA-256")
    delete.set_defaults(handler="user:scram_delete")


def _acl_resource_options(parser: argparse.ArgumentParser, *, patterns: tuple[str, ...]) -> None:
    which = parser.add_argument_group("resource (one of)")
    which.add_argument("--topic", metavar="T")
    which.add_argument("--group", metavar="G")
    which.add_argument("--transactional-id", metavar="X")
    which.add_argument("--cluster", action="store_true", help="the cluster (kafka-cluster)")
    parser.add_argument("--resource-pattern-type", choices=patterns, type=str.lower)


def _add_acl(commands: _Subparsers, client: argparse.ArgumentParser) -> None:
    acl = commands.add_parser(
        "acl", help="ACLs: list, add and remove them (Kafka's ACL APIs, kafka-acls' options)"
    )
    sub = acl.add_subparsers(dest="acl_command", metavar="ACTION", required=True)
    lst = sub.add_parser("list", parents=[client], help="ACLs (all, or of one resource)")
    _acl_resource_options(lst, patterns=("any", "match", "literal", "prefixed"))
    lst.add_argument("--principal", help="only this principal's (User:alice)")
    lst.set_defaults(handler="acl:list_acls")
    for name, verb, handler in (
        ("add", "add ACLs: each principal x each operation on the resource", "acl:add"),
        ("remove", "remove the matching ACLs", "acl:remove"),
    ):
        action = sub.add_parser(name, parents=[client], help=verb, description=verb)
        _acl_resource_options(action, patterns=("literal", "prefixed"))
        action.add_argument("--allow-principal", action="append", metavar="P")
        action.add_argument("--deny-principal", action="append", metavar="P")
        action.add_argument("--host", default="*", help="the client host (default *)")
        action.add_argument(
            "--operation",
            action="append",
            metavar="OP",
            help="Read, Write, Create, Delete, Alter, Describe, ClusterAction, "
            "DescribeConfigs, AlterConfigs, IdempotentWrite, All (repeatable; add: All)",
        )
        action.set_defaults(handler=handler)


def _quota_entity() -> argparse.ArgumentParser:
    entity = argparse.ArgumentParser(add_help=False)
    group = entity.add_argument_group("entity (a user, a client id, or both)")
    user = group.add_mutually_exclusive_group()
    user.add_argument("--user", metavar="NAME", help="a user (its principal's name)")
    user.add_argument("--default-user", action="store_true", help="the default user")
    client = group.add_mutually_exclusive_group()
    client.add_argument("--client-id", metavar="ID", help="a client id")
    client.add_argument("--default-client-id", action="store_true", help="the default client id")
    return entity


def _add_quota(commands: _Subparsers, client: argparse.ArgumentParser) -> None:
    quota = commands.add_parser(
        "quota", help="client quotas: list, set and remove (Kafka's client quota APIs)"
    )
    sub = quota.add_subparsers(dest="quota_command", metavar="ACTION", required=True)
    entity = _quota_entity()
    lst = sub.add_parser(
        "list", parents=[client, entity], help="quota entities and values (default: all)"
    )
    lst.add_argument("--strict", action="store_true", help="only entities of exactly these types")
    lst.set_defaults(handler="quota:list_quotas")
    set_ = sub.add_parser(
        "set",
        parents=[client, entity],
        help="set quotas: producer_byte_rate, consumer_byte_rate, request_percentage, ...",
    )
    set_.add_argument("values", nargs="+", metavar="KEY=VALUE")
    set_.set_defaults(handler="quota:set_quotas")
    remove = sub.add_parser("remove", parents=[client, entity], help="remove quotas")
    remove.add_argument("keys", nargs="+", metavar="KEY")
    remove.set_defaults(handler="quota:remove_quotas")


def _add_dump_log(commands: _Subparsers) -> None:
    from wirebroker.ctl.dump_log import DESCRIPTION, add_arguments

    dump = commands.add_parser(
        "dump-log",
        help="print the segments, batches and indexes of a partition directory (read-only)",
        description=DESCRIPTION,
    )
    add_arguments(dump)
    dump.set_defaults(handler="dump_log:run")


def _add_data(commands: _Subparsers) -> None:
    data = commands.add_parser("data", help="the local broker's data directory")
    sub = data.add_subparsers(dest="data_command", metavar="ACTION", required=True)
    where = argparse.ArgumentParser(add_help=False)
    where.add_argument("--data-dir", help="the directory (default: what `serve` would use)")
    where.add_argument(
        "--config", help="a server.properties whose log.dirs/log.dir `serve` would use"
    )
    path = sub.add_parser(
        "path",
        parents=[where, _output_option()],
        help="print the data directory `wirebroker serve` uses (and whether a broker holds it)",
    )
    path.set_defaults(handler="data:path")
    reset = sub.add_parser(
        "reset",
        parents=[where, _output_option()],
        help="delete every topic, offset and cluster id in the data directory",
        description="Delete the contents of the data directory. Refuses while a broker holds "
        "it (its <dir>/.lock flock). Asks for confirmation unless --yes.",
    )
    reset.add_argument("-y", "--yes", action="store_true", help="do not ask for confirmation")
    reset.set_defaults(handler="data:reset")


def run(args: argparse.Namespace) -> int:
    """Run the command `args.handler` ("module:function") names; its exit code (module doc)."""
    import importlib
    import logging

    module_name, _, function_name = args.handler.partition(":")
    if not getattr(args, "debug", False):
        kafka_log = logging.getLogger("kafka")
        kafka_log.addHandler(logging.NullHandler())
        kafka_log.propagate = False
    else:
        logging.basicConfig(level=logging.DEBUG, stream=sys.stderr)
    try:
        module = importlib.import_module(f"wirebroker.ctl.{module_name}")
        function: Any = getattr(module, function_name)
        return int(function(args))
    except CliError as exc:
        _error(str(exc))
        return exc.code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `wirebroker consume t | head`: the reader left, not an error
        # point stdout at /dev/null so the interpreter's final flush does not fail again
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except Exception as exc:
        from wirebroker.ctl._kafka import describe_error

        message = describe_error(exc, args)
        if message is None:
            raise
        _error(message)
        return 1


def _error(message: str) -> None:
    line = " ".join(message.split())  # one line, whatever the library put in it
    print(f"wirebroker: error: {line}", file=sys.stderr, flush=True)

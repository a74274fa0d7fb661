"""The command line: `wirebroker serve` (also `python -m wirebroker serve`; `serve` is the default).

    wirebroker serve [--host H] [--port P] [--data-dir DIR] [--config FILE]
                     [--zookeeper HOST:PORT[/CHROOT] --node-id N]
                     [--override KEY=VALUE ...] [--log-level LEVEL]
                     [--admin-port P] [--log-format text|json]
    wirebroker cluster [--brokers N] ...   a local ZooKeeper + N brokers (wirebroker/launcher.py)
    wirebroker --version
    wirebroker topic|produce|consume|group|dump-log|data ..., wirebroker cluster info
                                           client commands against any Kafka (wirebroker/ctl);
                                           `-b`/`--bootstrap`/`--bootstrap-server` may also
                                           come before the command (`hoist_bootstrap`)

`wirebroker cluster` stays the launcher (its options unchanged) and `wirebroker cluster info`
is an optional subcommand of it: both are about "the cluster", and argparse tells them apart
without ambiguity because the launcher takes no positional argument.

Configuration, lowest precedence first:
    built-in defaults        127.0.0.1:9092, data in config.py's per-user `log.dir`,
                             auto topic creation on
    --config FILE            a Kafka server.properties, Kafka key names (listeners,
                             advertised.listeners, log.dirs, num.partitions, ...)
    --override KEY=VALUE     any config key, repeatable
    --host/--port/--data-dir replace the host/port of the first listener and `log.dirs`
    --zookeeper/--node-id    set zookeeper.connect and broker.id/node.id: join (or found) the
                             cluster that ZooKeeper coordinates; the ready line is printed once
                             the broker is registered there
Unknown keys produce one warning line each and are otherwise ignored; an invalid value of a
known key is fatal (exit code 2).

Output: once the listeners accept connections, exactly one line `wirebroker ready on HOST:PORT`
goes to stdout (flushed; the real port when --port 0; a wildcard bind prints the loopback
address), preceded, when the admin listener is on (--admin-port), by one line
`wirebroker admin on http://HOST:PORT/` per admin address.
Logs go to stderr. SIGINT/SIGTERM shut down gracefully and exit 0. A start-up failure
(address in use, a log dir of another cluster, ...) prints one line to stderr and exits 1.

Imports of trio and the broker are deferred until they are needed, to keep start-up fast.
"""

from __future__ import annotations

import argparse
import gc
import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from wirebroker import __version__
from wirebroker.config import (
    BROKER_CONFIGS,
    BrokerConfig,
    ConfigError,
    parse_listeners,
    parse_properties,
)
from wirebroker.ctl import COMMANDS as CTL_COMMANDS
from wirebroker.ctl import add_cluster_info, add_parsers

if TYPE_CHECKING:
    from wirebroker.broker import Broker

log = logging.getLogger("wirebroker.cli")

READY_PREFIX = "wirebroker ready on "
ADMIN_PREFIX = "wirebroker admin on "
_COMMANDS = ("serve", "cluster", *CTL_COMMANDS)


def _parser(command: str | None = None) -> argparse.ArgumentParser:
    """The command line's parser; with `command="serve"` only `serve`'s (a broker's start does
    not build the ~40 client subcommands' parsers: ~30 ms)."""
    parser = argparse.ArgumentParser(
        prog="wirebroker", description="A Kafka-protocol broker in Python."
    )
    parser.add_argument("--version", action="version", version=f"wirebroker {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    serve = commands.add_parser("serve", help="run the broker (the default command)")
    serve.add_argument("--host", help="listen address (default 127.0.0.1)")
    serve.add_argument("--port", type=int, help="listen port (default 9092; 0: any free port)")
    serve.add_argument("--data-dir", help="log directory (sets log.dirs)")
    serve.add_argument("--config", help="a Kafka server.properties file")
    serve.add_argument(
        "--zookeeper",
        metavar="HOST:PORT[,...][/CHROOT]",
        help="join the cluster coordinated by this ZooKeeper (sets zookeeper.connect); "
        "without it the broker runs alone and needs nothing external",
    )
    serve.add_argument(
        "--node-id", type=int, help="this broker's id in the cluster (sets broker.id / node.id)"
    )
    serve.add_argument(
        "--override",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="set one config key (repeatable); beats --config",
    )
    serve.add_argument(
        "--admin-port",
        type=int,
        metavar="P",
        help="serve the admin HTTP listener (/metrics, the web view /, /api/state) on "
        "127.0.0.1:P (0: any free port; sets admin.listeners); off by default",
    )
    serve.add_argument(
        "--tls-selfsigned",
        metavar="DIR",
        help="also listen with TLS (an SSL listener on --tls-port) with a throwaway CA and "
        "broker certificate made in DIR (kept there for the next run); prints the files and "
        "the client settings. For local testing only",
    )
    serve.add_argument(
        "--tls-port",
        type=int,
        default=9093,
        metavar="P",
        help="the port of --tls-selfsigned's SSL listener (default 9093; 0: any free port)",
    )
    serve.add_argument(
        "--log-level",
        default="INFO",
        choices=("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"),
        type=str.upper,
        help="stderr log level (default INFO)",
    )
    serve.add_argument(
        "--log-format",
        default="text",
        choices=("text", "json"),
        help="stderr log format: text lines (default) or one JSON object per line",
    )
    if command != "serve":
        _add_cluster_parser(commands)
        add_parsers(commands)
    return parser


def _add_cluster_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    cluster = commands.add_parser(
        "cluster",
        help="run a throwaway local cluster: ZooKeeper + N brokers",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=(
            "Start a ZooKeeper (Debian's zookeeper package; a temporary one on a free port\n"
            "unless --zookeeper is given) and N brokers joined to it, print the bootstrap\n"
            "servers, and run until Ctrl-C or SIGTERM, which stop the brokers (controlled\n"
            "shutdown, SIGKILL after --stop-timeout) and ZooKeeper and remove the temporary\n"
            "directory. Broker i runs `wirebroker serve --zookeeper CONNECT --node-id i\n"
            "--data-dir DATA/broker-i`; its output goes to DATA/logs/broker-i.log."
        ),
        epilog=(
            "output (stdout): one line per broker, then the last start-up line\n"
            "  wirebroker cluster ready: bootstrap HOST:PORT,... zookeeper HOST:PORT\n"
            "example:\n"
            "  wirebroker cluster --brokers 3\n"
            "  wirebroker cluster --brokers 3 --zookeeper-servers 3\n"
            "  kcat -b 127.0.0.1:PORT -L\n"
            "  wirebroker cluster info -b 127.0.0.1:PORT     (a running cluster's brokers)"
        ),
    )
    info = cluster.add_subparsers(dest="cluster_command", metavar="{info}", required=False)
    add_cluster_info(info)
    _add_cluster_layout_options(cluster)
    _add_cluster_lifetime_options(cluster)


def _add_cluster_layout_options(cluster: argparse.ArgumentParser) -> None:
    """How many brokers and ZooKeeper servers, where their data and ports are."""
    cluster.add_argument("--brokers", type=int, default=3, help="number of brokers (default 3)")
    cluster.add_argument(
        "--data-dir",
        help="keep the brokers' data and logs here (default: a temporary directory, removed "
        "at exit; ZooKeeper's state is throwaway either way)",
    )
    cluster.add_argument(
        "--zookeeper",
        metavar="CONNECT",
        help="use this ZooKeeper (HOST:PORT[,HOST:PORT...][/chroot]) instead of starting one",
    )
    cluster.add_argument(
        "--zookeeper-servers",
        type=int,
        default=1,
        metavar="Z",
        help="start a throwaway ensemble of Z ZooKeeper servers instead of one (default 1; "
        "3 keeps the cluster up when one of them dies)",
    )
    cluster.add_argument(
        "--port-base",
        type=int,
        metavar="P",
        help="broker i listens on P+i (default: free ports)",
    )
    cluster.add_argument(
        "--admin",
        action="store_true",
        help="every broker serves the admin listener (/metrics, the web view, /faults) on a "
        "free loopback port, printed in its ready line",
    )


def _add_cluster_lifetime_options(cluster: argparse.ArgumentParser) -> None:
    """The brokers' configs, restarts, timeouts and log level."""
    cluster.add_argument(
        "--restart-after",
        type=float,
        metavar="S",
        help="start a broker that dies (say kill -9) again after S seconds, with the same id, "
        "data directory and port (default: report it and keep the others running)",
    )
    cluster.add_argument(
        "--override",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="broker config for every broker (repeatable); offsets.topic.replication.factor "
        "defaults to min(3, N)",
    )
    cluster.add_argument(
        "--stop-timeout",
        type=float,
        default=30.0,
        metavar="S",
        help="seconds a broker gets to shut down before SIGKILL (default 30)",
    )
    cluster.add_argument(
        "--ready-timeout",
        type=float,
        default=60.0,
        metavar="S",
        help="seconds to wait for the cluster to be ready (default 60)",
    )
    cluster.add_argument(
        "--log-level",
        default="INFO",
        choices=("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"),
        type=str.upper,
        help="the brokers' log level (default INFO)",
    )


def _format_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def config_values(args: argparse.Namespace) -> dict[str, str]:
    """The explicit config values from --config, --override and the flags (see module doc)."""
    values: dict[str, str] = {}
    if args.config:
        values.update(parse_properties(Path(args.config).read_text(encoding="utf-8")))
    for item in args.override:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--override {item!r}: expected KEY=VALUE")
        values[key.strip()] = value.strip()
    if getattr(args, "zookeeper", None):
        values["zookeeper.connect"] = args.zookeeper
    if getattr(args, "node_id", None) is not None:
        values["node.id"] = str(args.node_id)
        values["broker.id"] = str(args.node_id)
    if getattr(args, "admin_port", None) is not None:
        values["admin.listeners"] = f"127.0.0.1:{args.admin_port}"
    if args.data_dir:
        values["log.dirs"] = str(Path(args.data_dir).expanduser())
    if args.host is not None or args.port is not None:
        raw = values.get("listeners") or str(BROKER_CONFIGS["listeners"].default)
        listeners = parse_listeners(raw)
        if not listeners:
            listeners = [("PLAINTEXT", "127.0.0.1", 9092)]
        name, host, port = listeners[0]
        host = args.host if args.host is not None else host
        port = args.port if args.port is not None else port
        listeners[0] = (name, host, port)
        values["listeners"] = ",".join(f"{n}://{_format_host(h)}:{p}" for n, h, p in listeners)
    if getattr(args, "tls_selfsigned", None):
        _add_selfsigned_listener(values, args.tls_selfsigned, args.tls_port)
    return values


def _add_selfsigned_listener(values: dict[str, str], directory: str, port: int) -> None:
    """--tls-selfsigned: an SSL listener beside the first one, on the same host, with a
    throwaway CA's broker certificate (wirebroker.security.selfsigned); mTLS requested."""
    from wirebroker.security.selfsigned import generate

    listeners = parse_listeners(values.get("listeners") or str(BROKER_CONFIGS["listeners"].default))
    if any(name == "SSL" for name, _h, _p in listeners):
        raise ConfigError("--tls-selfsigned: an SSL listener is already configured")
    host = listeners[0][1] if listeners else "127.0.0.1"
    listeners.append(("SSL", host, port))
    values["listeners"] = ",".join(f"{n}://{_format_host(h)}:{p}" for n, h, p in listeners)
    files = generate(directory)
    values.update(files.broker_settings("SSL"))
    print(
        f"wirebroker TLS: throwaway CA in {files.directory} (not for production)\n"
        f"  CA certificate (trust it): {files.ca}\n"
        f"  broker key + chain: {files.broker}\n"
        f"  client certificate (mTLS, optional): {files.client_cert} key {files.client_key}\n"
        f"  Java / kafka-console-*: security.protocol=SSL ssl.truststore.type=PEM "
        f"ssl.truststore.location={files.ca}\n"
        f"  librdkafka / confluent-kafka: security.protocol=SSL ssl.ca.location={files.ca}\n"
        f"  kafka-python / aiokafka: security_protocol='SSL', ssl_cafile='{files.ca}'",
        flush=True,
    )


#: The client commands' bootstrap option, in all its spellings (wirebroker/ctl).
_BOOTSTRAP_FLAGS = ("-b", "--bootstrap", "--bootstrap-server")


def hoist_bootstrap(argv: list[str]) -> list[str]:
    """Move a bootstrap option given before the command behind it.

    `wirebroker -b HOST:PORT topic list` (kcat's order) becomes `topic list -b HOST:PORT`,
    where the command's own parser takes it; each command keeps its options on its leaf
    parser, so their help and errors stay in one place. Before a `--` if there is one."""
    moved: list[str] = []
    rest = list(argv)
    while rest:
        head = rest[0]
        if head in _BOOTSTRAP_FLAGS and len(rest) >= 2:
            moved += rest[:2]
            del rest[:2]
        elif head.startswith(("--bootstrap=", "--bootstrap-server=")) or (
            head.startswith("-b") and len(head) > 2
        ):
            moved.append(head)
            del rest[0]
        else:
            break
    if not moved or not rest:
        return list(argv)
    end = rest.index("--") if "--" in rest else len(rest)
    return rest[:end] + moved + rest[end:]


def main(argv: Sequence[str] | None = None) -> int:
    argv = hoist_bootstrap(list(sys.argv[1:] if argv is None else argv))
    if not argv or (argv[0] not in _COMMANDS and argv[0] not in ("-h", "--help", "--version")):
        argv.insert(0, "serve")
    parser = _parser(argv[0])
    args = parser.parse_args(argv)
    if getattr(args, "handler", None):
        from wirebroker.ctl import run

        return run(args)
    if args.command == "cluster":
        return cluster(parser, args)
    from wirebroker.jsonlog import configure

    configure(args.log_level, args.log_format)
    try:
        config = BrokerConfig(config_values(args))
    except (ConfigError, OSError) as exc:
        print(f"wirebroker: configuration error: {exc}", file=sys.stderr)
        return 2
    for key in config.unknown_keys():
        log.warning("unknown config key %r ignored", key)
    return serve(config)


def cluster(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    """`wirebroker cluster`: see wirebroker/launcher.py."""
    from wirebroker.launcher import ClusterSpec, run_cluster

    overrides: dict[str, str] = {}
    for item in args.override:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            parser.error(f"--override {item!r}: expected KEY=VALUE")
        overrides[key.strip()] = value.strip()
    if args.brokers < 1:
        parser.error("--brokers must be at least 1")
    if args.zookeeper_servers < 1:
        parser.error("--zookeeper-servers must be at least 1")
    if args.restart_after is not None and args.restart_after < 0:
        parser.error("--restart-after must be >= 0")
    if args.zookeeper and args.zookeeper_servers != 1:
        parser.error("--zookeeper-servers starts an ensemble; --zookeeper uses a running one")
    spec = ClusterSpec(
        brokers=args.brokers,
        data_dir=Path(args.data_dir) if args.data_dir else None,
        zookeeper=args.zookeeper,
        port_base=args.port_base,
        overrides=overrides,
        log_level=args.log_level,
        ready_timeout=args.ready_timeout,
        stop_timeout=args.stop_timeout,
        zookeeper_servers=args.zookeeper_servers,
        admin=args.admin,
        restart_after=args.restart_after,
    )
    return run_cluster(spec)


def serve(config: BrokerConfig) -> int:
    """Build the broker, run it until SIGINT/SIGTERM; the process exit code.

    The cyclic garbage collector is off from here until the ready line (`_run`): importing
    the broker creates ~10^5 objects and no garbage worth collecting, and the ~100 collections
    that would run meanwhile cost ~20 ms of every start. At the ready line those objects are
    frozen (`gc.freeze`, the permanent generation) before collection resumes: otherwise the
    first collection after it walks all of them (~25 ms, before the first answer)."""
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _serve(config)
    finally:
        if gc_was_enabled:
            gc.enable()


def _serve(config: BrokerConfig) -> int:
    import trio

    from wirebroker.broker import Broker
    from wirebroker.malloc_tuning import tune_malloc

    tune_malloc()  # ~1 MB request buffers stay on the heap (see wirebroker.malloc_tuning)
    try:
        broker = Broker(config)
    except ConfigError as exc:
        print(f"wirebroker: configuration error: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:  # a log dir of another cluster, an unreadable store, EACCES ...
        log.debug("start-up failed", exc_info=True)
        print(f"wirebroker: cannot start: {exc}", file=sys.stderr)
        return 1
    ready: list[bool] = []
    try:
        trio.run(_run, broker, ready)
    except BaseException as exc:  # the process's last word on any failure
        os_error = _find_os_error(exc)
        if not ready and os_error is not None:  # bind: address in use, permission denied
            print(f"wirebroker: cannot start: {os_error}", file=sys.stderr)
            return 1
        if isinstance(exc, KeyboardInterrupt):
            return 130
        taken = _find_id_taken(exc)
        if taken is not None:  # another live broker registered with our node id
            print(f"wirebroker: cannot start: {taken}", file=sys.stderr)
            return 1
        log.critical("the broker failed", exc_info=exc)
        return 1
    return 0


def _find_os_error(exc: BaseException) -> OSError | None:
    """The OSError in `exc` (possibly inside exception groups), if that is all there is."""
    if isinstance(exc, OSError):
        return exc
    if isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        return _find_os_error(exc.exceptions[0])
    return None


def _find_id_taken(exc: BaseException) -> BaseException | None:
    """The cluster member's BrokerIdTakenError in `exc` (exception groups included)."""
    from wirebroker.cluster.zk_member import BrokerIdTakenError

    if isinstance(exc, BrokerIdTakenError):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            found = _find_id_taken(inner)
            if found is not None:
                return found
    return None


async def _run(broker: Broker, ready: list[bool]) -> None:
    import signal

    import trio

    from wirebroker.listeners import connectable_host

    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async with trio.open_nursery() as nursery:
            bound = await nursery.start(broker.serve)
            host, port = bound[0]
            ready.append(True)
            for admin_host, admin_port in broker.admin_bound:
                print(f"{ADMIN_PREFIX}http://{_format_host(admin_host)}:{admin_port}/")
            for name, (lhost, lport) in list(broker.server.bound_by_listener.items())[1:]:
                print(
                    f"wirebroker listener {name} on {_format_host(connectable_host(lhost))}:{lport}"
                )
            print(f"{READY_PREFIX}{_format_host(connectable_host(host))}:{port}", flush=True)
            gc.freeze()  # the start's objects live on: no collection ever walks them
            gc.enable()  # off since `serve` began (see there)
            async for signum in signals:
                log.info("received %s; shutting down", signal.Signals(signum).name)
                nursery.cancel_scope.cancel()
                break

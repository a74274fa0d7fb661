"""`wirebroker cluster` with `_stub_broker.py` in place of `wirebroker serve`.

    python _stub_cluster.py [wirebroker cluster options]

The launcher's process handling (ready lines, unexpected exits, signals, SIGKILL after the
stop time-out, temp-dir removal) tested without a ZooKeeper: pass `--zookeeper` (any string;
the stubs never connect) and the launcher skips its ZooKeeper registration check.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from wirebroker import cli, launcher

STUB = str(Path(__file__).resolve().parent / "_stub_broker.py")


def stub_command(spec: launcher.ClusterSpec, node_id: int, connect: str, data: Path, port: int):
    cmd = launcher.broker_command(spec, node_id, connect, data, port)
    return [sys.executable, STUB, *cmd[4:]]  # drop "python -m wirebroker serve"


def main() -> int:
    original = launcher.run_cluster

    def run(spec: launcher.ClusterSpec, **kwargs: object) -> int:
        return original(spec, command=stub_command, wait_for_registration=False, **kwargs)

    launcher.run_cluster = run  # type: ignore[assignment]
    return cli.main(["cluster", *sys.argv[1:]])


if __name__ == "__main__":
    sys.exit(main())

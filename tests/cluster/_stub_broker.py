"""A stand-in for `wirebroker serve` in the launcher's own tests (no ZooKeeper, no broker).

    python _stub_broker.py [serve args ...]

Behaviour is chosen through the environment, per node id (`--node-id I` in its arguments):
  STUB_FAIL_NODE=I        node I exits 3 at once, before its ready line
  STUB_IGNORE_TERM=I      node I ignores SIGTERM (the launcher must SIGKILL it)
Otherwise it listens on a loopback port (the `--port` argument, 0: any), and with
`--admin-port 0` on a second one, printed first as `wirebroker admin on http://127.0.0.1:PORT/`
(as `wirebroker serve` does), prints `wirebroker ready on 127.0.0.1:PORT`, and exits 0 on
SIGTERM or SIGINT.
"""

from __future__ import annotations

import os
import signal
import socket
import sys


def main(argv: list[str]) -> int:
    node = argv[argv.index("--node-id") + 1]
    port = int(argv[argv.index("--port") + 1])
    if os.environ.get("STUB_FAIL_NODE") == node:
        print("stub: failing on purpose", file=sys.stderr)
        return 3
    if os.environ.get("STUB_IGNORE_TERM") == node:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    else:
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    signal.signal(signal.SIGINT, lambda *_: sys.exit(0))
    with socket.socket() as sock, socket.socket() as admin:
        if "--admin-port" in argv:
            admin.bind(("127.0.0.1", int(argv[argv.index("--admin-port") + 1])))
            admin.listen()
            print(f"wirebroker admin on http://127.0.0.1:{admin.getsockname()[1]}/", flush=True)
        sock.bind(("127.0.0.1", port))
        sock.listen()
        print(f"stub broker {node}: args {argv}", file=sys.stderr, flush=True)
        print(f"wirebroker ready on 127.0.0.1:{sock.getsockname()[1]}", flush=True)
        while True:
            signal.pause()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""Cuttable loopback TCP proxies in front of brokers: the network partitions of the cluster chaos.

    proxies = ProxySet()
    proxy = proxies.add(node_id)            # listens on 127.0.0.1:<free port> at once
    broker's advertised.listeners = PLAINTEXT://127.0.0.1:<proxy.port>
    proxy.target = ("127.0.0.1", bound_port) once the broker printed its ready line
    proxies.owner_pids = {node_id: pid}     # kept current by the harness (restarts)
    proxies.isolate(node_id) / proxies.heal()
    proxies.close()

Because every broker advertises its proxy's address (in /brokers/ids and in Metadata), every
connection to a broker goes through its proxy: clients' and the other brokers' (followers
fetch from the leader's advertised address). Loopback only: each proxy binds 127.0.0.1.

Isolating broker X cuts both directions between X and everything else:
  - inbound: every connection through X's proxy (clients and the other brokers' followers);
  - outbound: every connection that X itself opened to another broker's proxy. A proxy learns
    who opened a connection from the peer's source port: /proc/net/tcp maps the local
    port 127.0.0.1:<src> to a socket inode, and the harness's own broker pids are searched for
    that inode in /proc/<pid>/fd (only pids the harness started; only while a cut is active or
    being made, so the cost is paid per connection during a partition only).
A cut connection is a blackhole, not a reset: bytes read from either side are dropped, nothing
is forwarded, so a request times out as on a real partition (a reset would tell the peer at
once). New connections made during the cut are accepted and blackholed too. A blackholed
stream has lost bytes mid-frame, so `heal()` closes every connection that was cut; the peers
reconnect through the healed proxy.

ZooKeeper traffic does not go through these proxies: an isolated broker keeps its ZooKeeper
session (the "partitioned from its peers, not from ZooKeeper" case; the ZooKeeper side of a
partition is the session-expiry fault).
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
from pathlib import Path

BUFFER = 65536


def _inode_of_connection(src_port: int, dst_port: int) -> str | None:
    """The socket inode of the IPv4 TCP socket 127.0.0.1:`src_port` -> 127.0.0.1:`dst_port`
    (/proc/net/tcp; the source port alone is not enough: a TIME_WAIT entry, inode 0, may
    hold the same local port towards another address)."""
    local, remote = f"0100007F:{src_port:04X}", f"0100007F:{dst_port:04X}"
    try:
        lines = Path("/proc/net/tcp").read_text().splitlines()[1:]
    except OSError:
        return None
    for line in lines:
        fields = line.split()
        if len(fields) > 9 and fields[1] == local and fields[2] == remote and fields[9] != "0":
            return fields[9]
    return None


def _pid_has_inode(pid: int, inode: str) -> bool:
    target = f"socket:[{inode}]"
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            with contextlib.suppress(OSError):
                if os.readlink(f"/proc/{pid}/fd/{fd}") == target:
                    return True
    except OSError:
        return False
    return False


class _Conn:
    """One proxied connection: client socket <-> upstream socket, two pump threads."""

    def __init__(self, proxy: Proxy, client: socket.socket, source_port: int) -> None:
        self.proxy = proxy
        self.client = client
        self.source_port = source_port
        self.opener: int | str | None = "unknown"  # node id of the broker that opened it
        self.cut = False
        self.closed = False
        self.upstream: socket.socket | None = None

    def start(self) -> None:
        target = self.proxy.target
        if target is None:
            self.close()
            return
        try:
            self.upstream = socket.create_connection(target, timeout=5)
            self.upstream.settimeout(None)
        except OSError:
            self.close()
            return
        for src, dst in ((self.client, self.upstream), (self.upstream, self.client)):
            threading.Thread(target=self._pump, args=(src, dst), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while True:
                data = src.recv(BUFFER)
                if not data:
                    break
                if self.cut:
                    continue  # blackhole
                dst.sendall(data)
        except OSError:
            pass
        self.close()

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        for s in (self.client, self.upstream):
            if s is not None:
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)
                with contextlib.suppress(OSError):
                    s.close()
        self.proxy.forget(self)


class Proxy:
    """A loopback listener forwarding to `target` (None: refuse) for broker `node_id`."""

    def __init__(self, owner: ProxySet, node_id: int) -> None:
        self.owner = owner
        self.node_id = node_id
        self.target: tuple[str, int] | None = None
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(128)
        self.port: int = self.listener.getsockname()[1]
        self.conns: set[_Conn] = set()
        self.lock = threading.Lock()
        self._closed = False
        threading.Thread(target=self._accept, name=f"proxy-{node_id}", daemon=True).start()

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, peer = self.listener.accept()
            except OSError:
                return
            conn = _Conn(self, client, peer[1])
            with self.lock:
                self.conns.add(conn)
            if self.owner.isolated is not None:
                conn.cut = self.owner.should_cut(self, conn)
            conn.start()

    def forget(self, conn: _Conn) -> None:
        with self.lock:
            self.conns.discard(conn)

    def connections(self) -> list[_Conn]:
        with self.lock:
            return list(self.conns)

    def close(self) -> None:
        self._closed = True
        with contextlib.suppress(OSError):
            self.listener.close()
        for conn in self.connections():
            conn.close()


class ProxySet:
    """The proxies of a cluster and the current cut (at most one isolated broker)."""

    def __init__(self) -> None:
        self.proxies: dict[int, Proxy] = {}
        self.owner_pids: dict[int, int] = {}
        self.isolated: int | None = None

    def add(self, node_id: int) -> Proxy:
        proxy = Proxy(self, node_id)
        self.proxies[node_id] = proxy
        return proxy

    def opener(self, proxy: Proxy, conn: _Conn) -> int | None:
        """The node id of the broker that opened `conn` (None: not one of ours, a client)."""
        if conn.opener == "unknown":
            inode = _inode_of_connection(conn.source_port, proxy.port)
            found = None
            if inode is not None:
                for node_id, pid in self.owner_pids.items():
                    if _pid_has_inode(pid, inode):
                        found = node_id
                        break
            conn.opener = found
        return conn.opener if isinstance(conn.opener, int) else None

    def should_cut(self, proxy: Proxy, conn: _Conn) -> bool:
        x = self.isolated
        if x is None:
            return False
        return proxy.node_id == x or self.opener(proxy, conn) == x

    def isolate(self, node_id: int) -> int:
        """Cut broker `node_id` off (see the module doc); returns the connections cut."""
        self.isolated = node_id
        cut = 0
        for proxy in self.proxies.values():
            for conn in proxy.connections():
                if self.should_cut(proxy, conn):
                    conn.cut = True
                    cut += 1
        return cut

    def heal(self) -> None:
        """End the cut: close every blackholed connection (its stream lost bytes)."""
        self.isolated = None
        for proxy in self.proxies.values():
            for conn in proxy.connections():
                if conn.cut:
                    conn.close()

    def close(self) -> None:
        for proxy in self.proxies.values():
            proxy.close()

"""kcat adapter: Debian's kcat 1.7.1 (librdkafka 2.0.2) driven through its command line only.

Modes used: -P (producer), -C (consumer), -G (balanced group consumer), -L (metadata), -Q
(offsets by timestamp). kcat has no admin commands, so admin cases are n/a.

Producing: a record holding the separator bytes below goes alone, as a file argument (kcat
sends each file as one message, byte for byte). Otherwise consecutive records with the same
partition and headers go to one `kcat -P` process through stdin, split with `-D '\\x1e'`
(records) and `-K '\\x1f'` (key | value); a record without the key delimiter has a null
key; with `-Z`, an empty value is sent as null (so a run never mixes empty and null values).
Headers are `-H name=value` per process.
kcat cannot set timestamps, and it reports no offsets on produce (produce() returns None).
The codec is `-X compression.codec=<codec>`, idempotence `-X enable.idempotence=true`.

Consuming: `-f '%p %o %T %K %S\\n%h\\n%k%s\\n'`: partition, offset, timestamp and the key and
payload lengths (-1 = null) on one line, the headers (n=v CSV) on the next, then exactly K key
bytes and S payload bytes. Binary-safe except for the headers line.

Group members are `kcat -G` processes (auto commit every 100 ms, so "committed after poll" is
eventual here); their assignment is parsed from kcat's stderr lines
`% Group G rebalanced (memberid M): assigned: t [0], t [1]`; close() sends SIGINT, on which
kcat closes the consumer (commit, LeaveGroup).
"""

from __future__ import annotations

import json
import os
import re
import select
import shutil
import signal
import subprocess
import tempfile
import threading
from collections.abc import Iterable

from compat.scenarios.api import (
    Adapter,
    ClientError,
    ConsumeFrom,
    Delivery,
    Member,
    Rec,
    Unsupported,
)

KCAT = shutil.which("kcat") or shutil.which("kafkacat") or "kcat"
FORMAT = "%p %o %T %K %S\\n%h\\n%k%s\\n"
REC_SEP = b"\x1e"
KEY_SEP = b"\x1f"
# librdkafka's error strings for the Kafka errors scenarios look for.
_ERRORS = {
    "Broker: Message size too large": "MESSAGE_TOO_LARGE",
    "Broker: API version not supported": "UNSUPPORTED_VERSION",
    "Local: Message timed out": "TIMEOUT",
    "Broker: Unknown topic or partition": "UNKNOWN_TOPIC_OR_PARTITION",
}


_TRANSPORT = "Local: Broker transport failure"


def _classify(stderr: str) -> str:
    for text, code in _ERRORS.items():
        if text in stderr:
            return code
    return "KCAT_FAILED"


def _run(args: list[str], stdin: bytes = b"", timeout: float = 30.0) -> bytes:
    try:
        proc = subprocess.run(
            [KCAT, *args], input=stdin, capture_output=True, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired as exc:
        raise ClientError("TIMEOUT", f"kcat {' '.join(args)} ran over {timeout} s") from exc
    err = proc.stderr.decode(errors="replace")
    failed = ("Delivery failed", "Failed to produce") if "-E" in args else ("ERROR",)
    # librdkafka reports a refused connection to one bootstrap broker (a dead broker in a
    # cluster's list) as "% ERROR: Local: Broker transport failure" and goes on with the
    # others: not a failure of the command.
    checked = "\n".join(line for line in err.splitlines() if _TRANSPORT not in line)
    if proc.returncode != 0 or any(f in checked for f in failed):
        raise ClientError(_classify(err), f"kcat exit {proc.returncode}: {err.strip()[:500]}")
    return proc.stdout


def _parse_headers(line: bytes) -> tuple[tuple[str, bytes | None], ...]:
    if not line:
        return ()
    out = []
    for item in line.split(b","):
        name, _, value = item.partition(b"=")
        out.append((name.decode(), value))
    return tuple(out)


class RecordStream:
    """Incremental parser of the FORMAT output."""

    def __init__(self) -> None:
        self.buf = bytearray()

    def feed(self, data: bytes) -> list[Rec]:
        self.buf += data
        out: list[Rec] = []
        while True:
            nl1 = self.buf.find(b"\n")
            if nl1 < 0:
                return out
            nl2 = self.buf.find(b"\n", nl1 + 1)
            if nl2 < 0:
                return out
            p, o, ts, klen, slen = (int(x) for x in self.buf[:nl1].split())
            headers = _parse_headers(bytes(self.buf[nl1 + 1 : nl2]))
            pos = nl2 + 1
            need = pos + max(klen, 0) + max(slen, 0) + 1
            if len(self.buf) < need:
                return out
            key = bytes(self.buf[pos : pos + klen]) if klen >= 0 else None
            pos += max(klen, 0)
            value = bytes(self.buf[pos : pos + slen]) if slen >= 0 else None
            del self.buf[:need]
            out.append(Rec(key, value, headers, ts, partition=p, offset=o))


class KcatMember(Member):
    _REBALANCE = re.compile(r"rebalanced \(memberid [^)]*\): (assigned|revoked): (.*)$")

    def __init__(self, bootstrap: str, group: str, topics: Iterable[str], client_id: str):
        self._proc = subprocess.Popen(
            [
                KCAT,
                "-b",
                bootstrap,
                "-G",
                group,
                "-u",
                "-f",
                FORMAT,
                "-X",
                f"client.id={client_id}",
                "-X",
                "auto.offset.reset=earliest",
                "-X",
                "auto.commit.interval.ms=100",
                "-X",
                "session.timeout.ms=10000",
                "-X",
                "heartbeat.interval.ms=500",
                "-X",
                "fetch.wait.max.ms=100",
                *topics,
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self._stream = RecordStream()
        self._assigned: set[tuple[str, int]] = set()
        self._lock = threading.Lock()
        self.stderr_lines: list[str] = []
        threading.Thread(target=self._read_stderr, daemon=True).start()

    def _read_stderr(self) -> None:
        assert self._proc.stderr is not None
        for raw in self._proc.stderr:
            line = raw.decode(errors="replace").rstrip()
            self.stderr_lines.append(line)
            m = self._REBALANCE.search(line)
            if m:
                tps = {(t, int(p)) for t, p in re.findall(r"(\S+) \[(\d+)\]", m.group(2))}
                with self._lock:
                    self._assigned = tps if m.group(1) == "assigned" else set()

    def poll(self, timeout_s: float) -> list[Rec]:
        assert self._proc.stdout is not None
        if self._proc.poll() is not None:
            raise ClientError("KCAT_EXITED", "\n".join(self.stderr_lines[-5:]))
        fd = self._proc.stdout.fileno()
        ready, _, _ = select.select([fd], [], [], timeout_s)
        if not ready:
            return []
        return self._stream.feed(os.read(fd, 1 << 20))

    def assignment(self) -> set[tuple[str, int]]:
        with self._lock:
            return set(self._assigned)

    def close(self) -> None:
        if self._proc.poll() is None:
            self._proc.send_signal(signal.SIGINT)
            try:
                self._proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()


def kcat_version() -> str:
    """ "1.7.1 (librdkafka 2.0.2)" from `kcat -V`, or "unknown"."""
    try:
        out = subprocess.run([KCAT, "-V"], capture_output=True, check=False, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    text = out.stdout.decode(errors="replace") + out.stderr.decode(errors="replace")
    kcat = re.search(r"Version ([0-9.]+)", text)
    lib = re.search(r"librdkafka ([0-9.]+)", text)
    if kcat is None:
        return "unknown"
    return f"{kcat.group(1)} (librdkafka {lib.group(1) if lib else '?'})"


class KcatAdapter(Adapter):
    name = "kcat"
    version = kcat_version()
    capabilities = frozenset({"headers", "null_value", "null_key", "idempotent", "legacy"})
    codecs = ("gzip", "snappy", "lz4", "zstd")

    def _base(self, bootstrap: str | None = None) -> list[str]:
        return ["-b", bootstrap or self.bootstrap, "-m", "15"]

    def produce(
        self,
        topic: str,
        records: list[Rec],
        *,
        compression: str | None = None,
        idempotent: bool = False,
        bootstrap: str | None = None,
        timeout_s: float = 30.0,
    ) -> list[Delivery] | None:
        extra = []
        if compression:
            extra += ["-X", f"compression.codec={compression}"]
        if idempotent:
            extra += ["-X", "enable.idempotence=true"]
        runs: list[list[Rec]] = []
        for r in records:
            last = runs[-1][0] if runs else None
            has_null = any(x.value is None for x in runs[-1]) if runs else False
            has_empty = any(x.value == b"" for x in runs[-1]) if runs else False
            same = (
                last is not None
                and last.partition == r.partition
                and last.headers == r.headers
                and not (r.value is None and has_empty)
                and not (r.value == b"" and has_null)
            )
            if same:
                runs[-1].append(r)
            else:
                runs.append([r])
        for run in runs:
            first = run[0]
            args = [*self._base(bootstrap), "-P", "-E", "-t", topic]
            args += ["-p", str(first.partition if first.partition is not None else -1)]
            for name, value in first.headers:
                args += ["-H", name if value is None else f"{name}={value.decode()}"]
            if any(
                REC_SEP in (r.key or b"") + (r.value or b"")
                or KEY_SEP in (r.key or b"") + (r.value or b"")
                for r in run
            ):
                for r in run:
                    self._produce_file(args + extra, r, timeout_s)
                continue
            payload = bytearray()
            for r in run:
                if r.key is not None:
                    payload += r.key + KEY_SEP
                payload += (r.value or b"") + REC_SEP
            args += ["-D", "\\x1e", "-K", "\\x1f"]
            if any(r.value is None for r in run):
                args.append("-Z")
            _run([*args, *extra], bytes(payload), timeout_s)
        return None

    @staticmethod
    def _produce_file(args: list[str], r: Rec, timeout_s: float) -> None:
        """One record as one file argument (kcat sends each file as one message, any bytes)."""
        if not r.value or (r.key is not None and b"\x00" in r.key):
            raise Unsupported("kcat file mode needs a non-empty value and a key without NUL")
        with tempfile.NamedTemporaryFile(prefix="kcat-msg-") as f:
            f.write(r.value)
            f.flush()
            key = ["-k", r.key.decode("utf-8", "surrogateescape")] if r.key is not None else []
            _run([*args, *key, f.name], b"", timeout_s)

    def consume_from(self, q: ConsumeFrom) -> list[Rec]:
        out = _run(
            [
                *self._base(),
                "-X",
                f"isolation.level={q.isolation_level}",
                "-C",
                "-t",
                q.topic,
                "-p",
                str(q.partition),
                "-o",
                str(q.start),
                "-c",
                str(q.count),
                "-e",
                "-f",
                FORMAT,
            ],
            timeout=q.timeout_s,
        )
        return RecordStream().feed(out)

    def transactional_produce(
        self,
        topic: str,
        transactions: list[tuple[list[Rec], bool]],
        transactional_id: str,
        timeout_s: float = 30.0,
    ) -> None:
        raise Unsupported(
            "kcat's producer has no transaction commands (no begin/commit/abort; setting "
            "transactional.id alone makes librdkafka refuse to produce outside a transaction)"
        )

    def list_topics(self) -> dict[str, int]:
        meta = json.loads(_run([*self._base(), "-L", "-J"]))
        return {t["topic"]: len(t["partitions"]) for t in meta["topics"]}

    def offset_for_time(self, topic: str, partition: int, timestamp: int) -> int | None:
        out = _run([*self._base(), "-Q", "-t", f"{topic}:{partition}:{timestamp}"]).decode()
        m = re.search(rf"{re.escape(topic)} \[{partition}\] offset (-?\d+)", out)
        if m is None:
            raise ClientError("KCAT_OUTPUT", out)
        offset = int(m.group(1))
        return None if offset < 0 else offset

    def group_member(self, group: str, topics: Iterable[str], client_id: str) -> Member:
        return KcatMember(self.bootstrap, group, topics, client_id)

    def legacy_round_trip(
        self, topic: str, message_format: int, values: list[bytes]
    ) -> list[bytes]:
        if message_format != 0:
            raise Unsupported(
                "librdkafka sends ApiVersions whenever broker.version.fallback >= 0.10, "
                "so it never produces message format v1 to a Kafka 4 broker"
            )
        fallback = "0.9.0"
        legacy = ["-X", "api.version.request=false", "-X", f"broker.version.fallback={fallback}"]
        payload = b"".join(v + b"\n" for v in values)
        _run(
            [
                *self._base(),
                "-P",
                "-E",
                "-t",
                topic,
                "-p",
                "0",
                "-X",
                "message.timeout.ms=20000",
                *legacy,
            ],
            payload,
            timeout=40,
        )
        out = _run(
            [
                *self._base(),
                "-C",
                "-t",
                topic,
                "-p",
                "0",
                "-o",
                "beginning",
                "-e",
                "-c",
                str(len(values)),
                "-f",
                "%s\\n",
                *legacy,
            ],
            timeout=40,
        )
        return out.splitlines()


ADAPTER = KcatAdapter

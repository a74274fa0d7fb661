"""Java client adapter: drives `Driver` (kafka-clients 4.4.0 in one JVM) over JSON lines.

The driver's sources (`*.java` here) are compiled at run time with `javac` against Apache
Kafka's jars in the oracle's cache (`compat.oracle.kafka.ensure_libs()`: kafka-clients 4.4.0
and its dependencies lz4-java, snappy-java, zstd-jni, slf4j; log4j as the slf4j binding;
Jackson for the driver's JSON) into a cache folder named by the hash of the sources and the
jars (`build()`; nothing is compiled into the checkout). `python compat/java-client/adapter.py`
builds it and prints the folder.

One JVM per adapter; requests carry ids and may overlap (group members poll from their own
threads), answers are matched by id by a reader thread. Bytes travel base64. The driver's
files say how each operation maps onto the client: KafkaProducer (send, then each record's
future), KafkaConsumer with group.protocol=classic (assign + seek without a group; subscribe,
poll, commitSync for members), Admin.

Not expressible with the Java client: a client set up for an old broker (`legacy_note`).
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import hashlib
import itertools
import json
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterable
from concurrent.futures import Future
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # `python compat/java-client/adapter.py`: the build step alone
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from compat.oracle import kafka as oracle
from compat.scenarios.api import (
    Adapter,
    ClientError,
    ConsumeFrom,
    Delivery,
    GroupInfo,
    GroupMemberInfo,
    Member,
    Rec,
)

HERE = Path(__file__).resolve().parent
CALL_TIMEOUT = 90.0
START_TIMEOUT = 60.0
#: The jars on the driver's class path, by name prefix (one jar each in the oracle's libs).
JARS = (
    "kafka-clients-",
    "lz4-java-",
    "snappy-java-",
    "zstd-jni-",
    "slf4j-api-",
    "log4j-api-",
    "log4j-core-",
    "log4j-slf4j-impl-",
    "jackson-core-",
    "jackson-databind-",
    "jackson-annotations-",
)
#: A small, cheap JVM: the driver moves little data (C1 only, serial GC, 256 MiB heap).
JVM_OPTS = ("-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1")


def _jars(libs: Path) -> list[Path]:
    out = []
    for prefix in JARS:
        found = sorted(p for p in libs.glob(f"{prefix}*.jar") if p.name[len(prefix)].isdigit())
        if len(found) != 1:
            raise RuntimeError(f"expected one {prefix}*.jar in {libs}, found {found}")
        out.append(found[0])
    return out


def build() -> tuple[Path, list[Path]]:
    """The driver's compiled classes (built on first use, under a file lock) and its jars."""
    javac = shutil.which("javac")
    if javac is None:
        raise RuntimeError("javac is missing: a JDK 17+ (apt-get install default-jdk-headless)")
    jars = _jars(oracle.ensure_libs())
    sources = sorted(HERE.glob("*.java"))
    digest = hashlib.sha256()
    for path in [*sources, HERE / "log4j2.properties"]:
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    for jar in jars:
        digest.update(jar.name.encode() + b"\0")
    root = oracle.cache_dir() / "java-client-driver"
    classes = root / digest.hexdigest()[:20]
    if (classes / "Driver.class").exists():
        return classes, jars
    root.mkdir(parents=True, exist_ok=True)
    with (root / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (classes / "Driver.class").exists():
            return classes, jars
        partial = root / f"{classes.name}.partial"
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir()
        cmd = [javac, "--release", "17", "-Xlint:all", "-Werror", "-d", str(partial)]
        cmd += ["-cp", ":".join(map(str, jars)), *map(str, sources)]
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"javac failed:\n{done.stdout}{done.stderr}")
        shutil.copy(HERE / "log4j2.properties", partial / "log4j2.properties")
        partial.rename(classes)
    return classes, jars


def _b64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode()


def _unb64(data: str | None) -> bytes | None:
    return None if data is None else base64.b64decode(data)


def _rec(d: dict[str, Any]) -> Rec:
    return Rec(
        key=_unb64(d["key"]),
        value=_unb64(d["value"]),
        headers=tuple((k, _unb64(v)) for k, v in d["headers"]),
        timestamp=d["timestamp"],
        partition=d["partition"],
        offset=d["offset"],
        timestamp_type=d["timestampType"],
    )


class Driver:
    """The JVM running `Driver`: JSON lines in and out, answers matched by id."""

    def __init__(self) -> None:
        classes, jars = build()
        self._proc = subprocess.Popen(
            [oracle.java(), *JVM_OPTS, "-cp", ":".join(map(str, [classes, *jars])), "Driver"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=None,  # the clients' warnings go to our stderr
            text=True,
            bufsize=1,
        )
        self._ids = itertools.count(1)
        self._pending: dict[int, Future[Any]] = {}
        self._lock = threading.Lock()
        self._ready: Future[bool] = Future()
        threading.Thread(target=self._read, daemon=True).start()
        try:
            self._ready.result(timeout=START_TIMEOUT)
        except Exception:
            self.close()
            raise

    def _read(self) -> None:
        assert self._proc.stdout is not None
        for line in self._proc.stdout:
            try:
                msg = json.loads(line)
            except ValueError:  # not the driver's (a JVM message): shown, not fatal
                print(f"java-client driver: {line.rstrip()}", file=sys.stderr)
                continue
            if "id" not in msg:  # {"ready": true}: the JVM is up
                self._ready.set_result(True)
                continue
            with self._lock:
                fut = self._pending.pop(msg["id"], None)
            if fut is None:
                continue
            if "error" in msg:
                fut.set_exception(ClientError(msg["error"]["code"], msg["error"]["message"]))
            else:
                fut.set_result(msg["ok"])
        with self._lock:
            for fut in [*self._pending.values(), self._ready]:
                if not fut.done():
                    fut.set_exception(ClientError("DRIVER_EXITED", "the Java driver exited"))
            self._pending.clear()

    def call(self, op: str, timeout: float = CALL_TIMEOUT, **args: Any) -> Any:
        fut: Future[Any] = Future()
        with self._lock:
            ident = next(self._ids)
            self._pending[ident] = fut
            assert self._proc.stdin is not None
            self._proc.stdin.write(json.dumps({"id": ident, "op": op, "args": args}) + "\n")
            self._proc.stdin.flush()
        return fut.result(timeout=timeout)

    def close(self) -> None:
        if self._proc.poll() is None:
            with contextlib.suppress(Exception):
                self.call("close", timeout=30)
            assert self._proc.stdin is not None
            with contextlib.suppress(OSError):
                self._proc.stdin.close()
            try:
                self._proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()


class JavaMember(Member):
    def __init__(self, driver: Driver, handle: int) -> None:
        self._driver = driver
        self._handle = handle
        self._assigned: set[tuple[str, int]] = set()

    def poll(self, timeout_s: float) -> list[Rec]:
        res = self._driver.call("memberPoll", member=self._handle, timeoutMs=int(timeout_s * 1000))
        self._assigned = {(t, p) for t, p in res["assignment"]}
        return [_rec(r) for r in res["records"]]

    def assignment(self) -> set[tuple[str, int]]:
        return set(self._assigned)

    def close(self) -> None:
        self._driver.call("memberClose", member=self._handle)


class JavaClientAdapter(Adapter):
    name = "java-client"
    version = oracle.KAFKA_VERSION
    capabilities = frozenset(
        {
            "timestamp",
            "headers",
            "header_null",
            "null_value",
            "null_key",
            "binary",
            "idempotent",
            "tstype",
        }
    )
    codecs = ("gzip", "snappy", "lz4", "zstd")
    legacy_note = (
        "it always starts with ApiVersions, and since Kafka 4.0 (KIP-896) it sends no request "
        "version older than Kafka 2.1's (Produce v3, record format v2); no setting changes that"
    )

    def __init__(self, bootstrap: str) -> None:
        super().__init__(bootstrap)
        self._driver = Driver()

    def close(self) -> None:
        self._driver.close()

    def _call(self, op: str, **args: Any) -> Any:
        return self._driver.call(
            op, bootstrap=args.pop("bootstrap", None) or self.bootstrap, **args
        )

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
        wire = [
            {
                "key": _b64(r.key),
                "value": _b64(r.value),
                "headers": [[k, _b64(v)] for k, v in r.headers],
                "timestamp": r.timestamp,
                "partition": r.partition,
            }
            for r in records
        ]
        got = self._call(
            "produce",
            bootstrap=bootstrap,
            topic=topic,
            records=wire,
            compression=compression,
            idempotent=idempotent,
            timeoutMs=int(timeout_s * 1000),
        )
        return [Delivery(d["partition"], d["offset"]) for d in got]

    def consume_from(self, q: ConsumeFrom) -> list[Rec]:
        got = self._call(
            "consume",
            topic=q.topic,
            partition=q.partition,
            start=q.start,
            count=q.count,
            timeoutMs=int(q.timeout_s * 1000),
            readCommitted=q.read_committed,
        )
        return [_rec(r) for r in got]

    def transactional_produce(
        self,
        topic: str,
        transactions: list[tuple[list[Rec], bool]],
        transactional_id: str,
        timeout_s: float = 30.0,
    ) -> None:
        wire = [
            {
                "records": [
                    {
                        "key": _b64(r.key),
                        "value": _b64(r.value),
                        "headers": [],
                        "timestamp": None,
                        "partition": r.partition,
                    }
                    for r in records
                ],
                "commit": commit,
            }
            for records, commit in transactions
        ]
        self._call(
            "transactionalProduce",
            topic=topic,
            transactions=wire,
            transactionalId=transactional_id,
            timeoutMs=int(timeout_s * 1000),
        )

    def list_topics(self) -> dict[str, int]:
        return dict(self._call("listTopics"))

    def create_topic(self, name: str, partitions: int, configs: dict[str, str]) -> None:
        self._call(
            "createTopic",
            name=name,
            partitions=partitions,
            replicationFactor=self.replication_factor,
            configs=configs,
        )

    def create_partitions(self, name: str, total: int) -> None:
        self._call("createPartitions", name=name, total=total)

    def describe_topic_configs(self, name: str) -> dict[str, str | None]:
        return dict(self._call("describeConfigs", name=name))

    def alter_topic_configs(self, name: str, configs: dict[str, str]) -> None:
        self._call("alterConfigs", name=name, configs=configs)

    def delete_topic(self, name: str) -> None:
        self._call("deleteTopic", name=name)

    def list_groups(self) -> set[str]:
        return set(self._call("listGroups"))

    def describe_group(self, group: str) -> GroupInfo:
        d = self._call("describeGroup", group=group)
        members = [
            GroupMemberInfo(m["memberId"], m["clientId"], {(t, p) for t, p in m["assignment"]})
            for m in d["members"]
        ]
        return GroupInfo(group, d["state"], d["protocolType"], members)

    def delete_group(self, group: str) -> None:
        self._call("deleteGroup", group=group)

    def offset_for_time(self, topic: str, partition: int, timestamp: int) -> int | None:
        got = self._call("offsetForTime", topic=topic, partition=partition, timestamp=timestamp)
        return None if int(got) < 0 else int(got)

    def delete_records(self, topic: str, partition: int, before: int) -> int:
        return int(self._call("deleteRecords", topic=topic, partition=partition, before=before))

    def group_member(self, group: str, topics: Iterable[str], client_id: str) -> Member:
        handle = self._call("memberStart", group=group, topics=list(topics), clientId=client_id)
        return JavaMember(self._driver, int(handle))


ADAPTER = JavaClientAdapter

if __name__ == "__main__":
    print(build()[0])

"""kafkajs adapter: drives `node driver.js` (kafkajs 2.2.4) over JSON lines.

One Node process per adapter; requests carry ids and may overlap (group members poll from
their own threads), answers are matched by id by a reader thread. Bytes travel base64.
The driver's own docstring says how each operation maps onto kafkajs.

kafkajs quirks the adapter absorbs: fetchTopicOffsetsByTimestamp answers Kafka's "no such
offset" (-1) with the high watermark (mapped back to None here); deleteTopicRecords needs the
topic's metadata loaded first.

Not expressible in kafkajs: a null header value, the timestamp type of a consumed record,
ApiVersions switched off, zstd (no codec installs without a native build), reading a
partition without a consumer group (the driver uses a throwaway group and seek()).
"""

from __future__ import annotations

import base64
import contextlib
import itertools
import json
import shutil
import subprocess
import threading
from collections.abc import Iterable
from concurrent.futures import Future
from pathlib import Path
from typing import Any

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
# kafkajs error types that differ from Kafka's names.
_RENAMES: dict[str, str] = {}


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
    )


class Driver:
    def __init__(self) -> None:
        node = shutil.which("node")
        if node is None:
            raise RuntimeError("node is not installed")
        if not (HERE / "node_modules" / "kafkajs").is_dir():
            raise RuntimeError(f"kafkajs is not installed: run `npm ci` in {HERE}")
        self._proc = subprocess.Popen(
            [node, str(HERE / "driver.js")],
            cwd=HERE,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=None,  # kafkajs warnings go to our stderr
            text=True,
            bufsize=1,
        )
        self._ids = itertools.count(1)
        self._pending: dict[int, Future[Any]] = {}
        self._lock = threading.Lock()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self._proc.stdout is not None
        for line in self._proc.stdout:
            msg = json.loads(line)
            with self._lock:
                fut = self._pending.pop(msg["id"], None)
            if fut is None:
                continue
            if "error" in msg:
                err = msg["error"]
                code = _RENAMES.get(err["code"], err["code"])
                fut.set_exception(ClientError(code, err["message"]))
            else:
                fut.set_result(msg["ok"])
        with self._lock:
            for fut in self._pending.values():
                fut.set_exception(ClientError("DRIVER_EXITED", "node driver exited"))
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
                self.call("close", timeout=20)
            assert self._proc.stdin is not None
            self._proc.stdin.close()
            try:
                self._proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()


class KafkajsMember(Member):
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


class KafkajsAdapter(Adapter):
    name = "kafkajs"
    version = "2.2.4"
    capabilities = frozenset(
        {"timestamp", "headers", "null_value", "null_key", "binary", "idempotent"}
    )
    codecs = ("gzip", "snappy", "lz4")
    codec_notes = {
        "zstd": "no built-in zstd, and the @kafkajs/zstd codec needs a native build (cppzst)"
    }

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
        return None if got is None else [Delivery(d["partition"], d["offset"]) for d in got]

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
                    {"key": _b64(r.key), "value": _b64(r.value), "partition": r.partition}
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
            timeoutMs=int(timeout_s * 1000 * (len(transactions) + 1)),
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
        offset, high = int(got["offset"]), int(got["high"])
        return None if offset < 0 or offset >= high else offset

    def delete_records(self, topic: str, partition: int, before: int) -> int:
        return int(self._call("deleteRecords", topic=topic, partition=partition, before=before))

    def group_member(self, group: str, topics: Iterable[str], client_id: str) -> Member:
        handle = self._call("memberStart", group=group, topics=list(topics), clientId=client_id)
        return KafkajsMember(self._driver, int(handle))


ADAPTER = KafkajsAdapter

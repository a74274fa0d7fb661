"""Clients driven over JSON lines: a driver process speaks for the client, an adapter talks to it.

A client that Python cannot call directly (kafkajs in Node, the Java client in a JVM) runs a
small driver program (`compat/kafkajs/driver.js`, `compat/java-client/Driver.java`) that
reads one request per line on stdin and writes one answer per line on stdout:

    {"id": 7, "op": "produce", "args": {...}}       # request
    {"id": 7, "ok": <result>}                       # answer
    {"id": 7, "error": {"code": "...", "message": "..."}}
    {"ready": true}                                 # (optional) the driver is up

`Driver` runs one such process: requests carry ids and may overlap (group members poll from
their own threads), answers are matched by id by a reader thread; a line that is not JSON
(a JVM's own message) is shown on stderr and skipped. Bytes travel base64.

`JsonLinesAdapter` maps every `Adapter` operation onto the ops both drivers implement
(produce, consume, transactionalProduce, listTopics, createTopic, createPartitions,
describeConfigs, alterConfigs, deleteTopic, listGroups, describeGroup, deleteGroup,
offsetForTime, deleteRecords, memberStart/memberPoll/memberClose); a client's adapter adds
only what differs: how its driver starts (`start_driver`), its capabilities and codecs, and
its quirks (kafkajs's `offset_for_time`).
"""

from __future__ import annotations

import base64
import contextlib
import itertools
import json
import subprocess
import sys
import threading
from collections.abc import Iterable, Sequence
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

CALL_TIMEOUT = 90.0


def b64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode()


def unb64(data: str | None) -> bytes | None:
    return None if data is None else base64.b64decode(data)


def record_in(d: dict[str, Any]) -> Rec:
    """A consumed record as a driver sends it (`timestampType` only where the client has it)."""
    return Rec(
        key=unb64(d["key"]),
        value=unb64(d["value"]),
        headers=tuple((k, unb64(v)) for k, v in d["headers"]),
        timestamp=d["timestamp"],
        partition=d["partition"],
        offset=d["offset"],
        timestamp_type=d.get("timestampType"),
    )


def record_out(r: Rec, *, with_headers: bool = True) -> dict[str, Any]:
    """A record to produce as a driver reads it (a transaction's records: no headers, no
    timestamp)."""
    return {
        "key": b64(r.key),
        "value": b64(r.value),
        "headers": [[k, b64(v)] for k, v in r.headers] if with_headers else [],
        "timestamp": r.timestamp if with_headers else None,
        "partition": r.partition,
    }


class Driver:
    """One driver process: JSON lines in and out, answers matched by id.

    `label` names it in messages ("node driver"); with `start_timeout` the driver's
    `{"ready": true}` line is awaited that long (the process is closed if it does not come)."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        label: str,
        cwd: Path | None = None,
        start_timeout: float | None = None,
        close_timeout: float = 30.0,
    ) -> None:
        self.label = label
        self.close_timeout = close_timeout
        self._proc = subprocess.Popen(
            list(argv),
            cwd=cwd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=None,  # the client's warnings go to our stderr
            text=True,
            bufsize=1,
        )
        self._ids = itertools.count(1)
        self._pending: dict[int, Future[Any]] = {}
        self._lock = threading.Lock()
        self._ready: Future[bool] = Future()
        self._exited = False  # the driver's output ended: no answer comes any more
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        if start_timeout is not None:
            try:
                self._ready.result(timeout=start_timeout)
            except Exception:
                self.close()
                raise

    def _read(self) -> None:
        assert self._proc.stdout is not None
        for line in self._proc.stdout:
            try:
                msg = json.loads(line)
            except ValueError:  # not the driver's (a JVM message): shown, not fatal
                print(f"{self.label}: {line.rstrip()}", file=sys.stderr)
                continue
            if "id" not in msg:  # {"ready": true}: the driver is up
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
            self._exited = True
            for fut in [*self._pending.values(), self._ready]:
                if not fut.done():
                    fut.set_exception(self._gone())
            self._pending.clear()

    def _gone(self) -> ClientError:
        return ClientError("DRIVER_EXITED", f"{self.label} exited")

    def call(self, op: str, timeout: float = CALL_TIMEOUT, **args: Any) -> Any:
        fut: Future[Any] = Future()
        with self._lock:
            if self._exited:  # nobody would answer
                raise self._gone()
            ident = next(self._ids)
            self._pending[ident] = fut
            assert self._proc.stdin is not None
            self._proc.stdin.write(json.dumps({"id": ident, "op": op, "args": args}) + "\n")
            self._proc.stdin.flush()
        return fut.result(timeout=timeout)

    def close(self) -> None:
        """Ask the driver to close its clients, end its input, wait for it (SIGKILL after
        `close_timeout`); then close the pipes."""
        if self._proc.poll() is None:
            with contextlib.suppress(Exception):
                self.call("close", timeout=self.close_timeout)
            assert self._proc.stdin is not None
            with contextlib.suppress(OSError):
                self._proc.stdin.close()
            try:
                self._proc.wait(timeout=self.close_timeout)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        self._reader.join(timeout=self.close_timeout)
        for pipe in (self._proc.stdin, self._proc.stdout):
            if pipe is not None and not self._reader.is_alive():
                with contextlib.suppress(OSError):
                    pipe.close()


class JsonLinesMember(Member):
    """A group member living in the driver, known by its handle."""

    def __init__(self, driver: Driver, handle: int) -> None:
        self._driver = driver
        self._handle = handle
        self._assigned: set[tuple[str, int]] = set()

    def poll(self, timeout_s: float) -> list[Rec]:
        res = self._driver.call("memberPoll", member=self._handle, timeoutMs=int(timeout_s * 1000))
        self._assigned = {(t, p) for t, p in res["assignment"]}
        return [record_in(r) for r in res["records"]]

    def assignment(self) -> set[tuple[str, int]]:
        return set(self._assigned)

    def close(self) -> None:
        self._driver.call("memberClose", member=self._handle)


class JsonLinesAdapter(Adapter):
    """Every operation as a request to the driver `start_driver()` starts (one per adapter)."""

    def __init__(self, bootstrap: str) -> None:
        super().__init__(bootstrap)
        self._driver = self.start_driver()

    def start_driver(self) -> Driver:
        raise NotImplementedError

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
        got = self._call(
            "produce",
            bootstrap=bootstrap,
            topic=topic,
            records=[record_out(r) for r in records],
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
        return [record_in(r) for r in got]

    def transactional_produce(
        self,
        topic: str,
        transactions: list[tuple[list[Rec], bool]],
        transactional_id: str,
        timeout_s: float = 30.0,
    ) -> None:
        wire = [
            {"records": [record_out(r, with_headers=False) for r in records], "commit": commit}
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
        """The driver answers the offset, or -1 for none."""
        got = self._call("offsetForTime", topic=topic, partition=partition, timestamp=timestamp)
        return None if int(got) < 0 else int(got)

    def delete_records(self, topic: str, partition: int, before: int) -> int:
        return int(self._call("deleteRecords", topic=topic, partition=partition, before=before))

    def group_member(self, group: str, topics: Iterable[str], client_id: str) -> Member:
        handle = self._call("memberStart", group=group, topics=list(topics), clientId=client_id)
        return JsonLinesMember(self._driver, int(handle))

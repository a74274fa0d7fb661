"""Java client adapter: drives `Driver` (kafka-clients 4.4.0 in one JVM) over JSON lines.

The driver's sources (`*.java` here) are compiled at run time with `javac` against Apache
Kafka's jars in the oracle's cache (`compat.oracle.kafka.ensure_libs()`: kafka-clients 4.4.0
and its dependencies lz4-java, snappy-java, zstd-jni, slf4j; log4j as the slf4j binding;
Jackson for the driver's JSON) into a cache folder named by the hash of the sources and the
jars (`build()`, with `compat.oracle.javac.compile_java`; nothing is compiled into the
checkout). `python compat/java-client/adapter.py` builds it and prints the folder.

One JVM per adapter, driven as `compat.scenarios.jsonlines` says (requests with ids, answers
matched by a reader thread, bytes in base64; the JVM's ready line is awaited). The driver's
files say how each operation maps onto the client: KafkaProducer (send, then each record's
future), KafkaConsumer (assign + seek without a group; subscribe, poll, commitSync for
members, with group.protocol=classic, or =consumer in the consumer protocol's rows), Admin.

Not expressible with the Java client: a client set up for an old broker (`legacy_note`).
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path

if __package__ in (None, ""):  # `python compat/java-client/adapter.py`: the build step alone
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from compat.oracle import kafka as oracle
from compat.oracle.javac import compile_java
from compat.scenarios.api import Member, Rec
from compat.scenarios.jsonlines import Driver, JsonLinesAdapter, JsonLinesMember, record_in

HERE = Path(__file__).resolve().parent
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
    """The driver's compiled classes (with its log4j2.properties; built on first use) and
    its jars."""
    jars = _jars(oracle.ensure_libs())
    classes = compile_java(
        "java-client-driver",
        sorted(HERE.glob("*.java")),
        classpath=jars,
        options=["--release", "17", "-Xlint:all", "-Werror"],
        resources=[HERE / "log4j2.properties"],
    )
    return classes, jars


class JavaClientAdapter(JsonLinesAdapter):
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
    group_protocols = frozenset({"classic", "consumer"})
    legacy_note = (
        "it always starts with ApiVersions, and since Kafka 4.0 (KIP-896) it sends no request "
        "version older than Kafka 2.1's (Produce v3, record format v2); no setting changes that"
    )

    def start_driver(self) -> Driver:
        """The JVM running `Driver` (waits for its ready line)."""
        classes, jars = build()
        cp = ":".join(map(str, [classes, *jars]))
        return Driver(
            [oracle.java(), *JVM_OPTS, "-cp", cp, "Driver"],
            label="java-client driver",
            start_timeout=START_TIMEOUT,
        )

    def group_member(self, group: str, topics: Iterable[str], client_id: str) -> Member:
        """A `KafkaConsumer` member with `group.protocol` = `self.group_protocol`."""
        handle = self._call(
            "memberStart",
            group=group,
            topics=list(topics),
            clientId=client_id,
            groupProtocol=self.group_protocol,
        )
        return JsonLinesMember(self._driver, int(handle))

    def configure(self, bootstrap: str, settings: dict[str, str]) -> None:
        """Every client the driver makes for `bootstrap` from now on gets `settings` too (the
        security ones: `security.protocol`, `sasl.jaas.config`, `ssl.truststore.*`, ...)."""
        self._driver.call("configure", bootstrap=bootstrap, settings=settings)

    def read(self, bootstrap: str, topic: str, count: int, timeout_s: float = 30.0) -> list[Rec]:
        """`count` records of `topic`-0 from offset 0 through `bootstrap` (assign + seek)."""
        got = self._call(
            "consume",
            bootstrap=bootstrap,
            topic=topic,
            partition=0,
            start=0,
            count=count,
            timeoutMs=int(timeout_s * 1000),
            readCommitted=False,
        )
        return [record_in(r) for r in got]


ADAPTER = JavaClientAdapter

if __name__ == "__main__":
    print(build()[0])

"""Apache Kafka 4.4.0's jars in a cache outside the checkout, fetched once with Maven.

    libs = ensure_libs()          # CACHE/libs: every jar, fetched on first use, offline after
    clients_jar()                 # CACHE/libs/kafka-clients-4.4.0.jar
    message_definitions()         # {"ProduceRequest.json": text, ...} from that jar

Standard library only (no `protocol`, no `wirebroker`): `tools/gen_protocol.py` generates
`protocol/messages` from the message definitions in kafka-clients, so it must be able to reach
them whatever state `protocol/messages` is in. `compat.oracle.kafka` starts the broker from the
same jars.

The cache is `$WIREBROKER_ORACLE_CACHE`, else `$XDG_CACHE_HOME/wirebroker/apache-kafka-4.4.0`
(`~/.cache/...`): shared by every clone on the machine. `ensure_libs` runs
`mvn dependency:copy-dependencies` on compat/oracle/pom.xml when the cache's stamp does not
match the pom (first use, or the pom changed), under a file lock so that concurrent callers
fetch once.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import zipfile
from pathlib import Path

KAFKA_VERSION = "4.4.0"
POM = Path(__file__).resolve().with_name("pom.xml")
#: Where kafka-clients keeps Kafka's JSON message definitions (the protocol's source of truth).
MESSAGE_DIR = "common/message/"


class OracleError(RuntimeError):
    """Apache Kafka could not be fetched or started."""


def cache_dir() -> Path:
    explicit = os.environ.get("WIREBROKER_ORACLE_CACHE")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "wirebroker" / f"apache-kafka-{KAFKA_VERSION}"


def _pom_digest() -> str:
    return hashlib.sha256(POM.read_bytes()).hexdigest()


def ensure_libs(*, quiet: bool = True) -> Path:
    """The folder of Apache Kafka's jars, fetched with Maven on first use (offline after)."""
    root = cache_dir()
    libs = root / "libs"
    stamp = root / "stamp"
    digest = _pom_digest()
    if stamp.exists() and stamp.read_text().strip() == digest:
        return libs
    root.mkdir(parents=True, exist_ok=True)
    with (root / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if stamp.exists() and stamp.read_text().strip() == digest:
            return libs
        mvn = shutil.which("mvn")
        if mvn is None:
            raise OracleError("Maven (mvn) is not installed: apt-get install maven")
        partial = root / "libs.partial"
        shutil.rmtree(partial, ignore_errors=True)
        cmd = [
            mvn,
            "-B",
            *(["-q"] if quiet else []),
            "-f",
            str(POM),
            "dependency:copy-dependencies",
            f"-DoutputDirectory={partial}",
            "-DincludeScope=runtime",
        ]
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise OracleError(
                f"mvn failed ({done.returncode}): {(done.stdout + done.stderr)[-2000:]}"
            )
        shutil.rmtree(libs, ignore_errors=True)
        partial.rename(libs)
        stamp.write_text(digest + "\n")
    return libs


def clients_jar() -> Path:
    """kafka-clients-4.4.0.jar (fetched if needed)."""
    jar = ensure_libs() / f"kafka-clients-{KAFKA_VERSION}.jar"
    if not jar.is_file():
        raise OracleError(f"{jar} is missing from the cache")
    return jar


def message_definitions() -> dict[str, str]:
    """Kafka's JSON message definitions as shipped in kafka-clients: file name -> text
    (`common/message/*.json`; comments included, as Kafka writes them)."""
    with zipfile.ZipFile(clients_jar()) as jar:
        return {
            base: jar.read(name).decode("utf-8")
            for name in sorted(jar.namelist())
            if name.startswith(MESSAGE_DIR)
            and (base := name[len(MESSAGE_DIR) :]).endswith(".json")
            and "/" not in base
        }

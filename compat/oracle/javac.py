"""Java sources compiled at run time against Apache Kafka's jars, into the oracle's cache.

    classes = compile_java("kafka-streams", [HERE / "WordCount.java"])   # CACHE/classes/...
    subprocess.run([java(), "-cp", f"{classes}:{classpath()}", "WordCount", ...])

Nothing compiled goes into the checkout: the classes live in
`CACHE/classes/<name>/<key>/`, the key a hash of the sources, the resources copied next to
the classes, the class path and javac options, and `runtime_key()` (the java binary and the
jars' stamp), so an edited source, new jars or another JDK compile afresh and an unchanged
one is compiled once per machine. The first caller compiles under a file lock (concurrent
callers wait, then find the classes); a folder appears under its final name only complete.

`runtime_key()` is also what the tools' class data sharing archives are keyed by
(compat/scenarios/jvm.py).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

from compat.oracle.jars import OracleError, cache_dir, ensure_libs
from compat.oracle.kafka import java


def runtime_key() -> str:
    """16 hex digits naming the JVM a cached artefact is for: the real path of `java()` and
    the stamp of the jars in the cache."""
    stamp = (ensure_libs().parent / "stamp").read_text().strip()
    return hashlib.sha256(f"{os.path.realpath(java())}\n{stamp}".encode()).hexdigest()[:16]


def javac() -> str:
    """The `javac` next to the `java` that runs Kafka (the same JDK), else the one on PATH."""
    beside = Path(os.path.realpath(java())).with_name("javac")
    if beside.exists():
        return str(beside)
    found = shutil.which("javac")
    if found is None:
        raise OracleError("no javac: a JDK 17+ (apt-get install default-jdk-headless)")
    return found


def compile_java(
    name: str,
    sources: Sequence[Path],
    *,
    classpath: Sequence[Path] | None = None,
    options: Sequence[str] = (),
    resources: Sequence[Path] = (),
) -> Path:
    """The folder of `sources` compiled (javac `options`, against `classpath`: by default
    every jar of Kafka's), with `resources` copied beside the classes; compiled now unless
    the cache has it."""
    cp = [str(p) for p in classpath] if classpath is not None else [str(ensure_libs() / "*")]
    digest = hashlib.sha256(f"{runtime_key()}\0{':'.join(cp)}\0{' '.join(options)}\0".encode())
    for path in [*sources, *resources]:
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    root = cache_dir() / "classes" / name
    classes = root / digest.hexdigest()[:20]
    if classes.is_dir():
        return classes
    root.mkdir(parents=True, exist_ok=True)
    with (root / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if classes.is_dir():
            return classes
        partial = root / f"{classes.name}.partial"
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir()
        cmd = [javac(), *options, "-d", str(partial), "-cp", os.pathsep.join(cp)]
        done = subprocess.run(
            [*cmd, *map(str, sources)], capture_output=True, text=True, check=False
        )
        if done.returncode != 0:
            shutil.rmtree(partial, ignore_errors=True)
            raise OracleError(f"javac failed:\n{done.stdout}{done.stderr}")
        for path in resources:
            shutil.copy(path, partial / path.name)
        partial.rename(classes)
    return classes

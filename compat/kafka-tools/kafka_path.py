"""A KAFKA_PATH for test suites that call Kafka's scripts (librdkafka's tests/: test.c's
test_kafka_topics and test_kafka_cmd run `$KAFKA_PATH/bin/kafka-topics.sh ...`,
`$KAFKA_PATH/bin/kafka-acls.sh ...`; test_run_java runs `$KAFKA_PATH/bin/kafka-run-class.sh`
with CLASSPATH set; tests/java/Makefile compiles against `$KAFKA_PATH/libs/kafka-clients-*.jar`).

    compat/kafka-tools/kafka-path              # lays it out (once), prints the exports:
    export KAFKA_PATH=~/.cache/wirebroker/apache-kafka-4.4.0/kafka-path
    export KAFKA_VERSION=4.4.0

The folder lives in the oracle's cache, never in the checkout:

    KAFKA_PATH/libs                  -> the oracle's jars (Apache Kafka 4.4.0, fetched by Maven)
    KAFKA_PATH/bin/kafka-run-class.sh  java with the tools' JVM options, logging at WARN to
                                     stderr, classpath $CLASSPATH:libs/* (as Kafka's own
                                     script), then the class and its arguments
    KAFKA_PATH/bin/<tool>.sh         one per tool of compat/scenarios/jvm.py's TOOL_CLASSES
                                     (kafka-topics.sh, kafka-configs.sh, kafka-acls.sh, ...):
                                     kafka-run-class.sh with the class Kafka's script runs
    KAFKA_PATH/VERSION               4.4.0

A tool with a class data sharing archive from the compat runs (compat/scenarios/jvm.py) maps
it, as those runs do. The scripts are rewritten whenever this command runs (they name the
java binary and the cache), so a new JDK or a moved cache only needs a rerun.
"""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from compat.oracle.kafka import (  # noqa: E402
    KAFKA_VERSION,
    TOOL_JVM_OPTS,
    cache_dir,
    ensure_libs,
    java,
    tools_log4j,
)
from compat.scenarios.jvm import JVM_LOG, TOOL_CLASSES, _archive_dir  # noqa: E402

RUN_CLASS = """#!/usr/bin/env bash
# Kafka's bin/kafka-run-class.sh for compat/kafka-tools/kafka_path.py's KAFKA_PATH: the
# Apache Kafka {version} jars of the oracle's cache, the tools' JVM options.
#   kafka-run-class.sh CLASS [ARGS...]      ($CLASSPATH is put first, as Kafka's script does)
set -euo pipefail
cls=$1
shift
opts=({opts})
archive={archives}/"$cls".jsa
if [ -f "$archive" ]; then
    opts+=("-XX:SharedArchiveFile=$archive" {jvm_log})
fi
exec {java} "${{opts[@]}}" ${{KAFKA_OPTS:-}} \\
    -Dlog4j2.configurationFile={log4j} \\
    -cp "${{CLASSPATH:+$CLASSPATH:}}{libs}/*" "$cls" "$@"
"""

TOOL = """#!/usr/bin/env bash
# Kafka's bin/{name}.sh: {cls}
exec "$(dirname "$0")/kafka-run-class.sh" {cls} "$@"
"""


def layout() -> Path:
    """Write (or rewrite) the KAFKA_PATH folder; its path."""
    libs = ensure_libs()
    root = cache_dir() / "kafka-path"
    bin_dir = root / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    link = root / "libs"
    if link.is_symlink() or link.exists():
        link.unlink()
    link.symlink_to(libs, target_is_directory=True)
    q = shlex.quote
    scripts = {
        "kafka-run-class.sh": RUN_CLASS.format(
            version=KAFKA_VERSION,
            opts=" ".join(q(o) for o in TOOL_JVM_OPTS),
            archives=q(str(_archive_dir())),
            jvm_log=" ".join(q(o) for o in JVM_LOG),
            java=q(java()),
            log4j=q(str(tools_log4j())),
            libs=q(str(libs)),
        ),
        **{f"{name}.sh": TOOL.format(name=name, cls=cls) for name, cls in TOOL_CLASSES.items()},
    }
    for name, text in scripts.items():
        path = bin_dir / name
        partial = path.with_name(f".{name}.{os.getpid()}")
        partial.write_text(text)
        partial.chmod(0o755)
        os.replace(partial, path)
    (root / "VERSION").write_text(KAFKA_VERSION + "\n")
    return root


def main() -> int:
    root = layout()
    print(f"export KAFKA_PATH={shlex.quote(str(root))}")
    print(f"export KAFKA_VERSION={KAFKA_VERSION}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""kcat (Debian's build: kcat 1.7.1 on librdkafka 2.0.2) against a wirebroker subprocess.

What passing proves: an old librdkafka negotiates versions with the broker (it is pickier
about ApiVersions tagged fields than 2.16), auto-creates a topic from a producer's metadata
request, produces keyed lines, reads them back byte for byte at contiguous offsets, lists the
topic in metadata (-L) and queries the end offset (-Q).

Every kcat call runs with a subprocess timeout and `-m` (metadata timeout), and consumers run
with `-e` (exit at the end of the partition), so a broken broker fails the test rather than
hanging it.
"""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest
from _broker import BrokerProcess

pytestmark = pytest.mark.compat

TIMEOUT = 30.0


def _kcat(bootstrap: str, *args: str, stdin: bytes | None = None) -> bytes:
    kcat = shutil.which("kcat") or shutil.which("kafkacat")
    assert kcat is not None, "kcat is not installed (apt-get install kcat)"
    proc = subprocess.run(
        [kcat, "-b", bootstrap, "-m", "10", *args],
        input=stdin if stdin is not None else b"",
        capture_output=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert proc.returncode == 0, (
        f"kcat {' '.join(args)} exited {proc.returncode}\nstderr:\n{proc.stderr.decode()}"
    )
    return proc.stdout


def test_produce_consume_list_query(broker: BrokerProcess) -> None:
    topic = "kcat-lines"
    lines = [f"key{i}:value {i} ".encode() + b"x" * (i % 50) for i in range(100)]
    lines += [b"k\xc3\xa9:caf\xc3\xa9", b"empty-value:", b":empty-key"]
    payload = b"".join(line + b"\n" for line in lines)

    _kcat(broker.bootstrap, "-P", "-t", topic, "-p", "0", "-K:", stdin=payload)

    out = _kcat(broker.bootstrap, "-C", "-e", "-t", topic, "-o", "beginning", "-f", "%k:%s\n")
    assert out == payload

    offsets = _kcat(broker.bootstrap, "-C", "-e", "-t", topic, "-o", "beginning", "-f", "%o\n")
    assert offsets.split() == [str(i).encode() for i in range(len(lines))]

    meta = json.loads(_kcat(broker.bootstrap, "-L", "-J", "-t", topic))
    [entry] = [t for t in meta["topics"] if t["topic"] == topic]
    assert [p["partition"] for p in entry["partitions"]] == [0]  # num.partitions=1
    assert [b["id"] for b in meta["brokers"]] == [entry["partitions"][0]["leader"]]

    # -Q: offset for timestamp -1 (the latest offset) of partition 0.
    query = _kcat(broker.bootstrap, "-Q", "-t", f"{topic}:0:-1").decode()
    assert f"{topic} [0] offset {len(lines)}" in query, query

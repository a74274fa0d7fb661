"""Disk full: real producers fill the broker's data directory (see diskfull.py).

The data directory is an 8 MiB tmpfs when the test may mount one (root with CAP_SYS_ADMIN);
elsewhere the broker runs under quota_broker.py, a byte quota on the storage layer's
FileSystem seam. Which one was used is printed and in the failure message. Checked: sends
fail with KAFKA_STORAGE_ERROR or a delivery timeout, never a false acknowledgement and never a
hang; reads work while full; appends resume after space is freed without a restart; after a
restart no segment is corrupt (own scan and tools/dump_log.py) and every acknowledged record
is there exactly once.
"""

from __future__ import annotations

from pathlib import Path

import diskfull
import pytest

pytestmark = [
    pytest.mark.slow,
    pytest.mark.filterwarnings("ignore:unclosed <socket.socket:ResourceWarning"),
    pytest.mark.usefixtures("collect_leaked_sockets"),
]


def test_disk_full(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = diskfull.run_disk_full(tmp_path, cycles=2)
    text = diskfull.format_report(report)
    with capsys.disabled():
        print(f"\ndisk full ({report.mode}):\n{text}")
    assert report.problems() == [], text
    assert report.acked > 0 and report.failed > 0
    assert report.errors.get("KAFKA_STORAGE_ERROR", 0) + report.errors.get(
        "KafkaStorageError", 0
    ), "no client saw KAFKA_STORAGE_ERROR"

"""`LogDirLocks`: one holder per log directory, across processes and within one."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from wirebroker.log.dir_lock import LOCK_FILE, LogDirLockedError, LogDirLocks

_HOLDER = """
import sys
from pathlib import Path
from wirebroker.log.dir_lock import LogDirLocks
locks = LogDirLocks.acquire([Path(sys.argv[1])])
print("locked", flush=True)
sys.stdin.read()
"""


def test_second_lock_in_the_same_process_fails_until_released(tmp_path: Path) -> None:
    locks = LogDirLocks.acquire([tmp_path])
    with pytest.raises(LogDirLockedError) as info:
        LogDirLocks.acquire([tmp_path])
    assert str(tmp_path) in str(info.value)
    locks.release()
    locks.release()  # idempotent
    again = LogDirLocks.acquire([tmp_path])
    assert again.held
    again.release()
    assert (tmp_path / LOCK_FILE).exists()  # the file stays; only the lock is dropped


def test_a_failed_acquire_holds_none_of_the_directories(tmp_path: Path) -> None:
    free, busy = tmp_path / "a", tmp_path / "b"
    free.mkdir()
    busy.mkdir()
    holder = LogDirLocks.acquire([busy])
    with pytest.raises(LogDirLockedError) as info:
        LogDirLocks.acquire([free, busy])
    assert info.value.directory == busy
    LogDirLocks.acquire([free]).release()  # `free` was let go again
    holder.release()


def test_lock_is_held_across_processes_and_dropped_by_kill_9(tmp_path: Path) -> None:
    root = Path(__file__).resolve().parents[3]
    env = dict(os.environ, PYTHONPATH=str(root))
    with subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(tmp_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    ) as proc:
        try:
            assert proc.stdout is not None
            assert proc.stdout.readline().strip() == "locked"
            with pytest.raises(LogDirLockedError):
                LogDirLocks.acquire([tmp_path])
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=10)
            LogDirLocks.acquire([tmp_path]).release()  # the kernel dropped the dead holder's lock
        finally:
            proc.kill()

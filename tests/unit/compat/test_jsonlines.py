"""compat/scenarios/jsonlines.py, the driver protocol kafkajs and the Java client share, with a
small Python program in the driver's place (no client, no broker)."""

from __future__ import annotations

import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

from compat.scenarios.api import ClientError, Rec
from compat.scenarios.jsonlines import Driver, JsonLinesAdapter, record_in, record_out

# Answers "echo" with its args, "fail" with an error, "slow" only after the next "release"
# (so answers come out of order), "close" with true; prints a non-JSON line first, and a
# ready line when asked to.
FAKE = r"""
import json, sys
print("a JVM warning, not JSON", flush=True)
if "--ready" in sys.argv:
    print(json.dumps({"ready": True}), flush=True)
held = []
for line in sys.stdin:
    req = json.loads(line)
    op, ident, args = req["op"], req["id"], req["args"]
    if op == "exit":
        sys.exit(3)
    if op == "slow":
        held.append(ident)
        continue
    if op == "release":
        for h in held:
            print(json.dumps({"id": h, "ok": "late"}), flush=True)
        held.clear()
    if op == "fail":
        out = {"id": ident, "error": {"code": "MESSAGE_TOO_LARGE", "message": "too big"}}
    else:
        out = {"id": ident, "ok": args if op == "echo" else True}
    print(json.dumps(out), flush=True)
"""


def _driver(*flags: str, start_timeout: float | None = None) -> Driver:
    return Driver(
        [sys.executable, "-c", FAKE, *flags],
        label="fake driver",
        start_timeout=start_timeout,
        close_timeout=10,
    )


def test_answers_are_matched_by_id_and_errors_raise_client_errors(
    capsys: pytest.CaptureFixture[str],
) -> None:
    driver = _driver("--ready", start_timeout=10)
    try:
        with ThreadPoolExecutor(2) as pool:
            slow = pool.submit(driver.call, "slow", 10)
            assert driver.call("echo", 10, n=1, s="x") == {"n": 1, "s": "x"}
            assert not slow.done()
            assert driver.call("release", 10) is True
            assert slow.result(timeout=10) == "late"
        with pytest.raises(ClientError) as err:
            driver.call("fail", 10)
        assert (err.value.code, err.value.raw) == ("MESSAGE_TOO_LARGE", "too big")
    finally:
        driver.close()
    assert "fake driver: a JVM warning, not JSON" in capsys.readouterr().err


def test_a_driver_that_exits_fails_what_is_pending_and_every_later_call() -> None:
    driver = _driver()  # no ready line awaited
    try:
        with pytest.raises(ClientError) as err:
            driver.call("exit", 10)
        assert (err.value.code, err.value.raw) == ("DRIVER_EXITED", "fake driver exited")
        with pytest.raises(ClientError, match="DRIVER_EXITED"):  # at once, not after 10 s
            driver.call("echo", 10)
    finally:
        driver.close()


def test_a_driver_that_never_says_ready_fails_to_start() -> None:
    with pytest.raises(ClientError, match="DRIVER_EXITED"):
        Driver([sys.executable, "-c", "pass"], label="mute", start_timeout=10)


def test_records_travel_base64_with_nulls_kept() -> None:
    rec = Rec(b"k\x00", None, (("h", None), ("g", b"\xff")), timestamp=5, partition=2)
    wire = record_out(rec)
    assert wire == {
        "key": "awA=",
        "value": None,
        "headers": [["h", None], ["g", "/w=="]],
        "timestamp": 5,
        "partition": 2,
    }
    assert record_out(rec, with_headers=False)["headers"] == []
    back = record_in({**wire, "offset": 9})
    assert (back.key, back.value, back.headers, back.offset) == (
        b"k\x00",
        None,
        (("h", None), ("g", b"\xff")),
        9,
    )
    assert back.timestamp_type is None
    assert record_in({**wire, "offset": 9, "timestampType": 1}).timestamp_type == 1


class _EchoAdapter(JsonLinesAdapter):
    def start_driver(self) -> Driver:
        return _driver()


def test_the_adapter_sends_its_bootstrap_unless_a_call_names_another() -> None:
    adapter = _EchoAdapter("h:1")
    try:
        assert adapter._call("echo", x=1) == {"bootstrap": "h:1", "x": 1}
        assert adapter._call("echo", bootstrap="other:2") == {"bootstrap": "other:2"}
        assert adapter._call("echo", bootstrap=None) == {"bootstrap": "h:1"}
    finally:
        adapter.close()

"""Client plumbing of the commands: kafka-python clients built from the common options, and
the translation of their failures into one line.

Timeouts: `--timeout S` bounds the bootstrap (`bootstrap_timeout_ms`: a dead bootstrap fails
after S seconds with "cannot reach the bootstrap servers ...") and each request
(`request_timeout_ms`, the producer's `max_block_ms`, the consumer's offset lookups).

Broker error codes come back either as kafka-python exceptions (`KafkaError` subclasses, whose
class name is Kafka's error name in CamelCase) or as codes inside a response; `error_text`
turns a code into `UnknownTopicOrPartitionError: <message>` for per-item result rows.
"""

from __future__ import annotations

import argparse
import datetime as dt
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from wirebroker.ctl import CliError


def _ms(args: argparse.Namespace) -> int:
    return max(1, int(args.timeout * 1000))


def common_config(args: argparse.Namespace) -> dict[str, Any]:
    config = {
        "bootstrap_servers": [s.strip() for s in args.bootstrap.split(",") if s.strip()],
        "client_id": "wirebroker-cli",
        "bootstrap_timeout_ms": _ms(args),
        "request_timeout_ms": _ms(args),
    }
    path = getattr(args, "command_config", None)
    if path:
        config.update(security_config(path))
    return config


_JAAS_VALUE = re.compile(r'(\w+)\s*=\s*"([^"]*)"')


def security_config(path: str) -> dict[str, Any]:
    """kafka-python's security arguments from a Kafka client properties file (`--command-
    config`): security.protocol, sasl.mechanism, sasl.jaas.config's username and password,
    ssl.truststore.location (a PEM file)."""
    from wirebroker.config import parse_properties

    try:
        props = parse_properties(Path(path).expanduser().read_text())
    except OSError as exc:
        raise CliError(f"--command-config {path}: {exc.strerror}") from None
    out: dict[str, Any] = {}
    if "security.protocol" in props:
        out["security_protocol"] = props["security.protocol"].strip().upper()
    if "sasl.mechanism" in props:
        out["sasl_mechanism"] = props["sasl.mechanism"].strip().upper()
    jaas = dict(_JAAS_VALUE.findall(props.get("sasl.jaas.config", "")))
    if "username" in jaas:
        out["sasl_plain_username"] = jaas["username"]
    if "password" in jaas:
        out["sasl_plain_password"] = jaas["password"]
    if props.get("ssl.truststore.location"):
        out["ssl_cafile"] = props["ssl.truststore.location"]
    return out


@contextmanager
def admin(args: argparse.Namespace) -> Iterator[Any]:
    from kafka.admin import KafkaAdminClient

    client = KafkaAdminClient(**common_config(args))
    try:
        yield client
    finally:
        client.close()


def error_text(code: int, message: str | None = None) -> str:
    """`ErrorName` or `ErrorName: message` for a Kafka error code."""
    import kafka.errors as errors

    name = errors.for_code(code).__name__
    return f"{name}: {message}" if message else name


def error_class(code: int) -> Any:
    import kafka.errors as errors

    return errors.for_code(code)


def describe_error(exc: BaseException, args: argparse.Namespace) -> str | None:
    """One line for a client failure, or None when `exc` is a bug to show with its traceback."""
    import kafka.errors as errors

    bootstrap = getattr(args, "bootstrap", "?")
    no_brokers = getattr(errors, "NoBrokersAvailable", errors.KafkaTimeoutError)
    if isinstance(exc, no_brokers) or (
        isinstance(exc, errors.KafkaTimeoutError) and "bootstrap" in str(exc).lower()
    ):
        return f"cannot reach the bootstrap servers {bootstrap} (after {args.timeout:g} s)"
    if isinstance(exc, errors.KafkaConnectionError):
        return f"connection to {bootstrap} failed: {exc}"
    if isinstance(exc, errors.KafkaError):
        text = str(exc)
        name = type(exc).__name__
        return text if text.startswith(name) else f"{name}: {text}" if text else name
    if isinstance(exc, OSError):
        return str(exc)
    return None


def parse_timestamp(text: str) -> int:
    """Epoch milliseconds from `text`: an integer (ms), or ISO-8601 (UTC unless it has an
    offset; a trailing `Z` is accepted)."""
    text = text.strip()
    try:
        return int(text)
    except ValueError:
        pass
    try:
        when = dt.datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise CliError(
            f"bad timestamp {text!r}: expected epoch milliseconds or ISO-8601 "
            "(2024-05-01T12:00:00Z)",
            code=2,
        ) from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    return int(when.timestamp() * 1000)


def topic_metadata(client: Any, topics: list[str]) -> dict[str, dict[str, Any]]:
    """Metadata of `topics` by name; CliError for an unknown one."""
    found = {t["name"]: t for t in client.describe_topics(topics)}
    for name in topics:
        meta = found.get(name)
        if meta is None or meta["error_code"] == error_class(3).errno:
            raise CliError(f"unknown topic {name!r}")
        if meta["error_code"]:
            raise CliError(f"topic {name!r}: {error_text(meta['error_code'])}")
    return found


def partition_offsets(client: Any, partitions: list[Any], spec: Any) -> dict[Any, int | None]:
    """`{TopicPartition: offset}` for an OffsetSpec/OffsetTimestamp; None where it failed
    (no leader) or, for a timestamp, where no record is that recent (-1)."""
    if not partitions:
        return {}
    try:
        found = client.list_partition_offsets(dict.fromkeys(partitions, spec))
    except Exception:
        found = {}
        for tp in partitions:  # one at a time: a partition without leader fails alone
            try:
                found.update(client.list_partition_offsets({tp: spec}))
            except Exception:
                continue
    result: dict[Any, int | None] = {}
    for tp in partitions:
        item = found.get(tp)
        result[tp] = None if item is None or item.offset < 0 else item.offset
    return result

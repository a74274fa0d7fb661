"""`wirebroker produce TOPIC` and `wirebroker consume TOPIC` (KafkaProducer / KafkaConsumer).

produce: each input line, its trailing `\\n` (and `\\r`) removed, is one record; with
`-k SEP` the line is split at the first SEP into key and value. Records are sent
asynchronously (the producer batches them) and counted by their delivery callbacks; `flush()`
at the end waits for every acknowledgement. Idempotence is on for `--acks all` (the default,
as in Kafka 3+ clients) and off otherwise (Kafka requires acks=all for it). The summary:
    produced N records to TOPIC (partition P: n, ...) in S s      (stderr)
    {"topic", "produced", "failed", "partitions": {P: n}, "seconds", "errors": [..]}   (json)
Exit 1 when a record failed (the first errors are listed) or a line had no key separator.

consume: without --group the partitions (all, or -p) are `assign()`ed and positioned by
--from-beginning / --offset / --from-timestamp (default: the end, as kafka-console-consumer);
an offset outside [earliest, latest] is an error, not a silent reset. With --group the consumer
`subscribe()`s, starts at the group's committed offsets (else earliest with --from-beginning,
latest otherwise) and commits after each batch exactly what it printed (so `-n 2` leaves the
group at the third record) (--offset/--from-timestamp are refused there: reset
a group with `wirebroker group reset-offsets`). `--exit-at-end` snapshots the end offsets when
it starts and stops once every partition reached them.
"""

from __future__ import annotations

import argparse
import base64
import io
import json
import sys
import time
from collections import Counter
from typing import IO, Any

from wirebroker.ctl import CliError
from wirebroker.ctl._kafka import common_config, parse_timestamp
from wirebroker.ctl._output import emit_json, note
from wirebroker.ctl._progress import Progress

_MAX_LISTED_ERRORS = 5


def _lines(stream: IO[bytes]) -> Any:
    """(line without its newline, bytes it took in the input)."""
    for raw in stream:
        yield raw.rstrip(b"\n").rstrip(b"\r"), len(raw)


def _file_size(stream: IO[bytes]) -> int | None:
    """The size of a regular file (a progress total), None for pipes and terminals."""
    import os
    import stat

    try:
        st = os.fstat(stream.fileno())
    except (OSError, ValueError, io.UnsupportedOperation):
        return None
    return st.st_size if stat.S_ISREG(st.st_mode) else None


def produce(args: argparse.Namespace) -> int:
    from kafka import KafkaProducer

    acks: int | str = -1 if args.acks in ("all", "-1") else int(args.acks)
    separator = args.key_separator.encode() if args.key_separator else None
    if separator is not None and not separator:
        raise CliError("--key-separator must not be empty", code=2)
    source = _open_source(args)
    producer = KafkaProducer(
        **common_config(args),
        acks=acks,
        enable_idempotence=acks == -1,
        compression_type=None if args.compression == "none" else args.compression,
        max_block_ms=max(1, int(args.timeout * 1000)),
        delivery_timeout_ms=max(30_000, int(args.timeout * 1000) * 3),
        linger_ms=5,
    )
    sends = _Sends()
    started = time.monotonic()
    progress: Progress | None = None
    try:
        _check_partition(args, producer.partitions_for(args.topic))
        total = _file_size(source) if args.file else None
        progress = Progress(
            args, f"produce {args.topic}", total=total, unit_bytes=total is not None
        )
        _send_lines(producer, args, source, separator, sends, progress)
        producer.flush(timeout=max(args.timeout, 30.0))
    finally:
        if progress is not None:
            progress.close()
        producer.close(timeout=args.timeout)
        if args.file:
            source.close()
    _report_produced(args, sends, round(time.monotonic() - started, 3))
    return 0


def _open_source(args: argparse.Namespace) -> IO[bytes]:
    """The input: `--file` (the caller closes it) or stdin."""
    if not args.file:
        return sys.stdin.buffer
    try:
        return open(args.file, "rb")
    except OSError as exc:
        raise CliError(f"cannot read {args.file}: {exc.strerror}") from None


def _check_partition(args: argparse.Namespace, partitions: set[int] | None) -> None:
    if not partitions:
        raise CliError(f"unknown topic {args.topic!r}")
    if args.partition is not None and args.partition not in partitions:
        raise CliError(
            f"topic {args.topic!r} has no partition {args.partition} (it has {len(partitions)})"
        )


class _Sends:
    """What produce sent and what its delivery callbacks reported."""

    def __init__(self) -> None:
        self.per_partition: Counter[int] = Counter()
        self.errors: list[str] = []
        self.sent = 0
        self.bad_line: str | None = None

    def delivered(self, metadata: Any) -> None:
        self.per_partition[metadata.partition] += 1

    def failed(self, exc: BaseException) -> None:
        self.errors.append(f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__)


def _send_lines(
    producer: Any,
    args: argparse.Namespace,
    source: IO[bytes],
    separator: bytes | None,
    sends: _Sends,
    progress: Progress,
) -> None:
    """One record per line (split at `separator` into key and value); stops at a line
    without the separator (`sends.bad_line`)."""
    headers = [(k, v.encode()) for k, v in args.header]
    for number, (line, size) in enumerate(_lines(source), start=1):
        key: bytes | None = None
        value = line
        if separator is not None:
            key, sep, value = line.partition(separator)
            if not sep:
                sends.bad_line = f"line {number} has no key separator {args.key_separator!r}"
                break
        future = producer.send(
            args.topic, value=value, key=key, headers=headers, partition=args.partition
        )
        future.add_callback(sends.delivered)
        future.add_errback(sends.failed)
        sends.sent += 1
        progress.advance(1, size)


def _report_produced(args: argparse.Namespace, sends: _Sends, seconds: float) -> None:
    """The summary (module doc); CliError when a record failed or a line was bad."""
    per_partition, errors, sent = sends.per_partition, sends.errors, sends.sent
    produced = sum(per_partition.values())
    failed_count = sent - produced
    if args.format == "json":
        emit_json(
            {
                "topic": args.topic,
                "produced": produced,
                "failed": failed_count,
                "partitions": {str(p): n for p, n in sorted(per_partition.items())},
                "seconds": seconds,
                "errors": errors[:_MAX_LISTED_ERRORS],
            }
        )
    else:
        spread = ", ".join(f"partition {p}: {n}" for p, n in sorted(per_partition.items()))
        note(
            f"produced {produced} record{'s' if produced != 1 else ''} to {args.topic}"
            f"{f' ({spread})' if spread else ''} in {seconds:g} s"
            + (f"; {failed_count} failed" if failed_count else "")
        )
    for message in errors[:_MAX_LISTED_ERRORS]:
        note(f"  failed: {message}")
    if sends.bad_line is not None:
        raise CliError(f"{sends.bad_line}; stopped after {sent} records")
    if failed_count:
        raise CliError(f"{failed_count} of {sent} records were not acknowledged")


def _decode(data: bytes | None) -> str | None:
    if data is None:
        return None
    return data.decode("utf-8", errors="backslashreplace")


def _record_document(record: Any) -> dict[str, Any]:
    document: dict[str, Any] = {
        "topic": record.topic,
        "partition": record.partition,
        "offset": record.offset,
        "timestamp": record.timestamp,
        "key": _decode(record.key),
        "value": _decode(record.value),
        "headers": [[k, _decode(v)] for k, v in (record.headers or [])],
    }
    for field in ("key", "value"):
        raw = getattr(record, field)
        if raw is not None:
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError:  # not text: the exact bytes too
                document[f"{field}_base64"] = base64.b64encode(raw).decode()
    return document


class _Template:
    def __init__(self, template: str) -> None:
        self.template = template.encode().decode("unicode_escape")
        try:
            self.template.format_map(_FIELDS_PROBE)
        except (KeyError, IndexError, ValueError) as exc:
            raise CliError(
                f"bad --template {template!r}: {exc}; fields are "
                "{topic} {partition} {offset} {timestamp} {key} {value} {headers}",
                code=2,
            ) from None

    def render(self, record: Any) -> str:
        headers = ",".join(f"{k}={_decode(v)}" for k, v in (record.headers or []))
        return self.template.format(
            topic=record.topic,
            partition=record.partition,
            offset=record.offset,
            timestamp=record.timestamp,
            key=_decode(record.key) or "",
            value=_decode(record.value) or "",
            headers=headers,
        )


_FIELDS_PROBE = {
    k: "" for k in ("topic", "partition", "offset", "timestamp", "key", "value", "headers")
}


def consume(args: argparse.Namespace) -> int:
    from kafka import KafkaConsumer

    _check_consume_args(args)
    template = None
    if args.format == "text":
        default = "{key}\\t{value}" if args.print_key else "{value}"
        template = _Template(args.template or default)
    timestamp = parse_timestamp(args.from_timestamp) if args.from_timestamp else None

    consumer = KafkaConsumer(
        **common_config(args),
        group_id=args.group,
        enable_auto_commit=False,  # committed by hand: exactly the records printed
        auto_offset_reset="earliest" if args.from_beginning else "latest",
        consumer_timeout_ms=float("inf"),
    )
    printer = _Printer(template, sys.stdout)
    progress: Progress | None = None
    try:
        ends = _subscribe_or_assign(consumer, args, timestamp)
        total = args.num
        if args.exit_at_end:
            left = sum(end - consumer.position(tp) for tp, end in ends.items())
            total = left if total is None else min(total, left)
        progress = Progress(args, f"consume {args.topic}", total=total)
        _poll_and_print(consumer, args, ends, printer, progress)
    except KeyboardInterrupt:
        pass  # Ctrl-C is how a follow ends: a normal exit
    finally:
        if progress is not None:
            progress.close()
        sys.stdout.flush()
        consumer.close(autocommit=False)
    count = printer.count
    note(f"consumed {count} record{'s' if count != 1 else ''}")
    return 0


def _check_consume_args(args: argparse.Namespace) -> None:
    if args.group and (args.offset is not None or args.from_timestamp is not None):
        raise CliError(
            "--offset/--from-timestamp work without --group; move a group's offsets with "
            "`wirebroker group reset-offsets`",
            code=2,
        )
    if args.group and args.partition:
        raise CliError("--partition works without --group (the group assigns partitions)", 2)
    if args.group and args.exit_at_end:
        raise CliError("--exit-at-end works without --group", code=2)


def _subscribe_or_assign(
    consumer: Any, args: argparse.Namespace, timestamp: int | None
) -> dict[Any, int]:
    """Subscribe (--group) or assign and position the partitions; -> with --exit-at-end, the
    end offset of each partition not at its end yet (else {})."""
    from kafka import TopicPartition

    if args.group:
        if not consumer.partitions_for_topic(args.topic):
            raise CliError(f"unknown topic {args.topic!r}")
        consumer.subscribe([args.topic])
        return {}
    known = consumer.partitions_for_topic(args.topic)
    if not known:
        raise CliError(f"unknown topic {args.topic!r}")
    wanted = sorted(set(args.partition)) if args.partition else sorted(known)
    missing = [p for p in wanted if p not in known]
    if missing:
        raise CliError(f"topic {args.topic!r} has no partition {missing[0]} (it has {len(known)})")
    tps = [TopicPartition(args.topic, p) for p in wanted]
    consumer.assign(tps)
    first = consumer.beginning_offsets(tps)
    last = consumer.end_offsets(tps)
    _position(consumer, args, tps, first, last, timestamp)
    if args.exit_at_end:
        return {tp: last[tp] for tp in tps if consumer.position(tp) < last[tp]}
    return {}


class _Printer:
    """Writes each record (its template, else a JSON document per line) and counts them."""

    def __init__(self, template: _Template | None, stream: IO[str]) -> None:
        self.template = template
        self.stream = stream
        self.count = 0

    def print(self, record: Any) -> None:
        if self.template is None:
            self.stream.write(json.dumps(_record_document(record)) + "\n")
        else:
            self.stream.write(self.template.render(record) + "\n")
        self.count += 1


def _poll_and_print(
    consumer: Any,
    args: argparse.Namespace,
    ends: dict[Any, int],
    printer: _Printer,
    progress: Progress,
) -> None:
    """Poll and print until -n records, --idle-timeout, or every end in `ends` is reached;
    with --group, commit what each batch printed."""
    from kafka.structs import OffsetAndMetadata

    idle_since = time.monotonic()
    while True:
        if args.exit_at_end and not ends:
            break
        batch = consumer.poll(timeout_ms=200)
        if not batch:
            if args.idle_timeout is not None and (
                time.monotonic() - idle_since >= args.idle_timeout
            ):
                break
            continue
        idle_since = time.monotonic()
        done = False
        printed: dict[Any, int] = {}
        for tp in sorted(batch, key=lambda tp: tp.partition):
            for record in batch[tp]:
                if tp in ends and record.offset >= ends[tp]:
                    break
                printed[tp] = record.offset + 1
                printer.print(record)
                progress.advance()
                if args.num is not None and printer.count >= args.num:
                    done = True
                    break
            if tp in ends and consumer.position(tp) >= ends[tp]:
                del ends[tp]
            if done:
                break
        printer.stream.flush()
        if args.group and printed:
            consumer.commit({tp: OffsetAndMetadata(o, "", -1) for tp, o in printed.items()})
        if done:
            break


def _position(
    consumer: Any,
    args: argparse.Namespace,
    tps: list[Any],
    first: dict[Any, int],
    last: dict[Any, int],
    timestamp: int | None,
) -> None:
    """Seek every assigned partition where the start options say (module doc)."""
    if args.from_beginning:
        consumer.seek_to_beginning(*tps)
    elif args.offset is not None:
        for tp in tps:
            target = args.offset if args.offset >= 0 else max(first[tp], last[tp] + args.offset)
            if not first[tp] <= target <= last[tp]:
                raise CliError(
                    f"offset {args.offset} is out of range for {tp.topic}-{tp.partition}: "
                    f"its offsets are [{first[tp]}, {last[tp]}]"
                )
            consumer.seek(tp, target)
    elif timestamp is not None:
        found = consumer.offsets_for_times(dict.fromkeys(tps, timestamp))
        for tp in tps:
            hit = found.get(tp)
            consumer.seek(tp, hit.offset if hit is not None else last[tp])
    else:
        consumer.seek_to_end(*tps)

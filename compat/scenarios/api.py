"""What a scenario asks of a client: the adapter interface every `compat/<client>/adapter.py` fills.

An adapter translates these client-neutral operations into the client's own API, in the
client's own idiom (its producer, consumer, admin client; for kcat its command line; for
kafkajs a Node process driven over JSON lines). Scenarios (`cases.py`) only call these
methods and check the results, mostly against the oracle (`wire.py`).

Conventions:
- Bytes are bytes; `None` is a null key / value / header value.
- A method the client cannot express raises `Unsupported(reason)`: the case is reported as
  "n/a" with that reason, never as a pass.
- A Kafka error surfaced by the client raises `ClientError(code, raw)`, `code` being Kafka's
  error name (`MESSAGE_TOO_LARGE`, ...) as best the adapter can tell from the client's
  exception, `raw` the client's own text.
- Every call is bounded: adapters pass timeouts to the client and raise on expiry.

Capabilities (`Adapter.capabilities`) say which record features the client's producer can
set, so one scenario serves every client and records which features it exercised:
    "timestamp"   per-record CreateTime timestamps
    "headers"     record headers (with "header_null": a null header value)
    "null_value"  null values (tombstones)
    "null_key"    records without a key
    "binary"      arbitrary bytes (NUL, invalid UTF-8) in keys and values
    "idempotent"  an idempotent producer
    "legacy"      can be set up for a pre-0.10 / 0.10 broker (old request versions)
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field


class Unsupported(Exception):
    """The client has no way to do this (not a failure: reported as n/a)."""


class ClientError(Exception):
    """A Kafka error as the client reported it."""

    def __init__(self, code: str, raw: str = "") -> None:
        super().__init__(f"{code}: {raw}" if raw else code)
        self.code = code
        self.raw = raw


@dataclass(frozen=True)
class Rec:
    """A record to produce, or one consumed (then offset/timestamp_type are set)."""

    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()
    timestamp: int | None = None
    partition: int | None = None
    offset: int | None = None
    timestamp_type: int | None = None  # 0 CreateTime, 1 LogAppendTime (None: not reported)


@dataclass(frozen=True)
class Delivery:
    partition: int
    offset: int


@dataclass
class GroupInfo:
    group_id: str
    state: str  # Kafka's names: Stable, Empty, PreparingRebalance, CompletingRebalance, Dead
    protocol_type: str = ""
    members: list[GroupMemberInfo] = field(default_factory=list)


@dataclass
class GroupMemberInfo:
    member_id: str
    client_id: str
    assignment: set[tuple[str, int]]


class Member:
    """A live consumer-group member (subscribe; poll; commit synchronously; close)."""

    def poll(self, timeout_s: float) -> list[Rec]:
        """Records delivered by one poll; the member has committed them when this returns."""
        raise NotImplementedError

    def assignment(self) -> set[tuple[str, int]]:
        """The member's current assignment as the client reports it."""
        raise NotImplementedError

    def close(self) -> None:
        """Leave the group (LeaveGroup) after committing."""
        raise NotImplementedError


@dataclass(frozen=True)
class ConsumeFrom:
    """The arguments of `Adapter.consume`: `count` records of `topic`-`partition` from offset
    `start`, within `timeout_s`, read_committed or not."""

    topic: str
    partition: int
    start: int
    count: int
    timeout_s: float = 30.0
    read_committed: bool = False

    @property
    def isolation_level(self) -> str:
        """The consumer setting: "read_committed" or "read_uncommitted"."""
        return "read_committed" if self.read_committed else "read_uncommitted"


class Adapter:
    """Base class: every operation is unsupported until the client's adapter says otherwise."""

    name = "?"
    version = "?"
    capabilities: frozenset[str] = frozenset()
    codecs: tuple[str, ...] = ()  # compression codecs the client can produce
    codec_notes: dict[str, str] = {}  # why a codec is missing, for the report
    legacy_note = ""  # why the client cannot be set up for an old broker (no "legacy"), if known
    #: The replication factor of topics the client's admin calls create (the runner sets 3
    #: in the cluster row). `bootstrap` may then list several brokers ("h:p,h:p,h:p").
    replication_factor: int = 1
    #: The group protocols the adapter's members can use, and the one they use (the runner
    #: sets "consumer" in the consumer protocol's rows, `--group-protocol consumer`).
    group_protocols: frozenset[str] = frozenset({"classic"})
    group_protocol: str = "classic"

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap

    def close(self) -> None:
        """Release clients and processes this adapter started."""

    # producer --------------------------------------------------------------------------------
    def produce(
        self,
        topic: str,
        records: list[Rec],
        *,
        compression: str | None = None,
        idempotent: bool = False,
        bootstrap: str | None = None,
        timeout_s: float = 30.0,
    ) -> list[Delivery] | None:
        """Send every record (in order, each to `rec.partition` when set) and wait for acks.

        Returns each record's partition and offset, or None when the client does not report
        them (kcat)."""
        raise Unsupported(f"{self.name} has no produce call")

    # consumer without a group ---------------------------------------------------------------
    def consume(
        self,
        topic: str,
        partition: int,
        start: int,
        count: int,
        timeout_s: float = 30.0,
        *,
        read_committed: bool = False,
    ) -> list[Rec]:
        """`count` records of one partition from offset `start` (assign + seek, no group), with
        the consumer's isolation level read_committed when `read_committed`: what the
        adapter's `consume_from` answers."""
        return self.consume_from(
            ConsumeFrom(topic, partition, start, count, timeout_s, read_committed)
        )

    def consume_from(self, q: ConsumeFrom) -> list[Rec]:
        """The adapter's `consume`, given its arguments as one `ConsumeFrom`."""
        raise Unsupported(f"{self.name} has no consume call")

    # transactions ----------------------------------------------------------------------------
    def transactional_produce(
        self,
        topic: str,
        transactions: list[tuple[list[Rec], bool]],
        transactional_id: str,
        timeout_s: float = 30.0,
    ) -> None:
        """One transactional producer (`transactional_id`) runs `transactions` in order: each
        sends its records (each to `rec.partition`), then commits (True) or aborts (False)."""
        raise Unsupported(f"{self.name} has no transactional producer")

    # metadata --------------------------------------------------------------------------------
    def list_topics(self) -> dict[str, int]:
        """{topic: partition count} from the client's metadata."""
        raise Unsupported(f"{self.name} has no metadata call")

    # admin -----------------------------------------------------------------------------------
    def create_topic(self, name: str, partitions: int, configs: dict[str, str]) -> None:
        raise Unsupported(f"{self.name} has no create topics call")

    def create_partitions(self, name: str, total: int) -> None:
        raise Unsupported(f"{self.name} has no create partitions call")

    def describe_topic_configs(self, name: str) -> dict[str, str | None]:
        raise Unsupported(f"{self.name} has no describe configs call")

    def alter_topic_configs(self, name: str, configs: dict[str, str]) -> None:
        raise Unsupported(f"{self.name} has no alter configs call")

    def delete_topic(self, name: str) -> None:
        raise Unsupported(f"{self.name} has no delete topics call")

    def list_groups(self) -> set[str]:
        raise Unsupported(f"{self.name} has no list groups call")

    def describe_group(self, group: str) -> GroupInfo:
        raise Unsupported(f"{self.name} has no describe groups call")

    def delete_group(self, group: str) -> None:
        raise Unsupported(f"{self.name} has no delete groups call")

    def offset_for_time(self, topic: str, partition: int, timestamp: int) -> int | None:
        """Earliest offset whose timestamp >= `timestamp`; None when there is none."""
        raise Unsupported(f"{self.name} has no list offsets by timestamp call")

    def delete_records(self, topic: str, partition: int, before: int) -> int:
        """Delete records before `before`; returns the new low watermark."""
        raise Unsupported(f"{self.name} has no delete records call")

    # groups ----------------------------------------------------------------------------------
    def group_member(self, group: str, topics: Iterable[str], client_id: str) -> Member:
        """Start a member of `group` subscribed to `topics`, reading from the earliest offset,
        with the group protocol `self.group_protocol` ("classic": JoinGroup / SyncGroup;
        "consumer": KIP-848's ConsumerGroupHeartbeat, the broker's assignor and timeouts)."""
        raise Unsupported(f"{self.name} has no consumer groups call")

    # old protocol -----------------------------------------------------------------------------
    def legacy_round_trip(
        self, topic: str, message_format: int, values: list[bytes]
    ) -> list[bytes]:
        """Produce `values` to partition 0 and read them back as a client set up for an old
        broker that uses record format `message_format` (0: Kafka 0.9, 1: Kafka 0.10), without
        ApiVersions where the client allows (librdkafka api.version.request=false)."""
        raise Unsupported(f"{self.name} cannot be set up for an old broker")

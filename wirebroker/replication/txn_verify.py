"""KIP-890 part 1: a partition leader checks with the transaction coordinator, over the wire,
that a transactional producer added this partition to its ongoing transaction before the
producer's first transactional batch here is appended (Kafka's AddPartitionsToTxnManager).

    verify(tid, pid, epoch, partitions)   AddPartitionsToTxn v4 with verify_only=true, sent to
                                          the coordinator: the live leader of partition
                                          abs(java hashCode(tid)) % partitions of
                                          `__transaction_state` (`partition_for`, injected: it
                                          lives in the group layer). -> an error per partition.
    needs_verification(...)               False when the cache holds (pid, epoch, partition) or
                                          the log already has this producer's transaction open
                                          at this epoch (Kafka: hasOngoingTransaction; the log's
                                          `start_txn_verification` tells, and records the
                                          batch's sequence: producer_state.py).
    on_marker(pid, topic, partition)      a COMMIT/ABORT marker ended the transaction there:
                                          forget its cache entries.
    verify(..., operation=ADD_PARTITION)  KIP-890 part 2 (a transaction version 2 producer:
                                          Produce v12+, TxnOffsetCommit v5): AddPartitionsToTxn
                                          v5 with verify_only=false, so the coordinator adds
                                          the partitions to the transaction itself (Kafka's
                                          AddPartitionsToTxnManager `addPartition`); answers
                                          and cache as for a verification.

The coordinator is reached the same way also when it is this broker (loopback), so a single
broker and a cluster take one path. What a client of the request's version is told depends on
its `TxnOperation` (Kafka's TransactionSupportedOperation: Produce v3-10 and TxnOffsetCommit
v0-3 know only INVALID_TXN_STATE, Produce v11 and TxnOffsetCommit v4 know TRANSACTION_ABORTABLE,
a TV2 request adds). `verify` answers per partition what Kafka's AddPartitionsToTxnManager hands
its ReplicaManager: the coordinator's partition error, with PRODUCER_FENCED as
INVALID_PRODUCER_EPOCH and TRANSACTION_ABORTABLE ("not in the transaction") as
INVALID_TXN_STATE for a DEFAULT_ERROR client; a top-level error for every partition
(CLUSTER_AUTHORIZATION_FAILED as INVALID_TXN_STATE); NETWORK_EXCEPTION when the request failed
or timed out; COORDINATOR_NOT_AVAILABLE when no live broker leads the coordinator's partition
(no `__transaction_state` yet). `producer_answer` is then the Produce answer, Kafka's
ReplicaManager: INVALID_TXN_STATE with the error_message "Partition was not added to the
transaction"; NETWORK_EXCEPTION, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR,
COORDINATOR_LOAD_IN_PROGRESS (and CONCURRENT_TRANSACTIONS before KIP-890 part 2) as the
retriable NOT_ENOUGH_REPLICAS with "Unable to verify the partition has been added to the
transaction. Underlying error: <NAME>"; the others as they are, without a text (a TV2
producer retries CONCURRENT_TRANSACTIONS itself). A partition missing from the coordinator's
answer is INVALID_TXN_STATE (deviation: Kafka's manager takes it as verified).
`enabled` False (`transaction.partition.verification.enable=false`) skips all of it.
One connection per coordinator address, used by one request at a time (a trio lock), each
request bounded by `timeout_s` (Kafka's request.timeout.ms, 30 s). A cached connection that
fails is replaced and the request sent once more on a new one: an idle connection to a
coordinator whose broker was restarted meanwhile is dead without anyone having noticed (Kafka's
NetworkClient sees the disconnect while polling and reconnects before sending).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from enum import Enum
from typing import TYPE_CHECKING, Any

import trio

from protocol.api import ApiKey
from protocol.errors import ErrorCode
from wirebroker.replication.broker_client import BrokerConnection, BrokerConnectionError

if TYPE_CHECKING:
    from wirebroker.metadata.view import ClusterView

__all__ = ["TRANSACTION_STATE_TOPIC", "TxnOperation", "TxnVerifier", "producer_answer"]

log = logging.getLogger(__name__)

TRANSACTION_STATE_TOPIC = "__transaction_state"
_VERSION = 4
_ADD_VERSION = 5
TopicPartition = tuple[str, int]

NOT_ADDED_MESSAGE = "Partition was not added to the transaction"
UNVERIFIED_MESSAGE = (
    "Unable to verify the partition has been added to the transaction. Underlying error: "
)
#: verification errors Kafka's ReplicaManager answers a producer as NOT_ENOUGH_REPLICAS
_UNREACHABLE = frozenset(
    {
        ErrorCode.NETWORK_EXCEPTION,
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
        ErrorCode.COORDINATOR_NOT_AVAILABLE,
        ErrorCode.NOT_COORDINATOR,
    }
)


class TxnOperation(Enum):
    """Kafka's TransactionSupportedOperation: what the client of a request version knows."""

    DEFAULT_ERROR = "default"  # INVALID_TXN_STATE for "not in the transaction"
    GENERIC_ERROR = "generic"  # TRANSACTION_ABORTABLE (KIP-890 part 1 clients)
    ADD_PARTITION = "add"  # KIP-890 part 2: the leader adds the partition

    @property
    def adds(self) -> bool:
        return self is TxnOperation.ADD_PARTITION

    @classmethod
    def of(cls, version: int, tv2_version: int, *, tv2_level: bool) -> TxnOperation:
        """The operation of a request `version` whose API's first TV2 version is
        `tv2_version` (Produce 12, TxnOffsetCommit 5; the version before it knows
        TRANSACTION_ABORTABLE); `tv2_level`: transaction.version 2 is finalized."""
        if version >= tv2_version and tv2_level:
            return cls.ADD_PARTITION
        return cls.GENERIC_ERROR if version >= tv2_version - 1 else cls.DEFAULT_ERROR


def producer_answer(code: ErrorCode, operation: TxnOperation) -> tuple[ErrorCode, str | None]:
    """Kafka's ReplicaManager: the Produce error and error_message of a partition whose
    verification answered `code` (module docstring)."""
    if code is ErrorCode.INVALID_TXN_STATE:
        return code, NOT_ADDED_MESSAGE
    if code in _UNREACHABLE or (code is ErrorCode.CONCURRENT_TRANSACTIONS and not operation.adds):
        return ErrorCode.NOT_ENOUGH_REPLICAS, UNVERIFIED_MESSAGE + code.name
    return code, None


class TxnVerifier:
    """See the module docstring. `partition_for(tid, n)`: Kafka's partitionFor."""

    def __init__(
        self,
        cluster: ClusterView,
        partition_for: Callable[[str, int], int],
        *,
        node_id: int,
        enabled: bool = True,
        timeout_s: float = 30.0,
        max_frame_bytes: int = 1 << 20,
    ) -> None:
        self.cluster = cluster
        self.partition_for = partition_for
        self.enabled = enabled
        self.timeout_s = timeout_s
        self.client_id = f"broker-{node_id}-txn-verifier"
        self.max_frame_bytes = max_frame_bytes
        #: (producer id, topic, partition) -> the epoch verified there
        self._verified: dict[tuple[int, str, int], int] = {}
        self._connections: dict[tuple[str, int], BrokerConnection] = {}
        self._locks: dict[tuple[str, int], trio.Lock] = {}

    # -- the cache ---------------------------------------------------------------------------
    def active(self, operation: TxnOperation) -> bool:
        """Whether a transactional request of `operation` is checked with the coordinator:
        with verification enabled, and always when the leader adds (TV2), as in Kafka."""
        return self.enabled or operation.adds

    def needs_verification(
        self,
        producer_id: int,
        producer_epoch: int,
        tp: TopicPartition,
        *,
        ongoing_epoch: int,
        add: bool = False,
    ) -> bool:
        """`ongoing_epoch`: the epoch of the producer's open transaction in this partition's
        log (-1: none). `add` (TV2): the implicit add happens even with verification
        disabled, as in Kafka."""
        if not self.enabled and not add:
            return False
        if ongoing_epoch >= 0 and ongoing_epoch == producer_epoch:
            return False
        return self._verified.get((producer_id, *tp)) != producer_epoch

    def on_marker(self, producer_id: int, topic: str, partition: int) -> None:
        self._verified.pop((producer_id, topic, partition), None)

    def verified_count(self) -> int:
        return len(self._verified)

    # -- the request ---------------------------------------------------------------------------
    def coordinator(self, transactional_id: str) -> tuple[str, int] | None:
        """(host, port) of the transaction coordinator of `transactional_id`, or None."""
        partitions = self.cluster.partitions(TRANSACTION_STATE_TOPIC)
        if not partitions:
            return None
        p = self.partition_for(transactional_id, len(partitions))
        node = self.cluster.leader(TRANSACTION_STATE_TOPIC, p)
        return None if node is None else (node.host, node.port)

    async def verify(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: Iterable[TopicPartition],
        *,
        operation: TxnOperation = TxnOperation.DEFAULT_ERROR,
    ) -> dict[TopicPartition, ErrorCode]:
        """Ask the coordinator (`operation.adds`: to add them, TV2); -> the error per
        partition (module docstring). NONE entries are cached until their marker."""
        wanted = sorted(set(partitions))
        if not wanted:
            return {}
        add = operation.adds
        address = self.coordinator(transactional_id)
        if address is None:
            return dict.fromkeys(wanted, ErrorCode.COORDINATOR_NOT_AVAILABLE)
        by_topic: dict[str, list[int]] = {}
        for topic, index in wanted:
            by_topic.setdefault(topic, []).append(index)
        body: dict[str, Any] = {
            "transactions": [
                {
                    "transactional_id": transactional_id,
                    "producer_id": producer_id,
                    "producer_epoch": producer_epoch,
                    "verify_only": not add,
                    "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()],
                }
            ]
        }
        try:
            response = await self._request(address, body, _ADD_VERSION if add else _VERSION)
        except (BrokerConnectionError, trio.TooSlowError) as exc:
            log.warning("transaction verification with %s:%d failed: %s", *address, exc)
            return dict.fromkeys(wanted, ErrorCode.NETWORK_EXCEPTION)
        return self._results(
            response, transactional_id, producer_id, producer_epoch, wanted, operation=operation
        )

    def _results(
        self,
        response: object,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        wanted: list[TopicPartition],
        *,
        operation: TxnOperation = TxnOperation.DEFAULT_ERROR,
    ) -> dict[TopicPartition, ErrorCode]:
        top = _code(getattr(response, "error_code", 0))
        if top is ErrorCode.CLUSTER_AUTHORIZATION_FAILED:
            top = ErrorCode.INVALID_TXN_STATE
        if top is not ErrorCode.NONE:
            return dict.fromkeys(wanted, top)
        out: dict[TopicPartition, ErrorCode] = {}
        for txn in getattr(response, "results_by_transaction", None) or []:
            if txn.transactional_id != transactional_id:
                continue
            for topic in txn.topic_results or []:
                for p in topic.results_by_partition or []:
                    out[(topic.name, int(p.partition_index))] = _partition_error(
                        _code(p.partition_error_code), operation
                    )
        for tp in wanted:
            code = out.setdefault(tp, ErrorCode.INVALID_TXN_STATE)
            if code is ErrorCode.NONE:
                self._verified[(producer_id, *tp)] = producer_epoch
        return {tp: out[tp] for tp in wanted}

    async def _request(
        self, address: tuple[str, int], body: dict[str, Any], version: int = _VERSION
    ) -> object:
        lock = self._locks.setdefault(address, trio.Lock())
        async with lock:
            with trio.fail_after(self.timeout_s):
                conn = self._connections.get(address)
                reused = conn is not None and not conn.closed
                while True:
                    if conn is None or conn.closed:
                        conn = await BrokerConnection.open(
                            *address,
                            client_id=self.client_id,
                            max_frame_bytes=self.max_frame_bytes,
                        )
                        self._connections[address] = conn
                    try:
                        return await conn.request(int(ApiKey.ADD_PARTITIONS_TO_TXN), version, body)
                    except BaseException as exc:
                        self._connections.pop(address, None)
                        await conn.aclose()
                        if not (reused and isinstance(exc, BrokerConnectionError)):
                            raise
                    # the cached connection went stale while idle (the coordinator's broker
                    # restarted on the same address): once more, on a new connection
                    conn, reused = None, False

    async def aclose(self) -> None:
        for conn in list(self._connections.values()):
            await conn.aclose()
        self._connections.clear()


def _code(value: object) -> ErrorCode:
    try:
        return ErrorCode(int(value))  # type: ignore[call-overload]
    except ValueError:
        return ErrorCode.UNKNOWN


def _partition_error(code: ErrorCode, operation: TxnOperation) -> ErrorCode:
    """A partition's error in the coordinator's answer, as Kafka's AddPartitionsToTxnManager
    passes it on."""
    if code is ErrorCode.PRODUCER_FENCED:
        return ErrorCode.INVALID_PRODUCER_EPOCH
    if code is ErrorCode.TRANSACTION_ABORTABLE and operation is TxnOperation.DEFAULT_ERROR:
        return ErrorCode.INVALID_TXN_STATE  # "not in the transaction", for older clients
    return code

"""DescribeUserScramCredentials and AlterUserScramCredentials v0 through the real dispatcher
and handlers (over `Services.scram_users`, in memory here): advertised at v0 as Kafka 4.4
does, Kafka's answer shapes (the top-level error "" with NONE, null messages on success, no
salt or key ever described), and a store that cannot be written answered for every user."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from protocol.api import ApiKey
from protocol.codec import decode_response, encode_request
from protocol.errors import ErrorCode
from tests.unit.net.netwire import stub_services
from wirebroker.handlers.context import Services
from wirebroker.handlers.dispatcher import Dispatcher
from wirebroker.handlers.registry import load_handlers
from wirebroker.security.credentials import ScramDeletion, ScramUpsertion, UserAlterResult
from wirebroker.security.scram import ScramMechanism, credential_from_salted_password
from wirebroker.security.scram_users import LocalScramUsers, ScramStoreError

DESCRIBE, ALTER = ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, ApiKey.ALTER_USER_SCRAM_CREDENTIALS
SALTED = bytes(range(32))


async def ask(services: Services, api: ApiKey, body: dict[str, Any]) -> Any:
    dispatcher = Dispatcher(services, load_handlers())
    frame = encode_request(api, 0, 7, "scram", body)[4:]
    reply = await dispatcher.dispatch(frame, "198.51.100.7", "198.51.100.7:4000")
    assert not reply.close and reply.response is not None
    correlation_id, answer = decode_response(api, 0, reply.response[4:])
    assert correlation_id == 7
    return answer


def upsertion(name: str, mechanism: int = 1, iterations: int = 4096) -> dict[str, Any]:
    return {
        "name": name,
        "mechanism": mechanism,
        "iterations": iterations,
        "salt": b"salt",
        "salted_password": SALTED,
    }


def test_both_apis_are_advertised_at_v0() -> None:
    handlers = load_handlers()
    for api in (DESCRIBE, ALTER):
        spec = handlers[int(api)]
        assert (spec.advertised_min, spec.max_version) == (0, 0)


async def test_alter_then_describe() -> None:
    services = stub_services()
    answer = await ask(
        services,
        ALTER,
        {
            "deletions": [{"name": "nobody", "mechanism": 1}],
            "upsertions": [upsertion("alice"), upsertion("bob", 2, 8192), upsertion("carl", 1, 1)],
        },
    )
    assert answer.throttle_time_ms == 0
    assert [(r.user, r.error_code, r.error_message) for r in answer.results] == [
        ("alice", 0, None),
        ("bob", 0, None),
        (
            "nobody",
            ErrorCode.RESOURCE_NOT_FOUND,
            "Attempt to delete a user credential that does not exist",
        ),
        ("carl", ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations"),
    ]
    # what SCRAM authentication asks: the keys derived from the salted password
    assert services.scram_users.credential(
        ScramMechanism.SCRAM_SHA_256, "alice"
    ) == credential_from_salted_password(ScramMechanism.SCRAM_SHA_256, b"salt", SALTED, 4096)

    answer = await ask(services, DESCRIBE, {"users": None})
    assert (answer.error_code, answer.error_message) == (0, "")
    assert [
        (
            r.user,
            r.error_code,
            r.error_message,
            [(c.mechanism, c.iterations) for c in r.credential_infos],
        )
        for r in answer.results
    ] == [("alice", 0, "", [(1, 4096)]), ("bob", 0, "", [(2, 8192)])]

    answer = await ask(services, DESCRIBE, {"users": [{"name": "bob"}, {"name": "zed"}]})
    assert [(r.user, r.error_code, r.error_message) for r in answer.results] == [
        ("bob", 0, ""),
        (
            "zed",
            ErrorCode.RESOURCE_NOT_FOUND,
            "Attempt to describe a user credential that does not exist: zed",
        ),
    ]
    answer = await ask(services, DESCRIBE, {"users": []})
    assert [r.user for r in answer.results] == ["alice", "bob"]


class DownStore(LocalScramUsers):
    def __init__(self) -> None:
        super().__init__()
        self.asked: list[tuple[Sequence[ScramDeletion], Sequence[ScramUpsertion]]] = []

    async def alter(
        self, deletions: Sequence[ScramDeletion], upsertions: Sequence[ScramUpsertion]
    ) -> list[UserAlterResult]:
        self.asked.append((deletions, upsertions))
        raise ScramStoreError(ErrorCode.REQUEST_TIMED_OUT, "The change was not applied within 30 s")


async def test_a_store_that_cannot_be_written_answers_every_user() -> None:
    services = stub_services()
    services.scram_users = store = DownStore()
    answer = await ask(
        services,
        ALTER,
        {
            "deletions": [{"name": "a", "mechanism": 2}],
            "upsertions": [upsertion("b"), upsertion("a")],
        },
    )
    assert [(r.user, r.error_code, r.error_message) for r in answer.results] == [
        ("a", ErrorCode.REQUEST_TIMED_OUT, "The change was not applied within 30 s"),
        ("b", ErrorCode.REQUEST_TIMED_OUT, "The change was not applied within 30 s"),
    ]
    ((deletions, upsertions),) = store.asked
    assert deletions == [ScramDeletion("a", 2)]
    assert upsertions == [
        ScramUpsertion("b", 1, 4096, b"salt", SALTED),
        ScramUpsertion("a", 1, 4096, b"salt", SALTED),
    ]

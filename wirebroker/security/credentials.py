"""SCRAM users: per user and mechanism a `ScramCredential`, with the semantics of
DescribeUserScramCredentials v0 and AlterUserScramCredentials v0 as Apache Kafka 4.4 answers
them (its ScramImage.describe and ScramControlManager.alterCredentials; asked of the oracle:
tests/oracle/test_scram_credentials.py). Pure: no trio, no I/O.

    store = CredentialStore()
    results = store.alter(deletions, upsertions)   # per user: (user, code, message)
    store.describe(["alice"])                       # per user: code, message, (mech, iterations)
    ScramServer(mechanism, store.lookup(mechanism))  # what SaslAuthenticate asks

`plan_alter` gives the answer and the changes without applying them (a replicated store writes
the changes, then `apply`s them); `alter` does both.

Kafka's rules, per user (a user's error stops every later alteration of it in the request):
- a user named by two alterations, deletions or upsertions, whatever their mechanisms:
  DUPLICATE_RESOURCE "A user credential cannot be altered twice in the same request" (the
  first alteration is dropped too);
- an empty name: UNACCEPTABLE_CREDENTIAL "Username must not be empty"; a mechanism that is not
  1 or 2: UNSUPPORTED_SASL_MECHANISM "Unknown SCRAM mechanism";
- deleting a credential that does not exist: RESOURCE_NOT_FOUND "Attempt to delete a user
  credential that does not exist";
- iterations under 4096: UNACCEPTABLE_CREDENTIAL "Too few iterations", over 16384 "Too many
  iterations"; an empty salted password UNKNOWN (-1, UNKNOWN_SERVER_ERROR) with no message
  (Kafka's HMAC refuses the empty key once the request has been checked); an empty salt is
  accepted.
Answers: deletions first, then upsertions, then refusals (Kafka's order, by hash maps; the
clients match answers by user). Describe: no users (None or empty) means every user with a
credential; an unknown user RESOURCE_NOT_FOUND "Attempt to describe a user credential that
does not exist: <user>"; a user asked twice DUPLICATE_RESOURCE "Cannot describe SCRAM
credentials for the same user twice in a single request: <user>".

ZooKeeper's layout (Kafka before KRaft, and our cluster): `/config/users/<user>` holds
`{"version":1,"config":{...}}`, where each SCRAM mechanism's name is a key whose value is
"salt=<b64>,stored_key=<b64>,server_key=<b64>,iterations=<n>" (the node also holds the user's
quotas): `encode_credential` / `decode_credential`, `user_node` / `parse_user_node` and
`credentials_in_configs`.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from protocol.errors import ErrorCode
from wirebroker.security.scram import (
    ScramCredential,
    ScramMechanism,
    credential_from_salted_password,
)

__all__ = [
    "CredentialChange",
    "CredentialStore",
    "DescribedUser",
    "ScramDeletion",
    "ScramUpsertion",
    "UserAlterResult",
    "credentials_in_configs",
    "decode_credential",
    "encode_credential",
    "parse_user_node",
    "user_node",
    "with_credential",
]

DUPLICATE_ALTER = "A user credential cannot be altered twice in the same request"
EMPTY_USER = "Username must not be empty"
UNKNOWN_MECHANISM = "Unknown SCRAM mechanism"
DELETE_MISSING = "Attempt to delete a user credential that does not exist"
TOO_FEW_ITERATIONS = "Too few iterations"
TOO_MANY_ITERATIONS = "Too many iterations"
DESCRIBE_MISSING = "Attempt to describe a user credential that does not exist: "
DESCRIBE_TWICE = "Cannot describe SCRAM credentials for the same user twice in a single request: "


@dataclass(frozen=True)
class ScramDeletion:
    """AlterUserScramCredentials' deletion: a user's credential for one mechanism (wire code)."""

    name: str
    mechanism: int


@dataclass(frozen=True)
class ScramUpsertion:
    """AlterUserScramCredentials' upsertion: what the client computed from the password."""

    name: str
    mechanism: int
    iterations: int
    salt: bytes
    salted_password: bytes


@dataclass(frozen=True)
class UserAlterResult:
    user: str
    error_code: ErrorCode = ErrorCode.NONE
    error_message: str | None = None


@dataclass(frozen=True)
class DescribedUser:
    """One user of DescribeUserScramCredentials: (mechanism code, iterations) per credential."""

    user: str
    error_code: ErrorCode = ErrorCode.NONE
    error_message: str = ""  # Kafka sends "" (not null) with NONE
    credentials: tuple[tuple[int, int], ...] = ()


@dataclass(frozen=True)
class CredentialChange:
    """Set (credential) or remove (None) a user's credential for a mechanism."""

    user: str
    mechanism: ScramMechanism
    credential: ScramCredential | None


Alteration = ScramDeletion | ScramUpsertion


class CredentialStore:
    """Every user's SCRAM credentials, in memory."""

    def __init__(
        self, credentials: Mapping[str, Mapping[ScramMechanism, ScramCredential]] | None = None
    ) -> None:
        self._users: dict[str, dict[ScramMechanism, ScramCredential]] = {}
        for user, by_mechanism in (credentials or {}).items():
            if by_mechanism:
                self._users[user] = dict(by_mechanism)

    def get(self, user: str, mechanism: ScramMechanism) -> ScramCredential | None:
        return self._users.get(user, {}).get(mechanism)

    def lookup(self, mechanism: ScramMechanism) -> Callable[[str], ScramCredential | None]:
        """`user -> credential | None` for `mechanism` (what ScramServer asks)."""
        return lambda user: self.get(user, mechanism)

    def users(self) -> dict[str, dict[ScramMechanism, ScramCredential]]:
        """A copy of every user's credentials."""
        return {user: dict(by_mechanism) for user, by_mechanism in self._users.items()}

    def set(self, user: str, mechanism: ScramMechanism, credential: ScramCredential) -> None:
        self.apply([CredentialChange(user, mechanism, credential)])

    def describe(self, users: Sequence[str] | None) -> list[DescribedUser]:
        """DescribeUserScramCredentials: None or [] describes every user with a credential."""
        if not users:
            return [self._described(user) for user in self._users]
        seen: dict[str, bool] = {}  # user -> asked more than once
        for user in users:
            seen[user] = user in seen
        answers = []
        for user, twice in seen.items():
            if twice:
                answers.append(
                    DescribedUser(user, ErrorCode.DUPLICATE_RESOURCE, DESCRIBE_TWICE + user)
                )
            elif user not in self._users:
                answers.append(
                    DescribedUser(user, ErrorCode.RESOURCE_NOT_FOUND, DESCRIBE_MISSING + user)
                )
            else:
                answers.append(self._described(user))
        return answers

    def _described(self, user: str) -> DescribedUser:
        by_mechanism = self._users[user]
        infos = tuple(
            (mechanism.type_code, by_mechanism[mechanism].iterations)
            for mechanism in ScramMechanism
            if mechanism in by_mechanism
        )
        return DescribedUser(user, credentials=infos)

    def plan_alter(
        self, deletions: Sequence[ScramDeletion], upsertions: Sequence[ScramUpsertion]
    ) -> tuple[list[UserAlterResult], list[CredentialChange]]:
        """AlterUserScramCredentials' answer and the changes it makes, not yet applied."""
        accepted: dict[str, Alteration] = {}
        refused: dict[str, UserAlterResult] = {}
        alterations: list[Alteration] = [*deletions, *upsertions]
        for alteration in alterations:
            name = alteration.name
            if name in refused:
                continue
            if accepted.pop(name, None) is not None:
                refused[name] = UserAlterResult(name, ErrorCode.DUPLICATE_RESOURCE, DUPLICATE_ALTER)
                continue
            error = self._refusal(alteration)
            if error is None:
                accepted[name] = alteration
            else:
                refused[name] = UserAlterResult(name, *error)
        for name, alteration in list(accepted.items()):
            if isinstance(alteration, ScramUpsertion) and not alteration.salted_password:
                del accepted[name]  # Kafka's HMAC refuses an empty key: an unexpected error
                refused[name] = UserAlterResult(name, ErrorCode.UNKNOWN, None)
        ordered = sorted(accepted.values(), key=lambda a: isinstance(a, ScramUpsertion))
        changes = [_change(alteration) for alteration in ordered]
        results = [UserAlterResult(a.name) for a in ordered]
        return results + list(refused.values()), changes

    def _refusal(self, alteration: Alteration) -> tuple[ErrorCode, str] | None:
        if not alteration.name:
            return ErrorCode.UNACCEPTABLE_CREDENTIAL, EMPTY_USER
        mechanism = ScramMechanism.from_type_code(alteration.mechanism)
        if mechanism is None:
            return ErrorCode.UNSUPPORTED_SASL_MECHANISM, UNKNOWN_MECHANISM
        if isinstance(alteration, ScramDeletion):
            if self.get(alteration.name, mechanism) is None:
                return ErrorCode.RESOURCE_NOT_FOUND, DELETE_MISSING
            return None
        if alteration.iterations < mechanism.min_iterations:
            return ErrorCode.UNACCEPTABLE_CREDENTIAL, TOO_FEW_ITERATIONS
        if alteration.iterations > mechanism.max_iterations:
            return ErrorCode.UNACCEPTABLE_CREDENTIAL, TOO_MANY_ITERATIONS
        return None

    def apply(self, changes: Iterable[CredentialChange]) -> None:
        for change in changes:
            by_mechanism = self._users.setdefault(change.user, {})
            if change.credential is None:
                by_mechanism.pop(change.mechanism, None)
            else:
                by_mechanism[change.mechanism] = change.credential
            if not by_mechanism:
                del self._users[change.user]

    def alter(
        self, deletions: Sequence[ScramDeletion], upsertions: Sequence[ScramUpsertion]
    ) -> list[UserAlterResult]:
        """AlterUserScramCredentials, applied at once."""
        results, changes = self.plan_alter(deletions, upsertions)
        self.apply(changes)
        return results


def _change(alteration: Alteration) -> CredentialChange:
    mechanism = ScramMechanism.from_type_code(alteration.mechanism)
    assert mechanism is not None
    if isinstance(alteration, ScramDeletion):
        return CredentialChange(alteration.name, mechanism, None)
    credential = credential_from_salted_password(
        mechanism, alteration.salt, alteration.salted_password, alteration.iterations
    )
    return CredentialChange(alteration.name, mechanism, credential)


def encode_credential(credential: ScramCredential) -> str:
    """Kafka's text of a credential: "salt=..,stored_key=..,server_key=..,iterations=n"."""
    b64 = base64.b64encode
    return (
        f"salt={b64(credential.salt).decode()},stored_key={b64(credential.stored_key).decode()},"
        f"server_key={b64(credential.server_key).decode()},iterations={credential.iterations}"
    )


def decode_credential(text: str) -> ScramCredential:
    """The credential in Kafka's text; ValueError "Credentials not valid: <text>" otherwise."""
    fields: dict[str, str] = {}
    for item in text.split(","):
        key, equals, value = item.partition("=")
        if not equals:
            raise ValueError(f"Credentials not valid: {text}")
        fields[key] = value
    if set(fields) != {"salt", "stored_key", "server_key", "iterations"}:
        raise ValueError(f"Credentials not valid: {text}")
    try:
        return ScramCredential(
            salt=base64.b64decode(fields["salt"], validate=True),
            stored_key=base64.b64decode(fields["stored_key"], validate=True),
            server_key=base64.b64decode(fields["server_key"], validate=True),
            iterations=int(fields["iterations"]),
        )
    except (binascii.Error, ValueError):
        raise ValueError(f"Credentials not valid: {text}") from None


def credentials_in_configs(configs: Mapping[str, str]) -> dict[ScramMechanism, ScramCredential]:
    """The SCRAM credentials among a user's configs (`/config/users/<user>`'s "config")."""
    found = {}
    for mechanism in ScramMechanism:
        text = configs.get(mechanism.mechanism_name)
        if text is not None:
            found[mechanism] = decode_credential(text)
    return found


def with_credential(
    configs: Mapping[str, str], mechanism: ScramMechanism, credential: ScramCredential | None
) -> dict[str, str]:
    """A user's configs with `mechanism`'s credential set, or removed (None)."""
    updated = dict(configs)
    if credential is None:
        updated.pop(mechanism.mechanism_name, None)
    else:
        updated[mechanism.mechanism_name] = encode_credential(credential)
    return updated


def user_node(configs: Mapping[str, str]) -> bytes:
    """`/config/users/<user>`'s data: {"version":1,"config":{...}}."""
    return json.dumps({"version": 1, "config": dict(configs)}, separators=(",", ":")).encode()


def parse_user_node(data: bytes) -> dict[str, str]:
    """The "config" of a `/config/users/<user>` node; ValueError if it is not one."""
    try:
        node = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"not a user config node: {e}") from None
    configs = node.get("config") if isinstance(node, dict) else None
    if not isinstance(configs, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in configs.items()
    ):
        raise ValueError('not a user config node: no string "config" map')
    return configs

"""ACLs: what the ACL APIs (DescribeAcls, CreateAcls, DeleteAcls) ask of an authorizer.

Kafka's shape (its `Authorizer` plug-in: `acls(filter)`, `createAcls(bindings)`,
`deleteAcls(filters)`): an `AclBinding` is a resource pattern (type, name, pattern type) and an
entry (principal, host, operation, permission type); an `AclBindingFilter` the same with
wildcards (None names, ANY codes). Codes are Kafka's (the enums below). Decoding the requests,
Kafka's checks of them and encoding the answers are the handlers' (wirebroker/handlers/
describe_acls.py, create_acls.py, delete_acls.py); an `Authorizer` answers with bindings or
`AclError`s.

`NoAuthorizer` is the broker's authorizer unless `authorizer.class.name` is set (then
wirebroker.security.authorizer.AclAuthorizer, kept in ZooKeeper by
wirebroker.cluster.zk_acls.ZkAcls). Apache Kafka 4.4 without `authorizer.class.name` (its
default) serves the three APIs and refuses each ask with
SECURITY_DISABLED, in the texts it uses (asked of Kafka 4.4, the oracle:
tests/oracle/test_acls_without_authorizer.py):

    describe   the whole answer: "No Authorizer is configured on the broker"
    create     each creation: "No Authorizer is configured."
    delete     each filter: "No Authorizer is configured.", no matching ACLs

An authorizer with stored ACLs (issue 34) implements the same `Authorizer` protocol.
Pure: no trio, no I/O.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from protocol.errors import ErrorCode

__all__ = [
    "AclBinding",
    "AclBindingFilter",
    "AclDeleteResult",
    "AclError",
    "AclOperation",
    "AclPermissionType",
    "Authorizer",
    "NoAuthorizer",
    "PatternType",
    "ResourceType",
]


class ResourceType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class AclOperation(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14
    TWO_PHASE_COMMIT = 15


class AclPermissionType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


@dataclass(frozen=True)
class AclBinding:
    """One ACL: a resource pattern and an access control entry (codes as on the wire)."""

    resource_type: int
    resource_name: str
    pattern_type: int
    principal: str
    host: str
    operation: int
    permission_type: int


@dataclass(frozen=True)
class AclBindingFilter:
    """What DescribeAcls / DeleteAcls match: None names and ANY codes match anything."""

    resource_type: int
    resource_name: str | None
    pattern_type: int
    principal: str | None
    host: str | None
    operation: int
    permission_type: int


class AclError(Exception):
    """A refusal with Kafka's error code and message."""

    def __init__(self, code: ErrorCode, message: str | None) -> None:
        super().__init__(f"{code.name}: {message}")
        self.code = code
        self.message = message


@dataclass(frozen=True)
class AclDeleteResult:
    """One DeleteAcls filter's outcome: an error, or the ACLs it deleted."""

    error: AclError | None = None
    deleted: tuple[AclBinding, ...] = field(default=())


class Authorizer(Protocol):
    """What the ACL APIs and the handlers' checks ask (Kafka's Authorizer plug-in)."""

    #: False: no authorizer configured (every check passes; the ACL APIs SECURITY_DISABLED)
    enabled: bool

    def authorize(
        self, principal: str, host: str, operation: int, resource_type: int, resource_name: str
    ) -> bool:
        """May `principal`, connected from `host`, do `operation` on the resource?"""
        ...

    def authorize_by_resource_type(
        self, principal: str, host: str, operation: int, resource_type: int
    ) -> bool:
        """KIP-679: may it do `operation` on some resource of the type?"""
        ...

    async def describe_acls(self, acl_filter: AclBindingFilter) -> list[AclBinding]:
        """The ACLs matching `acl_filter`; raises AclError to refuse the whole request."""
        ...

    async def create_acls(self, bindings: Sequence[AclBinding]) -> list[AclError | None]:
        """Create each binding; per binding None (created) or its refusal."""
        ...

    async def delete_acls(self, filters: Sequence[AclBindingFilter]) -> list[AclDeleteResult]:
        """Delete the ACLs each filter matches; one result per filter."""
        ...


#: Kafka 4.4's texts without an authorizer (they differ between the APIs).
NO_AUTHORIZER_DESCRIBE = "No Authorizer is configured on the broker"
NO_AUTHORIZER = "No Authorizer is configured."


class NoAuthorizer:
    """A broker without an authorizer: every check passes, every ACL request is refused
    SECURITY_DISABLED."""

    enabled = False

    def authorize(
        self, principal: str, host: str, operation: int, resource_type: int, resource_name: str
    ) -> bool:
        return True

    def authorize_by_resource_type(
        self, principal: str, host: str, operation: int, resource_type: int
    ) -> bool:
        return True

    async def describe_acls(self, acl_filter: AclBindingFilter) -> list[AclBinding]:
        raise AclError(ErrorCode.SECURITY_DISABLED, NO_AUTHORIZER_DESCRIBE)

    async def create_acls(self, bindings: Sequence[AclBinding]) -> list[AclError | None]:
        return [AclError(ErrorCode.SECURITY_DISABLED, NO_AUTHORIZER)] * len(bindings)

    async def delete_acls(self, filters: Sequence[AclBindingFilter]) -> list[AclDeleteResult]:
        refused = AclDeleteResult(AclError(ErrorCode.SECURITY_DISABLED, NO_AUTHORIZER))
        return [refused] * len(filters)

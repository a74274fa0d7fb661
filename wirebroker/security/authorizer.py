"""An ACL authorizer with Apache Kafka's semantics (its StandardAuthorizer, 4.4), in memory.

`AclAuthorizer` implements the `Authorizer` protocol of acls.py (what DescribeAcls, CreateAcls
and DeleteAcls ask) and answers `authorize(principal, host, operation, resource_type,
resource_name) -> bool`, what every handler asks. Pure: no trio, no I/O (the protocol's
methods are async only to fit it; they never await). A replicated store uses `plan_create` /
`plan_delete` (answers and changes, unapplied), writes the changes, then `add` / `remove`s
them; the ZooKeeper encoding is at the end of this module.

Decisions (`authorize`), as Kafka decides them:
- a principal in `super.users` ("User:a;User:b") may do anything;
- the ACLs that apply to a resource are those of its type whose pattern matches its name:
  LITERAL with the same name or the name '*', PREFIXED whose name starts the resource's name;
- of those, the ones that match the request: principal equal or 'User:*'; host '*', equal,
  or a CIDR range holding it ("10.0.0.0/8", Kafka 4.4); operation equal or ALL, and for ALLOW
  ACLs also implied: DESCRIBE by READ, WRITE, DELETE, ALTER; DESCRIBE_CONFIGS by ALTER_CONFIGS
  (a DENY READ does not deny DESCRIBE);
- any matching DENY denies; else any matching ALLOW allows; else denied, unless no ACL at all
  applies to the resource and `allow.everyone.if.no.acl.found` (default false) is set.
`authorize_by_resource_type` is Kafka's KIP-679 check (may the principal do an operation on
some resource of a type; InitProducerId asks it for TOPIC WRITE).

ACL requests (asked of Kafka 4.4 with StandardAuthorizer: tests/oracle/test_acl_authorizer.py):
- filters (`binding_matches`): ANY type / pattern type and None strings match anything; a
  LITERAL or PREFIXED filter with a name matches that exact pattern; ANY with a name matches
  every pattern type of that exact name; MATCH with a name matches the patterns that apply to
  a resource of that name (LITERAL equal or '*', PREFIXED that start it). Codes Kafka does
  not know match nothing; DeleteAcls refuses them per filter, INVALID_REQUEST "Unknown
  patternFilter." (resource or pattern type) / "Unknown entryFilter." (operation,
  permission). Each delete filter sees the ACLs as they were before the request.
- creations (`creation_error`), checked in Kafka's order with its texts (INVALID_REQUEST):
  the CLUSTER resource named otherwise than kafka-cluster, an empty name, a code Kafka does
  not know ("Invalid resourceType UNKNOWN", patternType, operation, permissionType), a
  principal without ':', an empty host, a CIDR host Kafka cannot parse. A creation with an
  ANY (or MATCH) code fails the whole request in Kafka: every creation UNKNOWN_SERVER_ERROR
  with no message, nothing created. Creating an ACL that exists is a success.
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Iterable, Sequence
from typing import Protocol
from urllib.parse import quote, unquote

from protocol.errors import ErrorCode
from wirebroker.security.acls import (
    AclBinding,
    AclBindingFilter,
    AclDeleteResult,
    AclError,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)

__all__ = [
    "AUTHORIZER_CLASS_NAMES",
    "CLUSTER_NAME",
    "WILDCARD",
    "WILDCARD_PRINCIPAL",
    "AclAuthorizer",
    "AuthorizerConfigError",
    "acl_node_path",
    "authorizer_from_config",
    "binding_matches",
    "creation_error",
    "decode_acl_node",
    "encode_acl_node",
    "parse_acl_node_path",
    "parse_super_users",
    "resource_type_name",
]


class _RawConfig(Protocol):
    def raw(self, name: str) -> str | None: ...


WILDCARD = "*"
WILDCARD_PRINCIPAL = "User:*"
CLUSTER_NAME = "kafka-cluster"

_IMPLIED = {
    AclOperation.DESCRIBE: {
        AclOperation.DESCRIBE,
        AclOperation.READ,
        AclOperation.WRITE,
        AclOperation.DELETE,
        AclOperation.ALTER,
    },
    AclOperation.DESCRIBE_CONFIGS: {AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS},
}
_CODES: dict[type, frozenset[int]] = {
    enum_type: frozenset(int(m) for m in enum_type if m != 0)  # 0 is UNKNOWN
    for enum_type in (ResourceType, PatternType, AclOperation, AclPermissionType)
}


#: `authorizer.class.name` values that mean this authorizer (Kafka's, and ours).
AUTHORIZER_CLASS_NAMES = frozenset(
    {
        "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "kafka.security.authorizer.AclAuthorizer",
        "kafka.security.auth.SimpleAclAuthorizer",
        "AclAuthorizer",
        "AuthorizerConfigError",
        "authorizer_from_config",
        "StandardAuthorizer",
        "wirebroker.security.authorizer.AclAuthorizer",
    }
)


class AuthorizerConfigError(ValueError):
    """An `authorizer.class.name` or `allow.everyone.if.no.acl.found` the broker refuses."""


def authorizer_from_config(config: _RawConfig) -> AclAuthorizer | None:
    """The authorizer a broker's settings ask for: None without `authorizer.class.name`
    (Kafka's default), else an empty AclAuthorizer with `super.users` and
    `allow.everyone.if.no.acl.found` (AuthorizerConfigError for values Kafka refuses)."""
    name = (config.raw("authorizer.class.name") or "").strip()
    if not name:
        return None
    if name not in AUTHORIZER_CLASS_NAMES:
        raise AuthorizerConfigError(
            f"authorizer.class.name={name}: not supported (use "
            "org.apache.kafka.metadata.authorizer.StandardAuthorizer)"
        )
    allow = (config.raw("allow.everyone.if.no.acl.found") or "false").strip().lower()
    if allow not in ("true", "false"):
        raise AuthorizerConfigError(f"allow.everyone.if.no.acl.found={allow}: not a boolean")
    return AclAuthorizer(
        super_users=parse_super_users(config.raw("super.users")),
        allow_everyone_if_no_acl_found=allow == "true",
    )


def parse_super_users(value: str | None) -> frozenset[str]:
    """`super.users`: principals separated by ';' ("User:admin;User:broker")."""
    return frozenset(p.strip() for p in (value or "").split(";") if p.strip())


def _known(enum_type: type, code: int) -> bool:
    """Whether Kafka knows the code (Java's fromCode gives UNKNOWN otherwise)."""
    return code in _CODES[enum_type]


def pattern_applies(binding: AclBinding, resource_name: str) -> bool:
    """Whether an ACL's resource pattern applies to a resource of that name (same type)."""
    if binding.pattern_type == PatternType.LITERAL:
        return binding.resource_name in (resource_name, WILDCARD)
    if binding.pattern_type == PatternType.PREFIXED:
        return resource_name.startswith(binding.resource_name)
    return False


def binding_matches(acl_filter: AclBindingFilter, binding: AclBinding) -> bool:
    """Kafka's AclBindingFilter.matches."""
    f = acl_filter
    if f.resource_type != ResourceType.ANY and f.resource_type != binding.resource_type:
        return False
    if f.pattern_type not in (PatternType.ANY, PatternType.MATCH, binding.pattern_type):
        return False
    if f.resource_name is not None:
        if f.pattern_type in (PatternType.ANY, binding.pattern_type):
            if f.resource_name != binding.resource_name:
                return False
        elif not pattern_applies(binding, f.resource_name):
            return False
    return (
        (f.principal is None or f.principal == binding.principal)
        and (f.host is None or f.host == binding.host)
        and f.operation in (AclOperation.ANY, binding.operation)
        and f.permission_type in (AclPermissionType.ANY, binding.permission_type)
    )


def _filter_error(acl_filter: AclBindingFilter) -> AclError | None:
    """DeleteAcls' refusal of a filter with a code Kafka does not know."""
    if not (
        _known(ResourceType, acl_filter.resource_type)
        and _known(PatternType, acl_filter.pattern_type)
    ):
        return AclError(ErrorCode.INVALID_REQUEST, "Unknown patternFilter.")
    if not (
        _known(AclOperation, acl_filter.operation)
        and _known(AclPermissionType, acl_filter.permission_type)
    ):
        return AclError(ErrorCode.INVALID_REQUEST, "Unknown entryFilter.")
    return None


def _has_any_code(binding: AclBinding) -> bool:
    """A creation Kafka cannot even build (its ResourcePattern / AccessControlEntry refuse
    ANY, and MATCH): the whole request fails."""
    return (
        binding.resource_type == ResourceType.ANY
        or binding.pattern_type in (PatternType.ANY, PatternType.MATCH)
        or binding.operation == AclOperation.ANY
        or binding.permission_type == AclPermissionType.ANY
    )


def creation_error(binding: AclBinding) -> AclError | None:
    """Kafka's refusal of one CreateAcls creation (no ANY code in it), or None."""
    b = binding
    checks: list[tuple[bool, str]] = [
        (
            b.resource_type == ResourceType.CLUSTER and b.resource_name != CLUSTER_NAME,
            f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}",
        ),
        (not b.resource_name, "Invalid empty resource name"),
        (not _known(ResourceType, b.resource_type), "Invalid resourceType UNKNOWN"),
        (
            b.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED),
            "Invalid patternType UNKNOWN",
        ),
        (not _known(AclOperation, b.operation), "Invalid operation UNKNOWN"),
        (not _known(AclPermissionType, b.permission_type), "Invalid permissionType UNKNOWN"),
        (
            ":" not in b.principal,
            f"Could not parse principal from `{b.principal}` (no colon is present separating "
            "the principal type from the principal name)",
        ),
        (not b.host, "Host pattern cannot be null or empty"),
    ]
    for failed, message in checks:
        if failed:
            return AclError(ErrorCode.INVALID_REQUEST, message)
    if b.host != WILDCARD and "/" in b.host:
        problem = _cidr_problem(b.host)
        if problem is not None:
            return AclError(
                ErrorCode.INVALID_REQUEST, f"Invalid CIDR notation '{b.host}': {problem}"
            )
    return None


_IPV4_CIDR = re.compile(r"(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})/(\d{1,2})")


def _cidr_problem(cidr: str) -> str | None:
    """Why Kafka (commons-net's SubnetUtils) would not parse `cidr`, in its words, or None."""
    if ":" not in cidr:
        match = _IPV4_CIDR.fullmatch(cidr)
        if match is None:
            return f"Could not parse [{cidr}]"
        *octets, bits = (int(g) for g in match.groups())
        for octet in octets:
            if octet > 255:
                return f"Value [{octet}] not in range [0,255]"
        return f"Value [{bits}] not in range [0,32]" if bits > 32 else None
    address, _, prefix = cidr.partition("/")
    if not re.fullmatch(r"\d+", prefix):
        return f"Could not parse [{cidr}] - invalid prefix length"
    if int(prefix) > 128:
        return f"Could not parse [{cidr}] - prefix length must be between 0 and 128"
    try:
        ipaddress.IPv6Address(address)
    except ValueError:
        return f"Could not parse [{address}]"
    return None


def host_matches(acl_host: str, host: str) -> bool:
    """An ACL's host against a client address: '*', the same address, or a CIDR range."""
    if acl_host in (WILDCARD, host):
        return True
    if "/" not in acl_host:
        return False
    try:
        return ipaddress.ip_address(host) in ipaddress.ip_network(acl_host, strict=False)
    except ValueError:
        return False


def _entry_result(binding: AclBinding, principal: str, host: str, operation: int) -> bool | None:
    """An ACL's answer for this request: True allows, False denies, None does not match."""
    if binding.principal not in (principal, WILDCARD_PRINCIPAL):
        return None
    if not host_matches(binding.host, host):
        return None
    allow = binding.permission_type == AclPermissionType.ALLOW
    if binding.operation != AclOperation.ALL:
        if allow and operation in _IMPLIED:
            if binding.operation not in _IMPLIED[AclOperation(operation)]:
                return None
        elif binding.operation != operation:
            return None
    return allow


class AclAuthorizer:
    """ACLs in memory and Kafka's decisions over them (see the module's docstring)."""

    enabled = True

    def __init__(
        self,
        acls: Iterable[AclBinding] = (),
        *,
        super_users: Iterable[str] = (),
        allow_everyone_if_no_acl_found: bool = False,
    ) -> None:
        self.super_users = frozenset(super_users)
        self.allow_everyone_if_no_acl_found = allow_everyone_if_no_acl_found
        # (resource type, pattern type, name) -> its ACLs
        self._acls: dict[tuple[int, int, str], set[AclBinding]] = {}
        self.add(acls)

    # -- the store
    def add(self, bindings: Iterable[AclBinding]) -> None:
        for b in bindings:
            self._acls.setdefault((b.resource_type, b.pattern_type, b.resource_name), set()).add(b)

    def remove(self, bindings: Iterable[AclBinding]) -> None:
        for b in bindings:
            key = (b.resource_type, b.pattern_type, b.resource_name)
            entries = self._acls.get(key)
            if entries is not None:
                entries.discard(b)
                if not entries:
                    del self._acls[key]

    def replace(self, bindings: Iterable[AclBinding]) -> None:
        """Hold exactly `bindings` (a mirror's reload)."""
        self._acls = {}
        self.add(bindings)

    def bindings(self) -> list[AclBinding]:
        """Every ACL, grouped by resource pattern."""
        return [b for entries in self._acls.values() for b in _ordered(entries)]

    def acls(self, acl_filter: AclBindingFilter) -> list[AclBinding]:
        """The ACLs `acl_filter` matches (DescribeAcls), grouped by resource pattern."""
        return [b for b in self.bindings() if binding_matches(acl_filter, b)]

    def plan_create(
        self, bindings: Sequence[AclBinding]
    ) -> tuple[list[AclError | None], list[AclBinding]]:
        """CreateAcls: each creation's outcome and the ACLs to add (not yet added)."""
        if any(_has_any_code(b) for b in bindings):
            return [AclError(ErrorCode.UNKNOWN, None)] * len(bindings), []
        outcomes = [creation_error(b) for b in bindings]
        new = list(dict.fromkeys(b for b, e in zip(bindings, outcomes, strict=True) if e is None))
        return outcomes, new

    def plan_delete(
        self, filters: Sequence[AclBindingFilter]
    ) -> tuple[list[AclDeleteResult], list[AclBinding]]:
        """DeleteAcls: each filter's outcome and the ACLs to remove (not yet removed)."""
        results = []
        doomed: dict[AclBinding, None] = {}
        for acl_filter in filters:
            error = _filter_error(acl_filter)
            if error is not None:
                results.append(AclDeleteResult(error))
                continue
            matched = tuple(self.acls(acl_filter))
            doomed.update(dict.fromkeys(matched))
            results.append(AclDeleteResult(deleted=matched))
        return results, list(doomed)

    # -- the Authorizer protocol (acls.py)
    async def describe_acls(self, acl_filter: AclBindingFilter) -> list[AclBinding]:
        return self.acls(acl_filter)

    async def create_acls(self, bindings: Sequence[AclBinding]) -> list[AclError | None]:
        outcomes, new = self.plan_create(bindings)
        self.add(new)
        return outcomes

    async def delete_acls(self, filters: Sequence[AclBindingFilter]) -> list[AclDeleteResult]:
        results, doomed = self.plan_delete(filters)
        self.remove(doomed)
        return results

    # -- decisions
    def _applying(self, resource_type: int, resource_name: str) -> Iterable[AclBinding]:
        """The ACLs whose resource pattern applies to this resource."""
        keys = [
            (resource_type, PatternType.LITERAL, resource_name),
            (resource_type, PatternType.LITERAL, WILDCARD),
        ]
        keys += [
            (resource_type, PatternType.PREFIXED, resource_name[:end])
            for end in range(len(resource_name) + 1)
        ]
        for key in dict.fromkeys(keys):
            yield from self._acls.get(key, ())

    def authorize(
        self, principal: str, host: str, operation: int, resource_type: int, resource_name: str
    ) -> bool:
        """May `principal` ("User:alice"), connected from `host` (an IP address), do
        `operation` on the resource? (See the module's docstring.)"""
        if principal in self.super_users:
            return True
        applies = allowed = False
        for binding in self._applying(resource_type, resource_name):
            applies = True
            result = _entry_result(binding, principal, host, operation)
            if result is False:
                return False
            allowed = allowed or result is True
        return allowed or (not applies and self.allow_everyone_if_no_acl_found)

    def authorized_operations(
        self,
        principal: str,
        host: str,
        resource_type: int,
        resource_name: str,
        operations: Iterable[int],
    ) -> list[int]:
        """Those of `operations` the principal may do on the resource (authorized ops)."""
        return [
            op
            for op in operations
            if self.authorize(principal, host, op, resource_type, resource_name)
        ]

    def authorize_by_resource_type(
        self, principal: str, host: str, operation: int, resource_type: int
    ) -> bool:
        """KIP-679: may the principal do `operation` on some resource of the type? Kafka's
        default Authorizer.authorizeByResourceType: allowed on a resource named "hardcode"
        (super users, allow.everyone...), else an ALLOW (operation or ALL, no implied ones)
        for the principal and host not covered by a DENY: a DENY on the literal '*' denies
        all, an ALLOW on it allows, a literal ALLOW is covered by the same literal DENY,
        any ALLOW by a PREFIXED DENY that starts its name."""
        if resource_type in (ResourceType.ANY, ResourceType.UNKNOWN):
            raise ValueError(f"Must specify a non-filter resource type for {resource_type}")
        if operation in (AclOperation.ANY, AclOperation.UNKNOWN):
            raise ValueError(f"Must specify a non-filter operation type for {operation}")
        if self.authorize(principal, host, operation, resource_type, "hardcode"):
            return True
        deny = self._by_pattern(principal, host, operation, resource_type, deny=True)
        if WILDCARD in deny[PatternType.LITERAL]:
            return False
        allow = self._by_pattern(principal, host, operation, resource_type, deny=False)
        if WILDCARD in allow[PatternType.LITERAL]:
            return True
        for pattern_type, names in allow.items():
            for name in names:
                if pattern_type == PatternType.LITERAL and name in deny[PatternType.LITERAL]:
                    continue
                prefixes = (name[:end] for end in range(1, len(name) + 1))
                if not any(prefix in deny[PatternType.PREFIXED] for prefix in prefixes):
                    return True
        return False

    def _by_pattern(
        self, principal: str, host: str, operation: int, resource_type: int, *, deny: bool
    ) -> dict[int, set[str]]:
        """Names of the DENY (or ALLOW) ACLs of the type for this principal, host and
        operation (or ALL), by pattern type."""
        permission = AclPermissionType.DENY if deny else AclPermissionType.ALLOW
        names: dict[int, set[str]] = {PatternType.LITERAL: set(), PatternType.PREFIXED: set()}
        for (rtype, ptype, name), entries in self._acls.items():
            if rtype != resource_type:
                continue
            if any(
                b.permission_type == permission
                and b.principal in (principal, WILDCARD_PRINCIPAL)
                and host_matches(b.host, host)
                and b.operation in (operation, AclOperation.ALL)
                for b in entries
            ):
                names[ptype].add(name)
        return names


def _ordered(entries: Iterable[AclBinding]) -> list[AclBinding]:
    return sorted(entries, key=lambda b: (b.principal, b.host, b.operation, b.permission_type))


# -- ZooKeeper's layout (Kafka before KRaft): one node per resource pattern
_LITERAL_ROOT = "/kafka-acl"
_PREFIXED_ROOT = "/kafka-acl-extended/prefixed"


def _camel(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("_"))


_TYPE_NAMES = {t.value: _camel(t.name) for t in ResourceType if t.value > ResourceType.ANY}
_TYPES_BY_NAME = {name: code for code, name in _TYPE_NAMES.items()}
_OPERATION_NAMES = {o.value: _camel(o.name) for o in AclOperation if o.value > AclOperation.ANY}
_OPERATIONS_BY_NAME = {name: code for code, name in _OPERATION_NAMES.items()}
_PERMISSION_NAMES = {AclPermissionType.DENY: "Deny", AclPermissionType.ALLOW: "Allow"}
_PERMISSIONS_BY_NAME = {name: int(code) for code, name in _PERMISSION_NAMES.items()}


def resource_type_name(resource_type: int) -> str:
    """Kafka's name of a resource type in ZooKeeper paths ("Topic", "TransactionalId")."""
    return _TYPE_NAMES[resource_type]


def _encode_name(name: str) -> str:
    encoded = quote(name, safe="")
    return encoded.replace(".", "%2E") if name in (".", "..") else encoded


def acl_node_path(resource_type: int, pattern_type: int, resource_name: str) -> str:
    """`/kafka-acl/Topic/<name>` (LITERAL) or `/kafka-acl-extended/prefixed/Topic/<name>`.
    Names are percent-encoded (Kafka wrote them raw; a '/' in a group name broke it)."""
    root = _LITERAL_ROOT if pattern_type == PatternType.LITERAL else _PREFIXED_ROOT
    if pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
        raise ValueError(f"no node for pattern type {pattern_type}")
    return f"{root}/{_TYPE_NAMES[resource_type]}/{_encode_name(resource_name)}"


def parse_acl_node_path(path: str) -> tuple[int, int, str]:
    """(resource type, pattern type, name) of an ACL node's path; ValueError otherwise."""
    roots = ((_PREFIXED_ROOT, PatternType.PREFIXED), (_LITERAL_ROOT, PatternType.LITERAL))
    for root, pattern_type in roots:
        if path.startswith(root + "/"):
            type_name, slash, name = path[len(root) + 1 :].partition("/")
            if slash and type_name in _TYPES_BY_NAME and name and "/" not in name:
                return _TYPES_BY_NAME[type_name], int(pattern_type), unquote(name)
    raise ValueError(f"not an ACL node: {path}")


def encode_acl_node(bindings: Iterable[AclBinding]) -> bytes:
    """A resource pattern's node data: {"version":1,"acls":[{principal, permissionType,
    operation, host}]} with Kafka's names ("Allow", "DescribeConfigs")."""
    acls = [
        {
            "principal": b.principal,
            "permissionType": _PERMISSION_NAMES[AclPermissionType(b.permission_type)],
            "operation": _OPERATION_NAMES[b.operation],
            "host": b.host,
        }
        for b in _ordered(bindings)
    ]
    return json.dumps({"version": 1, "acls": acls}, separators=(",", ":")).encode()


def decode_acl_node(
    resource_type: int, pattern_type: int, resource_name: str, data: bytes
) -> list[AclBinding]:
    """The ACLs in a node's data; ValueError if it is not Kafka's format."""
    try:
        node = json.loads(data)
        return [
            AclBinding(
                resource_type,
                resource_name,
                pattern_type,
                str(acl["principal"]),
                str(acl["host"]),
                _OPERATIONS_BY_NAME[acl["operation"]],
                _PERMISSIONS_BY_NAME[acl["permissionType"]],
            )
            for acl in node["acls"]
        ]
    except (ValueError, KeyError, TypeError) as e:
        raise ValueError(f"not an ACL node: {e!r}") from None

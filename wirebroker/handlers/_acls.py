"""The ACL requests as `wirebroker.security.acls` types, and Kafka's checks of them.

Kafka refuses to parse an ACL request whose filter or creation has an UNKNOWN (0) code in any
of resource type, pattern type, operation or permission type (its DescribeAclsRequest /
CreateAclsRequest / DeleteAclsRequest constructors throw IllegalArgumentException) and closes
the connection; so does wirebroker (`MalformedRequest`: the dispatcher closes, one warning).
Codes it does not know (say 99) are not UNKNOWN there and pass, as in Kafka 4.4 (asked of it:
tests/oracle/test_acls_without_authorizer.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from protocol.exceptions import MalformedRequest
from wirebroker.security.acls import AclBinding, AclBindingFilter, AclError

__all__ = ["acl_filter", "binding", "error_fields", "resources"]

_UNKNOWN = 0


def _known(what: str, fields: Mapping[str, Any], names: tuple[str, ...]) -> list[int]:
    codes = [int(fields[n]) for n in names]
    unknown = [n for n, code in zip(names, codes, strict=True) if code == _UNKNOWN]
    if unknown:
        raise MalformedRequest(f"{what} with an UNKNOWN {', '.join(unknown)}")
    return codes


_FILTER_CODES = ("resource_type_filter", "pattern_type_filter", "operation", "permission_type")
_CREATION_CODES = ("resource_type", "resource_pattern_type", "operation", "permission_type")


def acl_filter(fields: Mapping[str, Any]) -> AclBindingFilter:
    """A DescribeAcls request or a DeleteAcls filter; MalformedRequest on an UNKNOWN code."""
    rtype, pattern, operation, permission = _known("ACL filter", fields, _FILTER_CODES)
    return AclBindingFilter(
        resource_type=rtype,
        resource_name=fields.get("resource_name_filter"),
        pattern_type=pattern,
        principal=fields.get("principal_filter"),
        host=fields.get("host_filter"),
        operation=operation,
        permission_type=permission,
    )


def binding(fields: Mapping[str, Any]) -> AclBinding:
    """A CreateAcls creation; MalformedRequest on an UNKNOWN code."""
    rtype, pattern, operation, permission = _known("ACL creation", fields, _CREATION_CODES)
    return AclBinding(
        resource_type=rtype,
        resource_name=str(fields["resource_name"]),
        pattern_type=pattern,
        principal=str(fields["principal"]),
        host=str(fields["host"]),
        operation=operation,
        permission_type=permission,
    )


def error_fields(error: AclError | None, success: str | None = None) -> dict[str, Any]:
    """`error_code` and `error_message` of an outcome (None: NONE with `success` as text)."""
    if error is None:
        return {"error_code": 0, "error_message": success}
    return {"error_code": int(error.code), "error_message": error.message}


def acl_fields(b: AclBinding) -> dict[str, Any]:
    return {
        "principal": b.principal,
        "host": b.host,
        "operation": b.operation,
        "permission_type": b.permission_type,
    }


def resources(bindings: list[AclBinding]) -> list[dict[str, Any]]:
    """DescribeAcls' resources: the bindings grouped by resource pattern (first seen first)."""
    grouped: dict[tuple[int, str, int], list[dict[str, Any]]] = {}
    for b in bindings:
        grouped.setdefault((b.resource_type, b.resource_name, b.pattern_type), []).append(
            acl_fields(b)
        )
    return [
        {"resource_type": t, "resource_name": n, "pattern_type": p, "acls": acls}
        for (t, n, p), acls in grouped.items()
    ]

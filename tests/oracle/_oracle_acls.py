"""What the oracle's ACL tests share: the settings of their brokers, Kafka 4.4's
StandardAuthorizer with super user User:admin and allow.everyone.if.no.acl.found=true (the
fixtures `kafka_with_authorizer` and `wirebroker_with_authorizer` of conftest.py), the
anonymous principal and the fields of a CreateAcls creation. Used by test_acl_authorizer.py and
test_acl_enforcement.py."""

from __future__ import annotations

SETTINGS = {
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "allow.everyone.if.no.acl.found": "true",
    "super.users": "User:admin",
}
ANONYMOUS = "User:ANONYMOUS"
#: a CreateAcls creation's fields, in the order an ACL tuple holds them
ACL_FIELDS = (
    "resource_type",
    "resource_name",
    "resource_pattern_type",
    "principal",
    "host",
    "operation",
    "permission_type",
)

"""Security: the authorizer behind the ACL APIs (wirebroker.security.acls). TLS, SASL and a
real authorizer with stored ACLs are issue 34's; today the broker runs as an Apache Kafka
without an authorizer (its default) does."""

"""Security: pure cores (no trio, no I/O) for issue 34. acls.py: the authorizer the ACL APIs
ask (`NoAuthorizer`: Apache Kafka without one, the broker's default); authorizer.py: an ACL
authorizer with Kafka's decisions; scram.py: the SCRAM-SHA-256/512 server exchange;
credentials.py: SCRAM users (Describe/AlterUserScramCredentials); scram_users.py: the SCRAM
users the handlers and SASL ask (in ZooKeeper: wirebroker/cluster/zk_scram_users.py). TLS,
the SASL wire layer and their wiring into the broker are the listeners' (wirebroker/net/,
listeners.py)."""

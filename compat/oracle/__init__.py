"""Apache Kafka 4.4 as an oracle for wirebroker (README.md here)."""

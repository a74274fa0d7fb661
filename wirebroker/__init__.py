"""wirebroker: a Kafka broker in Python that speaks the Kafka binary protocol."""

__version__ = "0.1.0"

"""The one way a one-shot CLI verb reaches Kafka: quiet clients, then a bounded probe."""

from __future__ import annotations


def connect() -> str:
    """The cluster's bootstrap address (`KAFKA_BOOTSTRAP_SERVERS`, else the running local
    stack's, else the default) once a broker there answers; `BrokerUnreachable` within a few
    seconds otherwise, instead of the client retrying (and logging) until it is killed."""
    from tickwheel.adapters.kafka.admin import require_broker
    from tickwheel.adapters.kafka.config import quiet_client_logs

    quiet_client_logs()
    return require_broker()

"""The CLI's broker probe (`require_broker`): a refusal from every bootstrap address ends the
wait at once; anything less definitive (a timeout, a name that does not resolve, one address
of several refused) waits the whole probe timeout (decision 0168)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from confluent_kafka import KafkaError

from tickwheel.adapters.kafka.admin import (
    BrokerUnreachable,
    all_refused,
    bootstrap_entries,
    require_broker,
)
from tickwheel.stack.broker import free_port

# Long enough that a probe which waited it out could not pass for one that gave up early.
LONG_TIMEOUT_S = 60.0


def refused(name: str, address: str) -> KafkaError:
    return KafkaError(
        KafkaError._TRANSPORT,
        f"{name}/bootstrap: Connect to ipv4#{address} failed: Connection refused "
        "(after 0ms in state CONNECT)",
    )


def resolves_to(table: dict[str, set[str]]) -> Callable[[str, int], set[str] | None]:
    return lambda host, _port: table.get(host)


def test_a_closed_local_port_is_given_up_on_before_the_timeout() -> None:
    address = f"127.0.0.1:{free_port()}"  # nothing listens there
    with pytest.raises(BrokerUnreachable) as caught:
        require_broker(address, timeout=LONG_TIMEOUT_S)
    assert caught.value.waited_s < LONG_TIMEOUT_S
    message = str(caught.value)
    assert "\n" not in message
    assert address in message and "Connection refused" in message
    assert "`tickwheel stack up`" in message and "KAFKA_BOOTSTRAP_SERVERS" in message


def test_every_address_refused_is_definitive() -> None:
    entries = bootstrap_entries("localhost:9092,PLAINTEXT://10.0.0.7:9093")
    assert entries == {("localhost", 9092), ("10.0.0.7", 9093)}
    errors = [
        refused("localhost:9092", "127.0.0.1:9092"),
        refused("10.0.0.7:9093", "10.0.0.7:9093"),
    ]
    resolve = resolves_to({"localhost": {"127.0.0.1"}, "10.0.0.7": {"10.0.0.7"}})
    assert all_refused(entries, errors, resolve)


def test_one_address_of_two_refused_is_not_definitive() -> None:
    entries = bootstrap_entries("a:9092,b:9092")
    assert entries is not None
    resolve = resolves_to({"a": {"10.0.0.1"}, "b": {"10.0.0.2"}})
    assert not all_refused(entries, [refused("a:9092", "10.0.0.1:9092")], resolve)


def test_a_host_refused_at_one_of_its_addresses_is_not_definitive() -> None:
    entries = {("kafka", 9092)}
    resolve = resolves_to({"kafka": {"10.0.0.1", "10.0.0.2"}})
    one = [refused("kafka:9092", "10.0.0.1:9092")]
    assert not all_refused(entries, one, resolve)
    assert all_refused(entries, [*one, refused("kafka:9092", "10.0.0.2:9092")], resolve)


def test_timeouts_and_names_that_do_not_resolve_are_not_refusals() -> None:
    entries = {("kafka", 9092)}
    errors = [
        KafkaError(KafkaError._TIMED_OUT, "kafka:9092/bootstrap: Connection setup timed out"),
        KafkaError(KafkaError._RESOLVE, "kafka:9092/bootstrap: Failed to resolve 'kafka:9092'"),
        KafkaError(KafkaError._ALL_BROKERS_DOWN, "1/1 brokers are down"),
    ]
    assert not all_refused(entries, errors, resolves_to({"kafka": {"10.0.0.1"}}))
    # A refusal logged for a host that no longer resolves: not definitive either.
    assert not all_refused(entries, [refused("kafka:9092", "10.0.0.1:9092")], resolves_to({}))


@pytest.mark.parametrize(
    ("bootstrap", "entries"),
    [
        ("127.0.0.1:1", {("127.0.0.1", 1)}),
        ("Kafka", {("kafka", 9092)}),
        ("[::1]:19092, SSL://broker:9094", {("::1", 19092), ("broker", 9094)}),
        ("::1:9092", None),  # ambiguous without brackets: never counted as refused
        ("broker:port", None),
        ("", None),
    ],
)
def test_bootstrap_entries(bootstrap: str, entries: set[tuple[str, int]] | None) -> None:
    assert bootstrap_entries(bootstrap) == entries

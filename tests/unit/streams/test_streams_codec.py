"""The faust codec for tickwheel's Avro single-object encoding, and the safe app settings."""

from __future__ import annotations

from faust.serializers import codecs

from tickwheel.adapters.avro import encode
from tickwheel.adapters.kafka.dead_letters import dead_letter_record
from tickwheel.streams import AVRO_CODEC, Undecodable, app_settings, is_undecodable, topic_names


def test_a_record_round_trips_through_the_registered_codec() -> None:
    letter = dead_letter_record("t", 1, 2, "job", b"raw", "bad", "undecodable", 3)
    codec = codecs.get_codec(AVRO_CODEC)
    decoded = codec.loads(encode("DeadLetter", letter))
    assert decoded == letter
    assert codec.loads(codec.dumps({"__record__": "DeadLetter", **letter})) == letter


def test_bytes_that_are_no_record_come_back_as_undecodable_with_the_reason() -> None:
    value = codecs.get_codec(AVRO_CODEC).loads(b'{"json": "not avro"}')
    assert is_undecodable(value)
    assert isinstance(value, Undecodable)
    assert value.raw == b'{"json": "not avro"}'
    assert "single-object" in value.reason


def test_settings_are_at_least_once_without_a_public_web_server(monkeypatch) -> None:
    monkeypatch.setenv("KAFKA_BOOTSTRAP_SERVERS", "127.0.0.1:1,127.0.0.1:2")
    settings = app_settings()
    assert settings["processing_guarantee"] == "at_least_once"
    assert settings["web_enabled"] is False and settings["web_bind"] == "127.0.0.1"
    assert settings["broker"] == "kafka://127.0.0.1:1,kafka://127.0.0.1:2"


def test_topic_names_carry_the_prefix(monkeypatch) -> None:
    monkeypatch.setenv("TICKWHEEL_TOPIC_PREFIX", "acme.")
    names = topic_names()
    assert names["executions.events"] == "acme.executions.events"
    assert names["workflows.events"] == "acme.workflows.events"

"""The API's definition catalogue over the real broker: one long-lived reader whose every read
still sees every write acknowledged before it, by anyone (the SDK's partition-scan guarantee)."""

from __future__ import annotations

import pytest

from tickwheel.adapters.kafka.producer import EventProducer
from tickwheel.sdk.catalogue import CataloguedJobsClient
from tickwheel.sdk.jobs import JobsClient, UnknownJob
from tickwheel.topology import topic_name

pytestmark = pytest.mark.integration

SPEC = {"type": "noop", "cron": "0 2 * * *"}


def test_a_write_by_another_client_is_read_at_once_and_a_delete_too(
    applied_topology: str, kafka_bootstrap: str
) -> None:
    catalogued = CataloguedJobsClient(kafka_bootstrap)
    other = JobsClient(kafka_bootstrap)
    try:
        with pytest.raises(UnknownJob):
            catalogued.get("c-1")
        for n in range(20):
            other.create({**SPEC, "jobId": f"c-{n}"})
            # Acknowledged a moment ago, by another producer: the next read must see it.
            assert catalogued.get(f"c-{n}")["version"] == 1
        other.update("c-3", {"enabled": False})
        assert catalogued.get("c-3")["version"] == 2
        other.delete("c-4")
        with pytest.raises(UnknownJob):
            catalogued.get("c-4")
        # A record that is not a definition is nobody's job: not listed, not an error.
        producer = EventProducer(kafka_bootstrap)
        producer.send(topic_name("jobs.definitions"), "c-5", b"not avro")
        producer.flush()
        listed = [r["jobId"] for r in catalogued.list()]
        assert listed == sorted(f"c-{n}" for n in range(20) if n not in (4, 5))
        assert listed == [r["jobId"] for r in other.list()]
        # Its own writes (a create checks the id through the catalogue) too.
        catalogued.create({**SPEC, "jobId": "c-own"})
        assert catalogued.get("c-own")["jobId"] == "c-own"
    finally:
        catalogued.catalogue.close()

"""A changed calendar is recorded in history (issue 15 §4, decision 0110): every record of the
`calendars` topic, put through the SDK on the real broker, lands in `calendar_events` in real
chDB through the history sink, and `tickwheel history calendars NAME` shows each version with
the dates it added and removed.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.history_sink_running import sink_in_thread, wait_caught_up
from tickwheel.adapters.avro import decode, encode
from tickwheel.adapters.clickhouse import HistorySettings
from tickwheel.adapters.kafka.producer import EventProducer
from tickwheel.adapters.kafka.reader import read_to_end
from tickwheel.cli import main
from tickwheel.clock import FakeClock
from tickwheel.core.calendars import make_calendar, parse_date
from tickwheel.core.record_schedule import compile_record_schedule
from tickwheel.core.timefmt import parse_iso_ms
from tickwheel.history import (
    CalendarNotRecorded,
    calendar_history,
    open_history_reader,
    schedule_audit,
)
from tickwheel.sdk.calendars import delete_calendar, put_calendar
from tickwheel.sdk.jobs import validate_job
from tickwheel.services.history.settings import HistorySinkSettings
from tickwheel.topology import topic_name

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

# Far ahead, so no retention has dropped the puts whatever day the suite runs.
PUT_AT = parse_iso_ms("2099-11-02T09:00:00Z", "put") / 1000
FIRST = ["2099-12-25", "2099-12-28"]
SECOND = ["2099-12-25", "2099-12-29", "2100-01-01"]  # 12-28 removed; 12-29, 01-01 added
AGAIN = ["2100-04-12"]
GULF_JOB = {"jobId": "gulf-daily", "type": "noop", "cron": "0 9 * * *", "timezone": "Asia/Dubai",
            "calendar": "gulf", "businessDays": "skip", "jitter": "0s"}  # fmt: skip


@pytest.fixture(scope="module")
def recorded(
    kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Any]]:
    """Calendar `uk` put, changed, deleted and put again (with a Friday-Saturday weekend);
    `gulf` put; one undecodable record between them; then one sink has read it all."""
    from tickwheel.adapters.kafka.admin import apply_topology

    with pytest.MonkeyPatch.context() as env:
        env.setenv("KAFKA_BOOTSTRAP_SERVERS", kafka_bootstrap)
        env.setenv("TICKWHEEL_TOPIC_PREFIX", f"t{uuid.uuid4().hex[:10]}.")
        apply_topology(bootstrap=kafka_bootstrap)
        yield from _record(kafka_bootstrap, tmp_path_factory.mktemp("calendars"))


def _record(kafka_bootstrap: str, tmp_path: Path) -> Iterator[dict[str, Any]]:
    clock = FakeClock(PUT_AT)
    put_calendar("uk", FIRST, bootstrap=kafka_bootstrap, clock=clock)
    clock.advance(3600)
    put_calendar("uk", SECOND, bootstrap=kafka_bootstrap, clock=clock, description="E&W")
    producer = EventProducer(kafka_bootstrap)
    producer.send(topic_name("calendars"), "uk", b"not an avro record")
    producer.flush()
    delete_calendar("uk", bootstrap=kafka_bootstrap)
    clock.advance(3600)
    put_calendar("uk", AGAIN, weekend=(5, 6), bootstrap=kafka_bootstrap, clock=clock)
    put_calendar("gulf", ["2099-12-02"], weekend=(5, 6), bootstrap=kafka_bootstrap, clock=clock)
    # A job following `gulf`, defined before it was put: the audit reads both back.
    record = validate_job(dict(GULF_JOB), int(PUT_AT * 1000) - 86_400_000)
    producer.send(
        topic_name("jobs.definitions"), GULF_JOB["jobId"], encode("JobDefinition", record)
    )
    producer.flush()
    settings = HistorySinkSettings(
        instance="calendar-history",
        bootstrap=kafka_bootstrap,
        group_id=f"calendar-history-{uuid.uuid4().hex[:8]}",
        max_batch=3,  # several batches, so versions arrive in more than one insert
        max_wait_ms=100,
        history=HistorySettings(history_dir=tmp_path / "history"),
    )
    with sink_in_thread(settings):
        wait_caught_up(kafka_bootstrap, settings.group_id)
        reader = open_history_reader(settings.history)
        try:
            yield {"reader": reader, "history_dir": str(tmp_path / "history")}
        finally:
            reader.close()


def test_each_put_change_and_delete_is_one_version_with_its_diff(recorded: dict[str, Any]) -> None:
    versions = calendar_history(recorded["reader"], "uk")
    summary = [(v["version"], v["deleted"], v["dates"], v["added"], v["removed"]) for v in versions]
    assert summary == [
        (1, False, FIRST, FIRST, []),
        (2, False, SECOND, ["2099-12-29", "2100-01-01"], ["2099-12-28"]),
        (0, True, [], [], SECOND),  # the delete removes every date
        (1, False, AGAIN, AGAIN, []),  # put again after the delete: its first version anew
    ]
    assert versions[1]["description"] == "E&W" and versions[0]["description"] is None
    assert [v["weekend"] for v in versions] == [[0, 6], [0, 6], [], [5, 6]]
    # A weekend change is named only between two live versions, never across a delete.
    assert [v["weekend_changed"] for v in versions] == [False, False, False, False]
    assert versions[0]["event_time"].startswith("2099-11-02T09:00:00")
    assert versions[1]["event_time"].startswith("2099-11-02T10:00:00")


def test_every_record_is_stored_once(recorded: dict[str, Any]) -> None:
    reader = recorded["reader"]
    records = [
        r for r in read_to_end(topic_name("calendars"), None) if r.value != b"not an avro record"
    ]
    raw, distinct = reader.query("SELECT count(), uniqExact(event_id) FROM calendar_events").rows[0]
    assert raw == distinct == len(records) == 5
    # Partitioned by day like every history table.
    partitions = reader.query(
        "SELECT DISTINCT partition FROM system.parts WHERE table = 'calendar_events' AND active"
    ).rows
    days = reader.query("SELECT DISTINCT toString(toYYYYMMDD(event_time)) FROM calendar_events")
    assert {p[0] for p in partitions} == {d[0] for d in days.rows}
    # Another calendar's versions are its own.
    assert [v["dates"] for v in calendar_history(reader, "gulf")] == [["2099-12-02"]]


def test_an_undecodable_calendar_record_is_dead_lettered_and_the_sink_goes_on(
    recorded: dict[str, Any],
) -> None:
    letters = [decode(r.value, "DeadLetter")[1]
               for r in read_to_end(topic_name("executions.dlq"), None) if r.value is not None]  # fmt: skip
    ours = [d for d in letters if d["source_topic"] == topic_name("calendars")]
    assert len(ours) == 1 and ours[0]["reason"].startswith("undecodable")
    # The records after it were recorded (the delete and the put again above).
    assert len(calendar_history(recorded["reader"], "uk")) == 4


def test_the_cli_shows_the_versions_and_refuses_an_unknown_calendar(
    recorded: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    def run_cli(argv: list[str]) -> tuple[int, str, str]:
        code = main(argv)
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    where = ["--history-dir", recorded["history_dir"]]
    code, out, err = run_cli(["history", "calendars", "uk", "--json", *where])
    assert code == 0, err
    assert [v["added"] for v in json.loads(out)] == [FIRST, ["2099-12-29", "2100-01-01"], [], AGAIN]
    code, out, err = run_cli(["history", "calendars", "uk", *where])
    assert code == 0, err
    assert "version 2: 3 dates" in out and "removed: 2099-12-28" in out and "deleted" in out
    code, out, err = run_cli(["history", "calendars", "nobody", *where])
    assert code == 1 and out == "" and err.count("\n") == 1 and "nobody" in err
    with pytest.raises(CalendarNotRecorded):
        calendar_history(recorded["reader"], "nobody")
    code, out, err = run_cli(["history", "calendars", "Not A Name", *where])
    assert code == 2 and "NAME" in err and err.count("\n") == 1


def test_the_schedule_audit_owes_a_calendar_jobs_slots_by_the_recorded_calendar(
    recorded: dict[str, Any],
) -> None:
    start = parse_iso_ms("2099-11-25T00:00:00Z", "from")
    end = parse_iso_ms("2099-12-06T00:00:00Z", "to")
    audit = schedule_audit(recorded["reader"], GULF_JOB["jobId"], start, end)
    owed = [parse_iso_ms(o["scheduled_time"], "slot") for o in audit["occurrences"]]
    # As the timer compiles the job: Friday-Saturday weekends and 2 December skipped (nothing
    # fired, so every owed slot reads `missing`).
    gulf = make_calendar("gulf", [parse_date("2099-12-02", "d")], (5, 6))
    record = validate_job(dict(GULF_JOB), int(PUT_AT * 1000) - 86_400_000)
    expected = compile_record_schedule(record, {"gulf": gulf}).occurrences(start - 1, end - 1)
    assert owed == expected and audit["missing"] == len(expected) > 0
    days = {o["scheduled_time"][:10] for o in audit["occurrences"]}
    assert "2099-12-02" not in days and "2099-12-03" in days

"""Several specs, exclusions and calendars survive the trip JSON → record → topic → record:
the record form checks by the same rules and compiles to the same schedule (JobDefinition v5)."""

from __future__ import annotations

from typing import Any

import pytest

from tickwheel.adapters.avro import decode, encode
from tickwheel.core.calendars import make_calendar, parse_date
from tickwheel.core.definition import validate_definition
from tickwheel.core.definition_record import check_definition_record
from tickwheel.core.describe import describe
from tickwheel.core.record_schedule import compile_record_schedule, record_schedule
from tickwheel.core.schedule import compile_schedule, parse_schedule
from tickwheel.errors import InvalidInput
from tickwheel.sdk.jobs import definition_to_spec

NOW = 1_800_000_000_000
SCHEDULE: dict[str, Any] = {
    "cron": "0 18 L * *",
    "timezone": "Europe/London",
    "schedules": [{"every": "6h", "phase": "2027-01-01T03:00:00Z"}, {"cron": "0 9 1 * *"}],
    "exclude": ["2027-12-31", "0 9 * * MON"],
    "calendar": "uk",
    "businessDays": "previous",
}
UK = {"uk": make_calendar("uk", [parse_date("2027-04-30", "d")])}


def _stored(spec: dict[str, Any]) -> dict[str, Any]:
    record = validate_definition({"jobId": "recon", "type": "noop", **spec}, NOW)
    return decode(encode("JobDefinition", record), "JobDefinition")[1]


def test_the_record_checks_and_compiles_to_what_the_json_validated_to() -> None:
    record = _stored(SCHEDULE)
    assert record["schedules"][0]["phase"] == 1_798_772_400_000  # epoch ms in the record
    assert record["exclude"] == SCHEDULE["exclude"]
    assert (record["calendar"], record["businessDays"]) == ("uk", "previous")
    check_definition_record(record, "recon")
    parsed = parse_schedule(
        cron=SCHEDULE["cron"], timezone=SCHEDULE["timezone"], schedules=SCHEDULE["schedules"],
        exclude=SCHEDULE["exclude"], calendar="uk", business_days="previous",
    )  # fmt: skip
    assert record_schedule(record) == parsed
    assert compile_record_schedule(record, UK) == compile_schedule(parsed, UK)
    assert compile_record_schedule(record, UK).first(NOW, NOW + 90 * 86_400_000, 50) == (
        compile_schedule(parsed, UK).first(NOW, NOW + 90 * 86_400_000, 50)
    )
    assert describe(record_schedule(record)) == describe(parsed)


def test_an_edit_starts_from_the_stored_record_and_validates_to_it_again() -> None:
    record = _stored(SCHEDULE)
    again = _stored({k: v for k, v in definition_to_spec(record).items()
                     if k not in ("jobId", "type", "version", "createdAt", "updatedAt")})  # fmt: skip
    for field in ("cron", "schedules", "exclude", "calendar", "businessDays", "timezone"):
        assert again[field] == record[field], field


def test_a_schedules_only_job_has_no_cron_of_its_own() -> None:
    record = _stored({"schedules": [{"cron": "0 9 * * MON"}, {"cron": "0 17 * * FRI"}]})
    assert record["cron"] is None and record["every"] is None
    check_definition_record(record, "recon")
    assert len(compile_record_schedule(record).first(NOW, NOW + 7 * 86_400_000, 10)) == 2


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"exclude": ["2027-02-30"]}, "exclude[0]"),
        ({"businessDays": "sometimes"}, "businessDays"),
        ({"calendar": "Not A Name"}, "calendar"),
        ({"schedules": [{"cron": None, "every": None, "phase": None}]}, "schedules[0]"),
    ],
)
def test_a_record_another_client_wrote_badly_is_refused_naming_the_field(
    change: dict[str, Any], field: str
) -> None:
    record = {**_stored({"cron": "0 9 * * *"}), **change}
    with pytest.raises(InvalidInput) as caught:
        check_definition_record(record, "recon")
    assert caught.value.field == field

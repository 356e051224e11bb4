"""The definition fields the watchdog reads — minRunTime and a disable's account — as the
core validates them (JSON form and record form) and as the watchdog's spec reads them."""

from __future__ import annotations

from typing import Any

import pytest

from tickwheel.adapters.avro import decode, encode
from tickwheel.core.definition import validate_definition
from tickwheel.core.definition_record import check_definition_record
from tickwheel.core.watchdog import job_spec
from tickwheel.errors import InvalidInput
from tickwheel.sdk.jobs import definition_to_spec

NOW = 1_800_000_000_000


def spec(**extra: Any) -> dict[str, Any]:
    return {"jobId": "j", "type": "noop", "payload": {}, "cron": "*/5 * * * *", **extra}


def test_min_run_time_and_the_disable_account_reach_the_record_and_the_watchdog() -> None:
    record = validate_definition(spec(
        minRunTime="30s", maxRunTime="1h", enabled=False, disabledBy="ana",
        disabledOwner="team-billing", disabledReason="vendor outage until March",
        disabledReviewBy="2027-03-01T09:00:00Z",
    ), NOW)  # fmt: skip
    assert record["minRunTime"] == "30s" and record["disabledReviewBy"] == 1_803_891_600_000
    decoded = decode(encode("JobDefinition", record), "JobDefinition")[1]
    check_definition_record(decoded, "j")  # the timer's record check accepts it
    watched = job_spec("j", decoded)
    assert watched is not None and watched.min_run_ms == 30_000
    assert (watched.disabled_by, watched.disabled_owner, watched.review_by_ms) == (
        "ana",
        "team-billing",
        1_803_891_600_000,
    )
    # The JSON view an update starts from writes the instant back as ISO text.
    again = definition_to_spec(decoded)
    assert again["disabledReviewBy"] == "2027-03-01T09:00:00Z"
    resumed = {k: v for k, v in again.items() if k not in ("version", "createdAt", "updatedAt")}
    assert validate_definition({**resumed, "enabled": True}, NOW, version=2)["enabled"] is True


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        ({"minRunTime": "0s"}, "minRunTime"),
        ({"minRunTime": "8d"}, "minRunTime"),
        ({"minRunTime": "2h", "maxRunTime": "1h"}, "minRunTime"),
        ({"minRunTime": 30}, "minRunTime"),
        ({"disabledOwner": ""}, "disabledOwner"),
        ({"disabledReason": "x" * 201}, "disabledReason"),
        ({"disabledBy": "ana\nroot"}, "disabledBy"),
        ({"disabledReviewBy": "next week"}, "disabledReviewBy"),
        ({"disabledReviewBy": 1_803_891_600_000}, "disabledReviewBy"),
    ],
)
def test_bad_values_are_refused_naming_the_field(extra: dict[str, Any], field: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        validate_definition(spec(**extra), NOW)
    assert caught.value.field == field and "accepted" in caught.value.message


def test_an_expected_max_interval_shorter_than_the_schedule_s_period_is_refused() -> None:
    with pytest.raises(InvalidInput) as caught:
        validate_definition(spec(expectedMaxInterval="2m"), NOW)  # every 5 minutes
    assert caught.value.field == "expectedMaxInterval" and "always" in caught.value.message
    assert validate_definition(spec(expectedMaxInterval="5m"), NOW)["expectedMaxInterval"] == "5m"
    one_off = {"jobId": "o", "type": "noop", "runAt": "2027-01-01T00:00:00Z",
               "expectedMaxInterval": "1s"}  # fmt: skip
    assert validate_definition(one_off, NOW)["expectedMaxInterval"] == "1s"  # owes no period

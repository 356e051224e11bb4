"""One validator for job definitions: the JSON form (SDK) and the stored record (timer).

`tickwheel.core.definition` holds the rules; `validate_job` (SDK) and
`check_definition_record` (what the timer calls on every record it reads) must agree,
so most cases here run through both.
"""

from __future__ import annotations

import ipaddress
import json
from typing import Any

import pytest

from tickwheel.core.definition import validate_definition
from tickwheel.core.definition_record import check_definition_record
from tickwheel.core.period import check_payload_template, render_payload_template
from tickwheel.core.targets import url_problem
from tickwheel.errors import InvalidInput
from tickwheel.sdk.jobs import validate_job

NOW = 1_800_000_000_000
GOOD: dict[str, Any] = {"jobId": "report", "type": "noop", "cron": "0 2 * * *"}


def _record(changes: dict[str, Any] | None = None, **more: Any) -> dict[str, Any]:
    return {**validate_definition(GOOD, NOW), **(changes or {}), **more}


def _refused_both_ways(spec: dict[str, Any], field: str, text: str) -> None:
    """The SDK refuses `spec`, and the timer refuses the record it would have been."""
    with pytest.raises(InvalidInput) as sdk:
        validate_job(spec, NOW)
    assert sdk.value.field == field and text in sdk.value.message, sdk.value
    assert "accepted" in sdk.value.message
    # The same definition as a record some other producer wrote, unchecked.
    record = _record({k: v for k, v in spec.items() if k not in ("payload", "runAt")})
    if "payload" in spec:
        record["payload"] = json.dumps(spec["payload"])
    with pytest.raises(InvalidInput) as timer:
        check_definition_record(record, record["jobId"])
    assert timer.value.field == field, timer.value


def test_a_valid_definition_passes_both_forms() -> None:
    record = validate_job({**GOOD, "payloadTemplate": '{"day": "{{ periodStart | date }}"}'}, NOW)
    check_definition_record(record, "report")
    one_off = validate_job(
        {"jobId": "o", "type": "noop", "runAt": "2030-01-01T09:00:00+01:00"}, NOW
    )
    assert one_off["timezone"] == "UTC"
    check_definition_record(one_off, "o")


BAD = [
    ({**GOOD, "cron": "0 0 * * 7/2"}, "cron", "never fires"),
    ({**GOOD, "cron": "0 0 30 2 *"}, "cron", "can never fire"),
    ({**GOOD, "timezone": "Mars/Olympus"}, "timezone", "unknown"),
    ({**GOOD, "jobId": "__partition__/1"}, "jobId", "reserved"),
    ({**GOOD, "jobId": "__mine"}, "jobId", "reserved"),
    ({**GOOD, "payloadTemplate": '{"d": "{{ period_start }}"}'}, "payloadTemplate", "unknown"),
    ({**GOOD, "payloadTemplate": '{"d": "{{ periodStart"}'}, "payloadTemplate", "not closed"),
    ({**GOOD, "payloadTemplate": '{"d": "{{}}"}'}, "payloadTemplate", "empty placeholder"),
    ({**GOOD, "payloadTemplate": '{"d": {{ periodStart }}}'}, "payloadTemplate", "JSON"),
    ({**GOOD, "payloadTemplate": '["{{ periodEnd }}"]'}, "payloadTemplate", "not an object"),
    ({**GOOD, "payloadTemplate": '{"d": "{{ periodEnd | upper }}"}'}, "payloadTemplate", "filter"),
    ({**GOOD, "maxCatchUp": 0}, "maxCatchUp", "1 to 100000"),
    ({**GOOD, "maxAttempts": 0}, "maxAttempts", "1 to 100"),
    ({**GOOD, "misfirePolicy": "later"}, "misfirePolicy", "catch_up"),
    ({**GOOD, "overlapPolicy": "never"}, "overlapPolicy", "queue_one"),
    ({**GOOD, "priority": "urgent"}, "priority", "high"),
    ({**GOOD, "dstPolicy": "sometimes"}, "dstPolicy", "shift_earlier"),
    ({**GOOD, "jitter": "soon"}, "jitter", "duration"),
    ({**GOOD, "jitter": "2h"}, "jitter", "at most 1h"),
    ({**GOOD, "expectedMaxInterval": "a day"}, "expectedMaxInterval", "duration"),
    ({**GOOD, "type": "http", "payload": {"url": "http://127.0.0.1/"}}, "payload.url", "loopback"),
    (
        {**GOOD, "type": "http", "payload": {"url": "http://169.254.169.254/latest/meta-data"}},
        "payload.url",
        "metadata",
    ),
    ({**GOOD, "type": "http", "payload": {"url": "http://localhost:8080/"}}, "payload.url", "localhost"),
    ({**GOOD, "type": "http", "payload": {"url": "http://[::1]/"}}, "payload.url", "loopback"),
    ({**GOOD, "type": "http", "payload": {"url": "http://10.1.2.3/"}}, "payload.url", "private"),
    ({**GOOD, "type": "http", "payload": {"url": "http://0x7f000001/"}}, "payload.url", "numeric"),
    ({**GOOD, "type": "http", "payload": {"url": "file:///etc/passwd"}}, "payload.url", "scheme"),
    ({**GOOD, "type": "http", "payload": {}}, "payload.url", "missing"),
]  # fmt: skip


@pytest.mark.parametrize(("spec", "field", "text"), BAD, ids=[f"{b[1]}:{b[2]}" for b in BAD])
def test_bad_definitions_are_refused_by_the_sdk_and_the_timer_alike(
    spec: dict[str, Any], field: str, text: str
) -> None:
    _refused_both_ways(spec, field, text)


def test_a_record_keyed_differently_from_its_job_id_is_refused() -> None:
    with pytest.raises(InvalidInput, match="record key 'other' differs from jobId 'report'"):
        check_definition_record(_record(), "other")
    with pytest.raises(InvalidInput, match="differs"):
        check_definition_record(_record(), None)


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"payload": "{not json"}, "payload"),
        ({"payload": "x" * 70_000}, "payload"),
        ({"runAt": 1, "cron": None, "timezone": "Europe/London"}, "timezone"),
        ({"runAt": 10**20, "cron": None}, "runAt"),
        ({"runAt": None, "cron": None}, "schedule"),
        ({"version": 0}, "version"),
        ({"createdAt": "yesterday"}, "createdAt"),
        ({"extra": 1}, "extra"),
    ],
)
def test_record_only_shapes_are_refused(changes: dict[str, Any], field: str) -> None:
    with pytest.raises(InvalidInput) as refused:
        check_definition_record(_record(changes), "report")
    assert refused.value.field == field


def test_the_allowed_networks_open_private_targets_but_never_metadata() -> None:
    allowed = (ipaddress.ip_network("10.20.0.0/16"), ipaddress.ip_network("127.0.0.0/8"))
    assert url_problem("http://10.20.1.5:8080/hook", allowed) is None
    assert url_problem("http://10.21.1.5/", allowed) is not None
    problem = url_problem("http://169.254.169.254/", (ipaddress.ip_network("169.254.0.0/16"),))
    assert problem is not None and "metadata" in problem
    assert url_problem("http://metadata.google.internal/", allowed) is not None
    record = validate_definition(
        {**GOOD, "type": "http", "payload": {"url": "http://10.20.1.5/"}},
        NOW,
        allowed_networks=allowed,
    )
    check_definition_record(record, "report", allowed_networks=allowed)
    with pytest.raises(InvalidInput, match="private"):
        check_definition_record(record, "report")


def test_the_allowed_networks_env_is_honoured_by_the_sdk(monkeypatch: pytest.MonkeyPatch) -> None:
    spec = {**GOOD, "type": "http", "payload": {"url": "http://10.20.1.5/"}}
    with pytest.raises(InvalidInput):
        validate_job(spec, NOW)
    monkeypatch.setenv("TICKWHEEL_HTTP_ALLOWED_NETWORKS", "10.20.0.0/16")
    assert validate_job(spec, NOW)["jobId"] == "report"


def test_the_sdk_resolves_http_hosts_and_leaves_unresolvable_ones_to_the_worker() -> None:
    spec = {**GOOD, "type": "http", "payload": {"url": "https://internal.example.com/x"}}
    with pytest.raises(InvalidInput, match=r"resolves to 10\.0\.0\.7 is a private address"):
        validate_job(spec, NOW, resolver=lambda host, port: ["10.0.0.7"])
    assert validate_job(spec, NOW, resolver=lambda host, port: ["93.184.216.34"])

    def unresolvable(host: str, port: int) -> list[str]:
        from tickwheel.sdk.ssrf import RequestRefused

        raise RequestRefused(host, "cannot resolve")

    assert validate_job(spec, NOW, resolver=unresolvable)


def test_a_templated_http_url_is_judged_on_its_rendering() -> None:
    template = '{"url": "http://127.0.0.1/?day={{ periodStart | date }}"}'
    with pytest.raises(InvalidInput, match="loopback"):
        validate_job({**GOOD, "type": "http", "payloadTemplate": template}, NOW)


def test_the_date_filter_renders_the_day_in_the_jobs_zone() -> None:
    # 2024-01-01T23:30Z is already Jan 2 in Tokyo and still Jan 1 in New York.
    at = 1_704_151_800_000
    template = '{"d": "{{ periodStart | date }}", "t": "{{periodStart}}"}'
    kwargs = {"period_start_ms": at, "period_end_ms": at, "scheduled_ms": at}
    assert json.loads(render_payload_template(template, **kwargs, timezone="Asia/Tokyo")) == {
        "d": "2024-01-02",
        "t": "2024-01-01T23:30:00Z",
    }
    assert json.loads(render_payload_template(template, **kwargs))["d"] == "2024-01-01"
    assert check_payload_template(template, "America/New_York")["d"] == "2023-12-31"


def test_json_nesting_is_not_a_placeholder() -> None:
    assert check_payload_template('{"a": {"b": {"c": "{{ scheduledTime }}"}}}') == {
        "a": {"b": {"c": "2024-01-02T00:00:00Z"}}
    }


def test_the_timer_compiles_interval_and_bounded_jobs_like_the_core() -> None:
    from tickwheel.core.record_schedule import compile_record_schedule
    from tickwheel.core.timer.jobs import entry_from_definition

    now = 1_767_225_600_000
    record = validate_definition(
        {"jobId": "every-90m", "type": "noop", "every": "90m", "maxRuns": 2}, now
    )
    entry = entry_from_definition(record)
    assert entry.schedule is compile_record_schedule(record)
    # maxRuns counts from createdAt inclusive: `now` is itself on the 90-minute grid.
    assert entry.schedule.first(0, 2**50, 5) == [now, now + 5_400_000]
    assert not entry.one_off and entry.jitter_ms == 60_000


def test_a_record_whose_shape_was_checked_still_has_its_identity_and_payload_checked() -> None:
    """A restore checks what makes a record valid once per shape (schedule, template, policies,
    ...); what differs between jobs of one shape is checked for every record."""
    from tickwheel.core.definition_record import check_definition_record
    from tickwheel.sdk.jobs import validate_job

    good = validate_job(
        {"jobId": "shape-a", "type": "noop", "cron": "7 7 * * *"}, 1_800_000_000_000
    )
    check_definition_record(good, "shape-a")  # the shape is now known valid
    check_definition_record({**good, "jobId": "shape-b"}, "shape-b")
    bad = {
        "jobId": ({**good, "jobId": "__partition__/3"}, "__partition__/3"),
        "jobId ": ({**good, "jobId": "x" * 300}, "x" * 300),
        "jobId  ": ({**good, "jobId": "shape-c"}, "another-key"),
        "version": ({**good, "version": 0}, "shape-a"),
        "payload": ({**good, "payload": "[1, 2]"}, "shape-a"),
        "payload ": ({**good, "payload": "not json"}, "shape-a"),
        "payload  ": ({**good, "payload": json.dumps({"x": "y" * 70_000})}, "shape-a"),
    }
    for field, (record, key) in bad.items():
        with pytest.raises(InvalidInput) as refused:
            check_definition_record(record, key)
        assert refused.value.field == field.strip(), field

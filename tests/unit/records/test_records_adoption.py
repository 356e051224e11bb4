"""Typed records are adopted, and stay adopted: `dict[str, Any]` annotations only go down.

Every Avro record has a generated type (`tickwheel.records`); `dict[str, Any]` is for JSON
(payloads, HTTP and CLI bodies, history rows, reader views). Each module that still has
such annotations is listed with its count today: a module may keep fewer, never more, and a
new module outside the JSON edges has none (decision 0158). When a count went down, lower
its line (`python -m tests.unit.records.record_annotations` prints the table).
"""

from __future__ import annotations

from tests.unit.records.record_annotations import (
    PACKAGE,
    counts,
    decode_counts,
    named_decodes,
    untyped_annotations,
)

# New modules here may annotate JSON as dict[str, Any]: HTTP bodies and CLI input.
JSON_EDGES = ("services/api/", "cli/")

# path under src/tickwheel -> the most `dict[str, Any]` annotations it may keep.
CEILINGS = {
    "adapters/avro/_registry.py": 2,
    "adapters/avro/records_gen.py": 3,
    "adapters/clickhouse/_writes.py": 2,
    "adapters/kafka/admin.py": 1,
    "adapters/kafka/config.py": 7,
    "adapters/kafka/memory/_consumer.py": 1,
    "adapters/kafka/producer.py": 1,
    "cli/dead_letters.py": 1,
    "cli/stack.py": 1,
    "cli/workflows.py": 1,
    "core/definition_record.py": 1,
    "core/record_schedule.py": 1,
    "core/timer/catch_up.py": 1,
    "core/timer/executions.py": 5,
    "core/timer/jobs.py": 1,
    "core/timer/partition.py": 5,
    "core/timer/state_writes.py": 1,  # the in-memory TimerState, moved from partition.py
    "core/timer/states.py": 7,
    "core/timer/workflow_steps.py": 3,
    "core/timer/writes.py": 1,
    "core/watchdog/conditions.py": 2,
    "core/watchdog/evaluator.py": 1,
    "core/watchdog/lifecycle.py": 3,
    "core/watchdog/runs.py": 2,
    "core/watchdog/workflows.py": 1,
    "core/workflow/decider.py": 3,
    "core/workflow/definition.py": 1,
    "core/workflow/events.py": 6,
    "core/workflow/fold.py": 3,
    "core/workflow/inputs.py": 2,
    "core/workflow/snapshot.py": 3,
    "core/workflow/state.py": 4,
    "core/workflow/template.py": 1,
    "demo.py": 2,
    "demo_workflows.py": 1,
    "events.py": 1,
    "history/_audit.py": 3,
    "history/_calendars.py": 1,
    "history/_timeline.py": 6,
    "history/_wire.py": 3,
    "history/_workflows.py": 1,
    "history/memory.py": 4,
    "jobtypes/basic.py": 2,
    "jobtypes/http.py": 1,
    "logs.py": 1,
    "ports/history.py": 1,
    "sdk/alerts.py": 8,  # the alert domain, moved from cli/alerts.py
    "sdk/catalogue.py": 7,
    "sdk/dead_letters.py": 14,
    "sdk/job_records.py": 8,
    "sdk/jobs.py": 23,
    "sdk/worker.py": 2,
    # +3 (decision 0217): a code instance's events are read as JSON views, as a DAG's are.
    "sdk/workflows.py": 14,
    "services/api/app.py": 4,
    "services/api/asgi.py": 1,
    "services/api/backend.py": 12,
    "services/api/console/access.py": 4,
    "services/api/console/actions.py": 5,
    "services/api/console/admin.py": 2,
    "services/api/console/alerts.py": 6,
    "services/api/console/dead_letters.py": 5,
    "services/api/console/execution_actions.py": 1,
    "services/api/console/models.py": 3,
    "services/api/console/operations.py": 15,
    "services/api/console/pages.py": 4,
    "services/api/console/reads.py": 8,
    "services/api/console/summary.py": 3,
    "services/api/console/workflows.py": 5,  # +2: a code run's rows, HTML view data
    "services/api/door.py": 2,
    "services/api/followed_jobs.py": 13,
    "services/api/idempotency.py": 1,
    "services/api/keys.py": 0,
    "services/api/metrics.py": 1,
    "services/api/models.py": 11,
    "services/api/problems.py": 6,
    "services/api/routes_alerts.py": 13,
    "services/api/routes_dead_letter_actions.py": 11,
    "services/api/routes_executions.py": 3,
    "services/api/routes_history.py": 2,
    "services/api/routes_job_commands.py": 12,
    "services/api/routes_jobs.py": 7,
    "services/api/routes_occurrences.py": 4,
    "services/api/routes_schedules.py": 7,
    "services/api/routes_streams.py": 1,
    "services/api/routes_workflows.py": 12,  # +1: the signal route's HTTP body
    "services/api/tenancy.py": 10,
    "services/api/topic_view.py": 0,
    "services/api/views.py": 7,
    "services/api/workflow_models.py": 5,
    "services/api/workflow_view.py": 11,
    "services/api/workflows.py": 10,
    "services/api/writes.py": 8,
    "services/history/endpoint.py": 1,
    "services/history/rows.py": 1,
    "services/history/service.py": 1,
    "services/orchestrator/approval_webhooks.py": 1,
    "services/orchestrator/notices.py": 2,
    "services/timer/codec.py": 1,
    "services/timer/gate.py": 2,
    "services/timer/records.py": 4,
    "services/timer/scheduler.py": 1,
    "services/watchdog/webhooks.py": 2,
    "services/worker/attempt.py": 2,
    "services/worker/events.py": 2,
    "services/worker/inline.py": 1,  # a handler's payload: arbitrary JSON
    "services/worker/runner.py": 3,
    "stack/control.py": 3,
    "streams/completions.py": 2,
    "streams/settings.py": 2,
}

# path -> the `decode(data, "Record")[1]` calls it may keep (`decode_as(Record, data)` is typed).
NAMED_DECODES = {
    "sdk/job_records.py": 1,
    "services/api/calendars.py": 1,
    "services/api/console/operations.py": 2,
    "services/api/workflow_view.py": 3,
    "services/timer/calendars.py": 1,
    "services/timer/records.py": 2,
}


def test_no_module_annotates_more_untyped_dicts_than_it_did() -> None:
    grown = []
    for name, n in counts().items():
        ceiling = CEILINGS.get(name, None if name.startswith(JSON_EDGES) else 0)
        if ceiling is not None and n > ceiling:
            lines = ", ".join(map(str, untyped_annotations(PACKAGE / name)))
            grown.append(f"{name}: {n} > {ceiling} (lines {lines})")
    assert not grown, (
        "dict[str, Any] annotations grew; a record has its type in tickwheel.records "
        "(JSON stays dict[str, Any] only at the edges):\n" + "\n".join(grown)
    )


def test_the_total_outside_the_json_edges_only_goes_down() -> None:
    inner = {name: n for name, n in counts().items() if not name.startswith(JSON_EDGES)}
    ceiling = sum(n for name, n in CEILINGS.items() if not name.startswith(JSON_EDGES))
    assert sum(inner.values()) <= ceiling


def test_the_count_sees_parameters_returns_and_fields_but_not_text(tmp_path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        "from dataclasses import dataclass\n"
        "from typing import Any\n"
        "def f(a: dict[str, Any], *, b: list[dict[str, Any]]) -> dict[str, Any] | None:\n"
        '    """dict[str, Any] in a docstring"""\n'
        "    c: dict[str, dict[str, Any]] = {}  # dict[str, Any] in a comment\n"
        "    return None\n"
        "@dataclass\n"
        "class D:\n"
        "    e: dict[str, Any]\n"
        "x = cast(dict[str, Any], {})\n"
    )
    assert untyped_annotations(module) == [3, 3, 3, 5, 9]


def test_records_come_out_of_the_codec_typed_a_module_keeps_no_more_untyped_decodes() -> None:
    grown = [
        f"{name}: {n} > {NAMED_DECODES.get(name, 0)} (lines "
        f"{', '.join(map(str, named_decodes(PACKAGE / name)))})"
        for name, n in decode_counts().items()
        if n > NAMED_DECODES.get(name, 0)
    ]
    assert not grown, (
        "decode(data, 'Record')[1] gives a dict[str, Any]; decode_as(Record, data) gives the "
        "record's type (decision 0157):\n" + "\n".join(grown)
    )


def test_an_untyped_decode_is_seen_and_a_typed_one_is_not(tmp_path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        "a = decode(data, 'Alert')[1]\n"
        "b = codec.decode(data, expected='TimerState')[1]\n"
        "c = decode_as(Alert, data)\n"
        "d = decode(data)[1]  # any record: switched on its name\n"
        "e = decode(data, expected=name)[1]\n"
    )
    assert named_decodes(module) == [1, 2]

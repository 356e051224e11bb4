"""Where one 10,000-row insert of the history sink's fast path spends its time in chDB, and
what the insert settings and a single decode of requests would change (issue 17, item 4).

Every variant runs the same frames, interleaved round by round (the order reversed every
other round) in one process on a fresh embedded chDB, each insert with its own dedup token:

- the fast path's statement as the sink runs it (decisions 0123, 0149);
- with `optimize_on_insert = 1` (a ReplacingMergeTree pass over each inserted block: the
  sink's inserts before decision 0188);
- with `max_threads = 1`;
- without the `throwIf` checks (what the checks cost; the sink never runs this);
- into a `Null` table of the same columns (decode and SELECT only, no part written);
- requests as the sink inserts them (one statement per table, so decoded twice) and decoded
  once into a session `Memory` table, then both tables filled from it;
- a batch's events and its requests' `requested` rows in one statement (the sink, decision
  0187) and in two (before it): per record of both kinds.

Parts per insert are counted around one insert of each table (active parts before and after).
Figures, never pass/fail; prints a table and writes bench/reports/history-profile.md.
Run: `.venv/bin/python bench/profile_history.py [--rounds N]`.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tickwheel.adapters.avro import encode
from tickwheel.adapters.clickhouse import ChdbHistoryStore
from tickwheel.adapters.clickhouse._writes import encoded_statement, union_statement
from tickwheel.services.history.columnar import EncodedKind, encoded_kinds

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench._history_drain import request  # noqa: E402
from bench._history_inserts import BASE_MS, Read, event  # noqa: E402

ROWS = 10_000
REPORT = ROOT / "bench" / "reports" / "history-profile.md"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=8)
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="tickwheel-profile-history-"))
    store = ChdbHistoryStore(workdir / "history")
    store.migrate()
    writer = store._writer  # the store's own session: the Memory table lives in it
    kinds = encoded_kinds()
    events, requests = kinds["ExecutionEvent"], kinds["ExecutionRequest"]
    event_values = [encode("ExecutionEvent", event(n, "leased" if n % 2 else "succeeded"))
                    for n in range(ROWS)]  # fmt: skip
    request_values = [encode("ExecutionRequest", request(n, BASE_MS + n)) for n in range(ROWS)]
    counter = [0]

    def spool(kind: EncodedKind, values: list[bytes]) -> str:
        counter[0] += 1
        path = workdir / f"frame-{counter[0]}.avro"
        path.write_bytes(kind.frame([Read(f"t{counter[0]}", i, v) for i, v in enumerate(values)]))
        return f"file('{path}', 'Avro', '{kind.structure}')"

    def statement(kind: EncodedKind, index: int, source: str, settings: str = "",
                  select: str | None = None, table: str | None = None) -> str:  # fmt: skip
        target = kind.tables[index]
        text = encoded_statement(table or target.table, target.columns, select or target.select,
                                 source, f"profile-{counter[0]}-{index}")  # fmt: skip
        return text.replace("SETTINGS ", f"SETTINGS {settings}, ") if settings else text

    writer.command("CREATE TABLE events_null AS execution_events ENGINE = Null")
    unchecked = events.tables[0].select.split(", fromUnix", 1)
    unchecked_select = "event_id, fromUnix" + unchecked[1]
    writer.command(f"CREATE TEMPORARY TABLE staged ENGINE = Memory AS SELECT * FROM "
                   f"{spool(requests, request_values[:1])} LIMIT 0")  # fmt: skip

    def event_insert(**options: str) -> Callable[[], None]:
        return lambda: writer.command(statement(events, 0, spool(events, event_values), **options))

    def requests_twice() -> None:
        source = spool(requests, request_values)
        for index in range(len(requests.tables)):
            writer.command(statement(requests, index, source))

    def requests_once() -> None:
        writer.command(f"INSERT INTO staged SELECT * FROM {spool(requests, request_values)}")
        for index in range(len(requests.tables)):
            writer.command(statement(requests, index, "staged"))
        writer.command("TRUNCATE TABLE staged")

    def events_and_requested_joined() -> None:
        sources = [spool(events, event_values), spool(requests, request_values)]
        selects = [(events.tables[0].select, sources[0]), (requests.tables[1].select, sources[1])]
        writer.command(union_statement("execution_events", events.tables[0].columns, selects,
                                       f"profile-{counter[0]}-joined"))  # fmt: skip

    def events_and_requested_apart() -> None:
        writer.command(statement(events, 0, spool(events, event_values)))
        writer.command(statement(requests, 1, spool(requests, request_values)))

    variants: dict[str, Callable[[], None]] = {
        "events, as the sink runs it": event_insert(),
        "events, optimize_on_insert = 1 (before 0188)": event_insert(
            settings="optimize_on_insert = 1"
        ),
        "events, max_threads = 1": event_insert(settings="max_threads = 1"),
        "events, no throwIf checks": event_insert(select=unchecked_select),
        "events into a Null table (no part)": event_insert(table="events_null"),
        "requests, decoded once per table (the sink)": requests_twice,
        "requests, decoded once into Memory": requests_once,
        "events + requested rows, one statement (the sink)": events_and_requested_joined,
        "events + requested rows, two statements (before 0187)": events_and_requested_apart,
    }
    totals = {name: [0.0, 0.0] for name in variants}
    for r in range(args.rounds):
        for name in variants if r % 2 == 0 else reversed(list(variants)):
            started, cpu = time.perf_counter(), time.process_time()
            variants[name]()
            totals[name][0] += time.perf_counter() - started
            totals[name][1] += time.process_time() - cpu
    load = os.getloadavg()
    parts = {"events": _new_parts(writer, variants["events, as the sink runs it"]),
             "requests": _new_parts(writer, requests_twice),
             "joined": _new_parts(writer, events_and_requested_joined),
             "apart": _new_parts(writer, events_and_requested_apart)}  # fmt: skip
    count = ROWS * args.rounds
    lines = [
        "# Where a history insert's time goes (bench/profile_history.py)",
        "",
        f"{ROWS:,} records per insert, {args.rounds} rounds interleaved (the order reversed every "
        f"other round), one process, embedded chDB; load average {load[0]:.2f} / {load[1]:.2f}. "
        f"Active parts added by one insert: events {parts['events']}, requests (both tables) "
        f"{parts['requests']}; events and requested rows in one statement {parts['joined']}, "
        f"in two {parts['apart']}.",
        "",
        "| variant | records/s | CPU µs/record in process |",
        "| --- | --- | --- |",
        *(f"| {name} | {count * _kinds(name) / wall:,.0f} | "
          f"{cpu * 1e6 / (count * _kinds(name)):.1f} |"
          for name, (wall, cpu) in totals.items()),
        "",
    ]  # fmt: skip
    text = "\n".join(lines)
    print(text)
    REPORT.write_text(text)
    store.close()
    return 0


def _kinds(variant: str) -> int:
    """Records a variant inserts per round, in ROWS: the joined ones take both kinds."""
    return 2 if variant.startswith("events + requested") else 1


def _new_parts(writer: Any, insert: Callable[[], None]) -> int:
    """Active parts of the two execution tables that one `insert` adds (merges aside)."""

    def active() -> int:
        return int(writer.command(
            "SELECT count() FROM system.parts WHERE active AND database = currentDatabase() "
            "AND table IN ('execution_events', 'execution_requests')"))  # fmt: skip

    before = active()
    insert()
    return active() - before


if __name__ == "__main__":
    sys.exit(main())

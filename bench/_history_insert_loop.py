"""The history sink's inserts at a pipeline's shape, apart from the broker: CPU per execution
by thread, merges included, for the ways of inserting a batch (decisions 0187, 0188).

Each run is a child process with a fresh embedded chDB: `--batches` batches of
`--executions` executions (a request and its `leased` and `succeeded` events each, 10,000
jobs), framed beforehand as the sink frames them, inserted one batch every 0.3 s; then the
child waits until chDB's merges have been idle 2 s and reads its CPU per thread from
`/proc/self/task`. Variants (each `NAME|MODE|ALTERS|SETTINGS`): MODE `three` is the
statements of decision 0183 (requests, events, requested rows), `joined` is this sink's
(requests, then events and requested rows in one statement); ALTERS are `;`-separated
statements run on the fresh tables first (table settings to try), SETTINGS `k=v,...` are
added to every insert. The variants alternate, reversed every other round.

Figures, never pass/fail. Run:
`.venv/bin/python bench/_history_insert_loop.py --rounds 6 "three|three||" "joined|joined||"`.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench._history_trickle import threads  # noqa: E402

PAUSE_S = 0.3


def child(mode: str, executions: int, batches: int, alters: str, settings: str) -> None:
    from bench._history_drain import request
    from bench._history_inserts import BASE_MS, event
    from tickwheel.adapters.avro import encode
    from tickwheel.adapters.clickhouse import ChdbHistoryStore, _writes
    from tickwheel.services.history.columnar import Frame, dedup_token, encoded_kinds

    if settings:
        plain, extra = _writes.insert_settings, dict(s.split("=") for s in settings.split(","))

        def with_extra(token: str | None, fold_copies: bool = True) -> dict[str, Any]:
            return {**plain(token, fold_copies), **extra}

        _writes.insert_settings = with_extra
    store = ChdbHistoryStore(Path(tempfile.mkdtemp(prefix="tickwheel-insert-loop-")) / "h")
    store.migrate()
    for statement in filter(None, alters.split(";")):
        store._writer.command(statement)
    kinds = encoded_kinds()
    events, requests = kinds["ExecutionEvent"], kinds["ExecutionRequest"]
    framed = []
    for b in range(batches):
        event_frame, request_frame = Frame(events), Frame(requests)
        for n in range(b * executions, (b + 1) * executions):
            job = f"loop-{n % 10_000}"
            req = request(n, BASE_MS + n)
            req["job_id"] = job
            request_frame.add(None, encode("ExecutionRequest", req), "requests", n % 6, n)
            for offset, kind in enumerate(("leased", "succeeded")):
                ev = event(n, kind, BASE_MS + n + 5)
                ev["job_id"] = job
                event_frame.add(None, encode("ExecutionEvent", ev), "events", n % 6, 2 * n + offset)
        framed.append((event_frame.data(), request_frame.data()))
    rows, ev_table, requested = requests.tables[0], events.tables[0], requests.tables[1]
    before = threads()
    for event_data, request_data in framed:
        store.insert_encoded(
            rows.table,
            rows.columns,
            rows.select,
            requests.structure,
            request_data,
            dedup_token=dedup_token(rows.table, request_data),
        )
        if mode == "three":
            for table, kind, data in (
                (ev_table, events, event_data),
                (requested, requests, request_data),
            ):
                store.insert_encoded(
                    table.table,
                    table.columns,
                    table.select,
                    kind.structure,
                    data,
                    dedup_token=dedup_token(table.table, data),
                )
        else:
            store.insert_encoded_union(
                ev_table.table,
                ev_table.columns,
                [
                    (ev_table.select, events.structure, event_data),
                    (requested.select, requests.structure, request_data),
                ],
                dedup_token=dedup_token(ev_table.table, event_data, request_data),
            )
        time.sleep(PAUSE_S)
    idle_since, deadline = time.monotonic(), time.monotonic() + 90
    while time.monotonic() < deadline:
        if store.query("SELECT count() FROM system.merges", {}).scalar():
            idle_since = time.monotonic()
        elif time.monotonic() - idle_since > 2:
            break
        time.sleep(0.2)
    after = threads()
    per_execution = {
        name: (after[name] - before.get(name, 0.0)) * 1e6 / (executions * batches) for name in after
    }
    print("RESULT " + json.dumps({"us": per_execution, "load": os.getloadavg()[0]}), flush=True)
    store.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", nargs=5, help=argparse.SUPPRESS)
    parser.add_argument("--executions", type=int, default=8000, help="executions a batch")
    parser.add_argument("--batches", type=int, default=15)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("variants", nargs="*", default=["three|three||", "joined|joined||"])
    args = parser.parse_args()
    if args.child:
        mode, executions, batches, alters, settings = args.child
        child(mode, int(executions), int(batches), alters, settings)
        return 0
    variants = [spec.split("|", 3) for spec in args.variants]
    totals: dict[str, list[float]] = collections.defaultdict(list)
    for round_ in range(args.rounds):
        for name, mode, alters, settings in variants if round_ % 2 == 0 else variants[::-1]:
            done = subprocess.run(
                [sys.executable, __file__, "--child", mode, str(args.executions),
                 str(args.batches), alters, settings],
                capture_output=True, text=True, timeout=600,
            )  # fmt: skip
            found = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
            if not found:
                print(f"{name}: the child failed\n{done.stderr[-2000:]}", flush=True)
                continue
            result = json.loads(found[0][len("RESULT ") :])
            families: collections.Counter[str] = collections.Counter()
            for thread, us in result["us"].items():
                families["python" if thread.startswith("python") else thread] += us
            top = sorted(families.items(), key=lambda item: -item[1])[:4]
            total = sum(families.values())
            totals[name].append(total)
            print(f"round {round_ + 1} {name}: {total:.1f} CPU µs per execution; "
                  + ", ".join(f"{k} {v:.1f}" for k, v in top)
                  + f"; load {result['load']:.2f}", flush=True)  # fmt: skip
    for name, values in totals.items():
        print(
            f"{name}: median {statistics.median(values):.1f} µs per execution over "
            f"{len(values)} rounds ({', '.join(f'{v:.1f}' for v in values)})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

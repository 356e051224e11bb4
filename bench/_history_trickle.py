"""The history sink's CPU per execution at a pipeline's steady rate, by thread, with old and
new code alternated round by round (issue 17, item 4; decisions 0183, 0187, 0188).

A producer process sends pipeline-shaped records at a fixed rate (per execution a request on
executions.normal and its `leased` and `succeeded` events, 10,000 jobs) to a real local
broker, while the service's sink (`HistorySink`, embedded chDB, insert inline, the service's
batch cap and waits) reads them in a child process of its own. The child reads its CPU per
thread from `/proc/self/task` when the sink has read every record, and again once chDB's
merges have been idle for two seconds: the sink's Python, librdkafka's threads and chDB's
pools (`MergeMutate` is the merge executor) each get their share.

Each variant is a code tree (`--base REV`: bench/_revisions.py exports src/, topology/ and
schemas/ into a temporary directory, put first on the child's PYTHONPATH) and environment
(`--variant NAME:K=V,...`; `TRICKLE_ALTERS` is `;`-separated statements the child runs on
its store before the sink starts, `TRICKLE_INSERT_SETTINGS` `k=v,...` extra settings of
every insert). Each round runs every variant once on a fresh topic prefix and a fresh chDB
directory, the order reversed every other round; the broker is the same for all.

Figures, never pass/fail. Prints a table per variant and writes
bench/reports/history-trickle.md. Run:
`.venv/bin/python bench/_history_trickle.py --base HEAD~1 [--rate 8000] [--seconds 20]
[--rounds 2] [--variant NAME:K=V,...]`.
"""

from __future__ import annotations

import argparse
import collections
import json
import multiprocessing as mp
import os
import re
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench import _revisions  # noqa: E402

REPORT = ROOT / "bench" / "reports" / "history-trickle.md"
JOBS = 10_000
MERGES_IDLE_S = 2.0
MERGES_WAIT_S = 90.0


def _wall() -> float:
    from tickwheel.clock import SystemClock

    return SystemClock().now()


def produce(bootstrap: str, prefix: str, rate: int, seconds: int) -> None:
    """`rate` executions a second for `seconds`: a request and its two events each."""
    os.environ["TICKWHEEL_TOPIC_PREFIX"] = prefix
    from bench._history_drain import request
    from bench._history_inserts import event
    from tickwheel.adapters.avro import encode
    from tickwheel.adapters.kafka.producer import EventProducer
    from tickwheel.topology import topic_name

    producer = EventProducer(bootstrap)
    requests, events = topic_name("executions.normal"), topic_name("executions.events")
    start, n = _wall(), 0
    for second in range(seconds):
        while _wall() < start + second:
            time.sleep(0.005)
        for _ in range(rate):
            at = int(_wall() * 1000)
            job = f"trickle-{n % JOBS}"
            req = request(n, at)
            req.update(job_id=job, execution_id=f"{job}:{at}:{n}")
            producer.send(requests, job, encode("ExecutionRequest", req))
            for kind in ("leased", "succeeded"):
                ev = event(n, kind, at + 5)
                ev.update(job_id=job, execution_id=req["execution_id"], worker_id="worker-0@h:1",
                          event_id=f"{kind}:{req['execution_id']}:1:worker-0@h:1")  # fmt: skip
                producer.send(events, job, encode("ExecutionEvent", ev))
            n += 1
        producer.poll(0)
    producer.flush()


def threads() -> dict[str, float]:
    """CPU seconds so far of this process's threads, by name (digits folded)."""
    out: collections.Counter[str] = collections.Counter()
    tick = os.sysconf("SC_CLK_TCK")
    for task in os.listdir("/proc/self/task"):
        try:
            stat = Path(f"/proc/self/task/{task}/stat").read_text()
        except OSError:
            continue  # the thread ended meanwhile
        name = re.sub(r"\d+$", "#", stat[stat.index("(") + 1 : stat.rindex(")")])
        fields = stat.rsplit(")", 1)[1].split()
        out[name] += (int(fields[11]) + int(fields[12])) / tick
    return dict(out)


def child(args: argparse.Namespace) -> None:
    """One round of one variant: the sink here, the producer in a process of its own."""
    os.environ["TICKWHEEL_TOPIC_PREFIX"] = args.prefix
    from bench._history_drain import make_sink
    from tickwheel.adapters.clickhouse import ChdbHistoryStore
    from tickwheel.adapters.kafka.admin import apply_topology

    apply_topology(bootstrap=args.bootstrap)
    store = ChdbHistoryStore(Path(tempfile.mkdtemp(prefix="tickwheel-trickle-")) / "history")
    store.migrate()
    for statement in filter(None, os.environ.get("TRICKLE_ALTERS", "").split(";")):
        store._writer.command(statement)  # the variant's table settings, before any insert
    extra = dict(item.split("=", 1) for item in
                 os.environ.get("TRICKLE_INSERT_SETTINGS", "").split(",") if item)  # fmt: skip
    if extra:
        from tickwheel.adapters.clickhouse import _writes

        plain = _writes.insert_settings

        def with_extra(token: str | None, fold_copies: bool = True) -> dict[str, Any]:
            return {**plain(token, fold_copies), **extra}

        _writes.insert_settings = with_extra
    sink = make_sink(store, args.bootstrap, 200, encoded=True, pipelined=False)
    producer = mp.get_context("spawn").Process(
        target=produce, args=(args.bootstrap, args.prefix, args.rate, args.seconds)
    )
    producer.start()
    deadline = time.monotonic() + 60
    while sink.stats.records == 0 and time.monotonic() < deadline:
        sink.step(0.2)  # the group join and the first batch are not measured
    before, records0, batches0 = threads(), sink.stats.records, sink.stats.batches
    total = args.rate * args.seconds * 3
    deadline = time.monotonic() + args.seconds + 120
    while sink.stats.records < total and time.monotonic() < deadline:
        sink.step(0.2)
    during = threads()
    idle_since, deadline = time.monotonic(), time.monotonic() + MERGES_WAIT_S
    while time.monotonic() < deadline:
        merging = store.query("SELECT count() FROM system.merges", {}).scalar()
        if merging:
            idle_since = time.monotonic()
        elif time.monotonic() - idle_since >= MERGES_IDLE_S:
            break
        time.sleep(0.25)
    after = threads()
    parts = store.query(
        "SELECT count() FROM system.parts WHERE active AND table = 'execution_events'", {}
    ).scalar()
    producer.join(10)
    executions = (sink.stats.records - records0) / 3
    result = {
        "executions": executions,
        "batches": sink.stats.batches - batches0,
        "load": os.getloadavg()[0],
        "parts": int(parts),
        "during": {k: v - before.get(k, 0.0) for k, v in during.items()},
        "after": {k: v - before.get(k, 0.0) for k, v in after.items()},
    }
    print("TRICKLE " + json.dumps(result), flush=True)
    sink.consumer.close()
    store.close()


def _family(name: str) -> str:
    if name.startswith("rdk:"):
        return "librdkafka"
    if name in ("python", "python3", "python3.11"):
        return "sink (Python, inserts)"
    return name


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--bootstrap", help=argparse.SUPPRESS)
    parser.add_argument("--prefix", help=argparse.SUPPRESS)
    parser.add_argument("--rate", type=int, default=8000, help="executions a second")
    parser.add_argument("--seconds", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--base", help="a git revision to run as the variant `base`")
    parser.add_argument("--variant", action="append", default=[], help="NAME:K=V,... (this code)")
    args = parser.parse_args()
    if args.child:
        child(args)
        return 0
    variants: dict[str, tuple[Path | None, dict[str, str]]] = {}
    if args.base:
        variants[f"base ({args.base})"] = (_revisions.tree(args.base), {})
    variants["this code"] = (None, {})
    for spec in args.variant:
        name, _, env = spec.partition(":")
        variants[name] = (None, dict(item.split("=", 1) for item in env.split(",") if item))
    from bench._common import bench_broker

    results: dict[str, list[dict[str, Any]]] = {name: [] for name in variants}
    with bench_broker() as broker:
        for round_ in range(args.rounds):
            names = list(variants) if round_ % 2 == 0 else list(reversed(variants))
            for name in names:
                tree, env = variants[name]
                child_env = {**os.environ, **env}
                if tree is not None:
                    child_env["PYTHONPATH"] = str(tree / "src")
                    child_env["TICKWHEEL_SCHEMAS_DIR"] = str(tree / "schemas")
                command = [sys.executable, __file__, "--child", "--bootstrap", broker.bootstrap,
                           "--prefix", f"tr{uuid.uuid4().hex[:6]}.", "--rate", str(args.rate),
                           "--seconds", str(args.seconds)]  # fmt: skip
                done = subprocess.run(command, env=child_env, capture_output=True, text=True,
                                      timeout=args.seconds + 400)  # fmt: skip
                line = [x for x in done.stdout.splitlines() if x.startswith("TRICKLE ")]
                if not line:
                    print(f"{name}: the child failed\n{done.stderr[-3000:]}", flush=True)
                    continue
                result = json.loads(line[0][len("TRICKLE ") :])
                results[name].append(result)
                print(f"round {round_ + 1}, {name}: {_summary(result)}", flush=True)
    _report(args, results)
    return 0


def _us(result: dict[str, Any], when: str) -> dict[str, float]:
    families: collections.Counter[str] = collections.Counter()
    for thread, seconds in result[when].items():
        families[_family(thread)] += seconds * 1e6 / max(result["executions"], 1)
    return dict(families)


def _summary(result: dict[str, Any]) -> str:
    after, during = _us(result, "after"), _us(result, "during")
    top = sorted(after.items(), key=lambda item: -item[1])[:4]
    return (f"{sum(after.values()):.1f} CPU µs per execution incl. merges after "
            f"({sum(during.values()):.1f} while reading); " +
            ", ".join(f"{k} {v:.1f}" for k, v in top) +
            f"; {result['executions']:.0f} executions in {result['batches']} batches, "
            f"{result['parts']} active execution_events parts at the end, "
            f"load {result['load']:.2f}")  # fmt: skip


def _report(args: argparse.Namespace, results: dict[str, list[dict[str, Any]]]) -> None:
    lines = [
        "# The history sink's CPU at a steady rate (bench/_history_trickle.py)",
        "",
        f"{args.rate:,} executions/s for {args.seconds} s (30,000 records/s at 10,000), "
        f"{args.rounds} round(s), the variants alternated (reversed every other round), "
        f"{os.cpu_count()} cores shared with the broker and the producer; CPU µs per "
        "execution in the sink's process, merges included (until idle 2 s).",
        "",
        "| variant | round | all | sink (Python, inserts) | MergeMutate | other chDB | "
        "librdkafka | batches | parts at end | load |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name, runs in results.items():
        for index, result in enumerate(runs, start=1):
            us = _us(result, "after")
            python = us.get("sink (Python, inserts)", 0.0)
            merge = us.get("MergeMutate", 0.0)
            rdk = us.get("librdkafka", 0.0)
            other = sum(us.values()) - python - merge - rdk
            lines.append(f"| {name} | {index} | {sum(us.values()):.1f} | {python:.1f} | "
                         f"{merge:.1f} | {other:.1f} | {rdk:.1f} | {result['batches']} | "
                         f"{result['parts']} | {result['load']:.2f} |")  # fmt: skip
    text = "\n".join(lines) + "\n"
    print(text)
    REPORT.write_text(text)


if __name__ == "__main__":
    sys.exit(main())

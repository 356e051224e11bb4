"""What replication costs (issue 31 item 5): the same measurements on one broker and on a
three-node cluster (three copies of each partition, two in sync), side by side in one run.

For each: the raw client limits on that cluster (transactional produce; the
consume-produce-commit loop), the timer's jitter-off burst (every job due in the same second)
and the pipeline end to end (no-op executions due at once: timer, worker, history sink).
The report lands in bench/reports/replication.md with a chart.

    python bench/bench_replication.py [--burst 50000] [--pipeline 20000]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench._charts import points  # noqa: E402
from bench._common import Report, bench_cluster  # noqa: E402
from bench.bench_limits import measure_limits  # noqa: E402
from bench.bench_pipeline import throughput  # noqa: E402
from bench.bench_timer import burst  # noqa: E402


def measure(brokers: int, jobs: int, executions: int, log_dir: Path) -> dict[str, Any]:
    with bench_cluster(brokers, log_dir / f"kafka-{brokers}") as kafka:
        limits = measure_limits(kafka.bootstrap, 100_000)
        fired = burst(kafka.bootstrap, jobs, jitter=False, lead_minutes=2)
        ran = throughput(kafka.bootstrap, executions, 1, log_dir / f"pipeline-{brokers}")
    return {"brokers": brokers, "limits": limits, "burst": fired, "pipeline": ran}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--burst", type=int, default=50_000, help="jobs in the timer burst")
    parser.add_argument("--pipeline", type=int, default=20_000, help="executions end to end")
    parser.add_argument("--report", default="replication.md")
    args = parser.parse_args()
    log_dir = Path(tempfile.mkdtemp(prefix="tickwheel-bench-replication-"))
    report = Report("Replication's cost: one broker and three, side by side")
    report.add("| figure | 1 broker | 3 brokers (3 copies, 2 in sync) | 3 / 1 |")
    report.add("| --- | --- | --- | --- |")
    runs = [measure(n, args.burst, args.pipeline, log_dir) for n in (1, 3)]
    rows: list[tuple[str, Callable[[dict[str, Any]], float]]] = [
        ("raw transactional produce, records/s", lambda r: r["limits"].produce_per_s),
        ("raw consume-produce-commit loop, records/s", lambda r: r["limits"].consume_produce_per_s),
        (
            f"timer burst, {args.burst:,} jobs jitter off, emitted/s",
            lambda r: r["burst"].get("emit_rate_per_s", 0.0),
        ),
        ("timer burst, fire lag p99 ms", lambda r: r["burst"]["p99"] * 1000),
        (
            f"pipeline, {args.pipeline:,} no-op executions, executions/s",
            lambda r: r["pipeline"]["rate"],
        ),
        ("pipeline, fired → succeeded p99 s", lambda r: r["pipeline"]["p99"]),
    ]
    for label, figure in rows:
        one, three = (figure(r) for r in runs)
        ratio = f"{three / one:.2f}" if one else "-"
        report.add(f"| {label} | {one:,.2f} | {three:,.2f} | {ratio} |")
    chart = points(
        {label: ([1, 3], [figure(r) for r in runs]) for label, figure in rows if "/s" in label},
        "replication.png",
        "Throughput on one broker and on three",
        "brokers",
        "per second",
    )
    report.add("")
    report.add(f"![throughput on one broker and on three]({chart})")
    report.write(args.report)


if __name__ == "__main__":
    main()

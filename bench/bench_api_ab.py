"""The API A/B in one run (decision 0179): one broker and one judge (this code), two API
processes, one at a git revision (`--baseline`, its tree on PYTHONPATH) and one of this code,
measured in interleaved rounds: keyed `POST /jobs` creates and a no-op `GET /healthz` (the
server's floor) at each in-flight level, from one async client. Gives requests/s with
p50/p99, CPU per request of each API, the judge, the broker and the client, the judge's
transactions per create, with the load average. Figures, never pass/fail.

    .venv/bin/python bench/bench_api_ab.py --baseline b22c23f --in-flight 64,256
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench._common import Report, bench_broker, cpu_seconds, stop_process  # noqa: E402
from bench.bench_api import append_report, line, start_api  # noqa: E402
from bench.bench_api_judge_ab import start_judge  # noqa: E402
from bench.bench_api_server import (  # noqa: E402
    create_poster,
    end_load_line,
    judge_transactions,
    noop_get,
)
from tickwheel.adapters.kafka.admin import apply_topology  # noqa: E402
from tickwheel.services.api.keys import create_key  # noqa: E402
from tickwheel.stack.broker import free_port  # noqa: E402


def api_ab(baseline: str, creates: int, gets: int, levels: list[int], rounds: int) -> None:
    from bench.bench_api import async_load
    from bench.bench_api_reads import baseline_tree

    report = Report(f"The API A/B: the API at {baseline} against this code's (decision 0179)")
    with bench_broker() as broker:
        os.environ["KAFKA_BOOTSTRAP_SERVERS"] = broker.bootstrap
        os.environ["TICKWHEEL_TOPIC_PREFIX"] = "bencha."
        apply_topology(bootstrap=broker.bootstrap)
        token, _ = create_key("bench", ["write"], bootstrap=broker.bootstrap, now_ms=1)
        logs = Path(tempfile.mkdtemp(prefix="tickwheel-bench-api-ab-"))
        metrics_port = free_port()
        judge = start_judge(logs / "jobwriter.log", metrics_port, None)
        apis = {}
        for name, pythonpath in ((f"API at {baseline}", str(baseline_tree(baseline))),
                                 ("API of this code", None)):  # fmt: skip
            port = free_port()
            extra = {"TICKWHEEL_JOB_WRITES": "commands"}
            if pythonpath:
                extra["PYTHONPATH"] = pythonpath
            apis[name] = (start_api(port, logs / f"api-{len(apis)}.log", extra), port)
        assert broker.process is not None
        headers = {"Authorization": f"Bearer {token}"}

        for name, (_, port) in apis.items():
            async_load(f"http://127.0.0.1:{port}", headers, create_poster(f"warm-{len(name)}-{port}"),
                       50, in_flight=8)  # fmt: skip
        start_load = ", ".join(f"{v:.1f}" for v in os.getloadavg())
        report.add(f"{rounds} rounds, interleaved API by API: {gets} no-op GETs and {creates} "
                   f"keyed creates per level, from one async client (raw keep-alive HTTP/1.1); "
                   f"both APIs (httptools+uvloop) over one judge (this code) and one broker. "
                   f"Load average at the start: {start_load}.")  # fmt: skip
        report.add("")
        report.add("| API | request | in flight | n | per s | p50 ms | p99 ms | API CPU ms | "
                   "judge | broker | client | judge transactions per create |")  # fmt: skip
        report.add("|---|---|---|---|---|---|---|---|---|---|---|---|")
        for round_ in range(rounds):
            for level in levels:
                for name, (api, port) in apis.items():
                    base = f"http://127.0.0.1:{port}"
                    pids = {"API": api.pid, "judge": judge.pid, "broker": broker.process.pid}
                    for kind, call, n in (("GET /healthz", noop_get, gets),
                                          ("POST /jobs", create_poster(f"c{round_}-{level}-{port}"),
                                           creates)):  # fmt: skip
                        before = {k: cpu_seconds(pid) for k, pid in pids.items()}
                        tx_before = judge_transactions(metrics_port)
                        rate, latencies, client_ms = async_load(base, headers, call, n,
                                                                in_flight=level)  # fmt: skip
                        spent = {k: (cpu_seconds(pid) - before[k]) * 1000 / n
                                 for k, pid in pids.items()}  # fmt: skip
                        tx = (judge_transactions(metrics_port) - tx_before) / n
                        report.add(f"| {name} | {kind} {line(str(level), rate, latencies)} "
                                   f"{spent['API']:.2f} | {spent['judge']:.2f} | "
                                   f"{spent['broker']:.2f} | {client_ms:.2f} | {tx:.3f} |")  # fmt: skip
        report.add(end_load_line())
        for api, _ in apis.values():
            stop_process(api)
        stop_process(judge)
    append_report(report, "api-writes.md")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", required=True, help="the API's code before, a git rev")
    parser.add_argument("--in-flight", default="64,256")
    parser.add_argument("--creates", type=int, default=1000)
    parser.add_argument("--gets", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    levels = [int(level) for level in args.in_flight.split(",")]
    api_ab(args.baseline, args.creates, args.gets, levels, args.rounds)


if __name__ == "__main__":
    main()

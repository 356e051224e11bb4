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
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench._common import Report, bench_broker, cpu_seconds, stop_process, track  # noqa: E402
from bench._revisions import src_of  # noqa: E402
from bench.bench_api import SPEC, append_report, line, start_api  # noqa: E402
from tickwheel.adapters.kafka.admin import apply_topology  # noqa: E402
from tickwheel.services.api.keys import create_key  # noqa: E402
from tickwheel.stack.broker import free_port  # noqa: E402

if TYPE_CHECKING:
    from bench.bench_api import RawConnection


def start_judge(log: Path, metrics_port: int, pythonpath: str | None) -> subprocess.Popen[bytes]:
    """A judge (at `pythonpath`'s code, else this code's) serving /metrics, once it answers."""
    import httpx

    env = {
        **os.environ,
        "TICKWHEEL_LOG_LEVEL": "WARNING",
        "TICKWHEEL_METRICS_PORT": str(metrics_port),
    }
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    command = [sys.executable, "-m", "tickwheel.services.jobwriter", "--instance", "bench"]
    process = track(
        subprocess.Popen(command, env=env, stdout=log.open("ab"), stderr=subprocess.STDOUT)
    )
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        try:
            httpx.get(f"http://127.0.0.1:{metrics_port}/metrics", timeout=1)
            return process
        except httpx.TransportError:
            time.sleep(0.2)
    raise SystemExit(f"the judge did not serve /metrics within 90 s; see {log}")


def judge_transactions(port: int) -> float:
    """The judge's partition transactions so far, from its /metrics (all outcomes)."""
    import httpx

    text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=10).text
    return sum(
        float(row.rsplit(" ", 1)[1])
        for row in text.splitlines()
        if row.startswith("tickwheel_jobwriter_transactions_total{")
    )


def create_poster(tag: str) -> Callable[[RawConnection, int], Any]:
    """A keyed `POST /v1/jobs` of job `<tag>-<i>`, answered 201."""

    async def post(connection: RawConnection, i: int) -> None:
        body = json.dumps({**SPEC, "jobId": f"{tag}-{i}"}).encode()
        headers = {"Idempotency-Key": f"{tag}-{i}"}
        status, text = await connection.request("POST", "/v1/jobs", body, headers)
        assert status == 201, text

    return post


async def noop_get(connection: RawConnection, _i: int) -> None:
    """The server's floor: `GET /healthz`, answered 200."""
    status, text = await connection.request("GET", "/healthz")
    assert status == 200, text


def end_load_line() -> str:
    """The report's closing line: the load average when the rounds ended."""
    load = ", ".join(f"{v:.1f}" for v in os.getloadavg())
    cores = os.cpu_count()
    return (
        f"\nLoad average at the end (1, 5, 15 min): {load}, on {cores} "
        "cores shared with other work."
    )


def api_ab(baseline: str, creates: int, gets: int, levels: list[int], rounds: int) -> None:
    from bench.bench_api import async_load

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
        for name, pythonpath in ((f"API at {baseline}", str(src_of(baseline))),
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

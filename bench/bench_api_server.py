"""The API's HTTP server A/B in one run (decision 0167): two API processes over the same
broker and judge, one on uvicorn's pure-Python pair (h11 and the stdlib asyncio loop), one on
httptools and uvloop, measured in interleaved rounds: a no-op `GET /healthz` and keyed
`POST /jobs` creates at each in-flight level, from one async client. Gives requests/s with
p50/p99 and the CPU per request of each API, the judge, the broker and the client, with the
load average. Figures, never pass/fail.

    .venv/bin/python bench/bench_api_server.py --in-flight 64,256 --creates 1000 --rounds 2
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench._common import (  # noqa: E402
    Report,
    bench_broker,
    cpu_seconds,
    stop_process,
)
from bench.bench_api import SPEC, append_report, line, start_api  # noqa: E402
from bench.bench_api_creates import rdkafka_cpu_seconds  # noqa: E402
from bench.bench_api_writes import start_judge  # noqa: E402
from tickwheel.adapters.kafka.admin import apply_topology  # noqa: E402
from tickwheel.services.api.keys import create_key  # noqa: E402
from tickwheel.stack.broker import free_port  # noqa: E402

if TYPE_CHECKING:
    from bench.bench_api import RawConnection


def judge_transactions(port: int) -> float:
    """The judge's partition transactions so far, from its /metrics (all outcomes)."""
    import httpx

    text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=10).text
    return sum(float(row.rsplit(" ", 1)[1]) for row in text.splitlines()
               if row.startswith("tickwheel_jobwriter_transactions_total{"))  # fmt: skip


def create_poster(tag: str) -> Callable[[RawConnection, int], Any]:
    """The A/B benches' create: a keyed `POST /v1/jobs` of job `<tag>-<i>`, answered 201."""

    async def post(connection: RawConnection, i: int) -> None:
        body = json.dumps({**SPEC, "jobId": f"{tag}-{i}"}).encode()
        status, text = await connection.request(
            "POST", "/v1/jobs", body, {"Idempotency-Key": f"{tag}-{i}"})  # fmt: skip
        assert status == 201, text

    return post


async def noop_get(connection: RawConnection, _i: int) -> None:
    """The A/B benches' no-op: `GET /healthz`, answered 200."""
    status, text = await connection.request("GET", "/healthz")
    assert status == 200, text


def end_load_line() -> str:
    """The report's closing line: the load average when the rounds ended."""
    load = ", ".join(f"{v:.1f}" for v in os.getloadavg())
    return (f"\nLoad average at the end (1, 5, 15 min): {load}, on {os.cpu_count()} "
            "cores shared with other work.")  # fmt: skip


SERVERS = {
    "h11+asyncio": {"TICKWHEEL_API_HTTP": "h11", "TICKWHEEL_API_LOOP": "asyncio"},
    "httptools+uvloop": {"TICKWHEEL_API_HTTP": "httptools", "TICKWHEEL_API_LOOP": "uvloop"},
}


def server_ab(creates: int, gets: int, levels: list[int], rounds: int) -> None:
    from bench.bench_api import async_load

    report = Report("The API's HTTP server A/B: h11+asyncio against httptools+uvloop (0167)")
    with bench_broker() as broker:
        os.environ["KAFKA_BOOTSTRAP_SERVERS"] = broker.bootstrap
        os.environ["TICKWHEEL_TOPIC_PREFIX"] = "benchs."
        apply_topology(bootstrap=broker.bootstrap)
        token, _ = create_key("bench", ["write"], bootstrap=broker.bootstrap, now_ms=1)
        logs = Path(tempfile.mkdtemp(prefix="tickwheel-bench-server-"))
        metrics_port = free_port()
        os.environ["TICKWHEEL_METRICS_PORT"] = str(metrics_port)
        judge = start_judge(logs / "jobwriter.log")
        del os.environ["TICKWHEEL_METRICS_PORT"]  # the APIs serve none
        apis = {}
        for name, env in SERVERS.items():
            port = free_port()
            extra = {"TICKWHEEL_JOB_WRITES": "commands", **env}
            apis[name] = (start_api(port, logs / f"{name}.log", extra), port)
        assert broker.process is not None
        headers = {"Authorization": f"Bearer {token}"}

        for name, (_, port) in apis.items():
            async_load(
                f"http://127.0.0.1:{port}", headers, create_poster(f"warm-{name}"), 50, in_flight=8
            )
        start_load = ", ".join(f"{v:.1f}" for v in os.getloadavg())
        report.add(f"This code: {rounds} rounds, interleaved server by server: {gets} no-op "
                   f"GETs and {creates} keyed creates per level, from one async client (raw "
                   f"keep-alive HTTP/1.1); both APIs over one judge and one broker. Load "
                   f"average at the start: {start_load}.")  # fmt: skip
        report.add("")
        report.add("| server | request | in flight | n | per s | p50 ms | p99 ms | API CPU ms | "
                   "of it librdkafka | judge | broker | client | judge transactions per create |")  # fmt: skip
        report.add("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
        for round_ in range(rounds):
            for level in levels:
                for name, (api, port) in apis.items():
                    base = f"http://127.0.0.1:{port}"
                    pids = {"API": api.pid, "judge": judge.pid, "broker": broker.process.pid}
                    for kind, call, n in (("GET /healthz", noop_get, gets),
                                          ("POST /jobs", create_poster(f"c{round_}-{level}-{name}"), creates)):  # fmt: skip
                        before = {k: cpu_seconds(pid) for k, pid in pids.items()}
                        kafka_before = rdkafka_cpu_seconds(api.pid)
                        tx_before = judge_transactions(metrics_port)
                        rate, latencies, client_ms = async_load(
                            base, headers, call, n, in_flight=level
                        )
                        spent = {
                            k: (cpu_seconds(pid) - before[k]) * 1000 / n for k, pid in pids.items()
                        }
                        kafka_ms = (rdkafka_cpu_seconds(api.pid) - kafka_before) * 1000 / n
                        tx = (judge_transactions(metrics_port) - tx_before) / n
                        report.add(f"| {name} | {kind} {line(str(level), rate, latencies)} "
                                   f"{spent['API']:.2f} | {kafka_ms:.2f} | {spent['judge']:.2f} | "
                                   f"{spent['broker']:.2f} | {client_ms:.2f} | {tx:.3f} |")  # fmt: skip
        report.add(end_load_line())
        for api, _ in apis.values():
            stop_process(api)
        stop_process(judge)
    append_report(report, "api-writes.md")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--in-flight", default="64,256")
    parser.add_argument("--creates", type=int, default=1000)
    parser.add_argument("--gets", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    levels = [int(level) for level in args.in_flight.split(",")]
    server_ab(args.creates, args.gets, levels, args.rounds)


if __name__ == "__main__":
    main()

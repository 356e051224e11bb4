"""Benchmark of the API's job reads (issue 13's aim: p99 under 50 ms), decision 0139.

`compare_reads`: two APIs on one broker, one with the read window (the default) and one asking
an end offset per read (`TICKWHEEL_API_READ_WINDOW_MS=0`, decision 0070's rule as it was),
read in interleaved rounds from the same client threads; each round also times a no-op route
(`/healthz`) on the same server, the raw figure the ratio is taken to; the API processes' CPU
per read from /proc. `profile_reads`: the read path's stages timed in-process (the app through
the ASGI test client, every thread), to say where a read's time goes. `framework_costs`:
FastAPI's own layers' CPU per request (`--framework N`).

Prints, and appends to bench/reports/api-reads.md. Figures, never pass/fail.
Run: `.venv/bin/python bench/bench_api_reads.py [--reads N] [--rounds R] [--concurrency C]
[--profile N]` (or `bench/bench_api.py --compare-reads N`).
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

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402

from bench._common import Report, bench_broker, cpu_seconds, percentile, stop_process  # noqa: E402
from bench._revisions import src_of  # noqa: E402
from bench.bench_api import (  # noqa: E402
    SPEC,
    WARM_UP,
    RawConnection,
    _timed_stages,
    append_report,
    async_load,
    in_process_api_env,
    print_stages,
    start_api,
    timed,
)
from tickwheel.adapters.kafka.admin import apply_topology  # noqa: E402
from tickwheel.sdk.jobs import JobsClient  # noqa: E402
from tickwheel.services.api.keys import create_key  # noqa: E402
from tickwheel.stack.broker import free_port  # noqa: E402

READ_STAGES = (
    ("tickwheel.services.api.freshness", "FreshReads", "read"),
    ("tickwheel.services.api.freshness", "RecentEnds", "end"),
    ("tickwheel.services.api.routes_jobs", "_module", "job_view"),
    ("tickwheel.services.api.keys", "KeyRing", "authenticate"),
)


def compare_reads(reads: int, concurrency: int, rounds: int) -> None:
    """Reads A/B on one broker: an API with the read window (decision 0139, the default) and
    one with `TICKWHEEL_API_READ_WINDOW_MS=0` (an end asked per read, decision 0070's rule as
    before), read in interleaved rounds; each round also times a no-op route (`/healthz`) on
    the same server from the same client threads: the raw figure the ratio is taken to."""
    report = Report("HTTP API: job reads, read window A/B (decision 0139)")
    with bench_broker() as broker:
        os.environ["KAFKA_BOOTSTRAP_SERVERS"] = broker.bootstrap
        os.environ["TICKWHEEL_TOPIC_PREFIX"] = "bench."
        apply_topology(bootstrap=broker.bootstrap)
        # The tenant `default`: the jobs below are written by the SDK, with no tenant.
        token, _ = create_key("default", ["read"], bootstrap=broker.bootstrap, now_ms=1)
        directory = Path(tempfile.mkdtemp(prefix="tickwheel-bench-api-"))
        servers = {}
        for name, window in (("window 1 s", "1000"), ("end per read", "0")):
            port = free_port()
            api = start_api(port, directory / f"api-{window}.log",
                            {"TICKWHEEL_API_READ_WINDOW_MS": window})  # fmt: skip
            servers[name] = (port, api)
        jobs = JobsClient(broker.bootstrap)
        for i in range(100):
            jobs.create({**SPEC, "jobId": f"read-{i}"})
        start_load = ", ".join(f"{v:.1f}" for v in os.getloadavg())
        figures: dict[str, dict[str, list[float]]] = {
            name: {"reads": [], "noop": [], "rate": [], "noop_rate": [], "cpu": []}
            for name in servers
        }
        headers = {"Authorization": f"Bearer {token}"}
        clients = {name: httpx.Client(base_url=f"http://127.0.0.1:{port}", headers=headers,
                                      timeout=60, limits=httpx.Limits(max_connections=64))
                   for name, (port, _) in servers.items()}  # fmt: skip
        try:
            for client in clients.values():  # warm: connections, the catalogue caught up
                for i in range(WARM_UP):
                    assert client.get(f"/v1/jobs/read-{i}").status_code == 200
            per_round = max(1, reads // rounds)
            for _ in range(rounds):
                for name, client in clients.items():
                    pid = servers[name][1].pid

                    def get(i: int, c: httpx.Client = client) -> Callable[[], Any]:
                        def call() -> None:
                            answer = c.get(f"/v1/jobs/read-{i % 100}")
                            assert answer.status_code == 200, answer.text

                        return call

                    def noop(c: httpx.Client = client) -> None:
                        assert c.get("/healthz").status_code == 200

                    cpu = cpu_seconds(pid)
                    rate, latencies = timed([get(i) for i in range(per_round)], concurrency)
                    figures[name]["cpu"].append((cpu_seconds(pid) - cpu) / per_round * 1000)
                    figures[name]["reads"] += latencies
                    figures[name]["rate"].append(rate)
                    rate, latencies = timed([noop] * per_round, concurrency)
                    figures[name]["noop"] += latencies
                    figures[name]["noop_rate"].append(rate)
        finally:
            for client in clients.values():
                client.close()
        report.add(f"{per_round * rounds} reads of 100 jobs per API in {rounds} interleaved "
                   f"rounds, {concurrency} client threads; each API in one process (uvicorn, "
                   f"one worker), one broker. Load average at the start (1, 5, 15 min): "
                   f"{start_load}.")  # fmt: skip
        report.add("")
        report.add("| API | route | n | per second | p50 ms | p99 ms | API CPU ms per read |")
        report.add("|---|---|---|---|---|---|---|")
        for name, got in figures.items():
            cpu = sum(got["cpu"]) / len(got["cpu"])
            for route, key, rates in (("`GET /jobs/{id}`", "reads", "rate"),
                                      ("`GET /healthz` (no-op)", "noop", "noop_rate")):  # fmt: skip
                lat = got[key]
                report.add(f"| {name} | {route} | {len(lat)} | "
                           f"{sum(got[rates]) / len(got[rates]):,.0f} | "
                           f"{percentile(lat, 0.5):.1f} | {percentile(lat, 0.99):.1f} | "
                           f"{f'{cpu:.2f}' if key == 'reads' else ''} |")  # fmt: skip
        for name, got in figures.items():
            ratio = percentile(got["reads"], 0.99) / percentile(got["noop"], 0.99)
            report.add(f"\n{name}: read p99 / no-op p99 on the same server = {ratio:.2f}.")
        load = ", ".join(f"{v:.1f}" for v in os.getloadavg())
        report.add(f"\nLoad average at the end (1, 5, 15 min): {load}, on {os.cpu_count()} "
                   "cores shared with other work.")  # fmt: skip
        for _, api in servers.values():
            stop_process(api)
    append_report(report, "api-reads.md")


def open_loop_reads(reads: int, rate: float, in_flight: int, rounds: int, baseline: str) -> None:
    """Job reads at saturation (a closed loop of `in_flight` outstanding requests from one
    async client) and at an offered open-loop `rate` below it, each beside the no-op route
    (`/healthz`) on the same server, for this code and for `baseline` (a git revision) in
    interleaved rounds: p50/p99, reads/s, and each API's CPU per request (decision 0153)."""
    report = Report("HTTP API: job reads at saturation and at an offered rate (decision 0153)")
    with bench_broker() as broker:
        os.environ["KAFKA_BOOTSTRAP_SERVERS"] = broker.bootstrap
        os.environ["TICKWHEEL_TOPIC_PREFIX"] = "bench."
        apply_topology(bootstrap=broker.bootstrap)
        token, _ = create_key("default", ["read"], bootstrap=broker.bootstrap, now_ms=1)
        directory = Path(tempfile.mkdtemp(prefix="tickwheel-bench-api-"))
        old_src = src_of(baseline)
        servers = {}
        for name, extra in ((f"before ({baseline})", {"PYTHONPATH": str(old_src)}),
                            ("this code", {})):  # fmt: skip
            port = free_port()
            servers[name] = (port, start_api(port, directory / f"api-{port}.log", extra))
        jobs = JobsClient(broker.bootstrap)
        for i in range(100):
            jobs.create({**SPEC, "jobId": f"read-{i}"})
        start_load = ", ".join(f"{v:.1f}" for v in os.getloadavg())
        headers = {"Authorization": f"Bearer {token}"}

        async def get(connection: RawConnection, i: int) -> None:
            status, body = await connection.request("GET", f"/v1/jobs/read-{i % 100}")
            assert status == 200, body

        async def noop(connection: RawConnection, i: int) -> None:
            assert (await connection.request("GET", "/healthz"))[0] == 200

        loads = (("saturation", None), (f"open loop {rate:g}/s", rate))
        figures: dict[tuple[str, str, str], dict[str, list[float]]] = {}
        per_round = max(1, reads // rounds)
        for port, _ in servers.values():  # warm: connections, the catalogue caught up
            async_load(f"http://127.0.0.1:{port}", headers, get, WARM_UP * 5, in_flight=4)
        for _ in range(rounds):
            for name, (port, api) in servers.items():
                for load_name, offered in loads:
                    for route, call in (
                        ("`GET /jobs/{id}`", get),
                        ("`GET /healthz` (no-op)", noop),
                    ):
                        got = figures.setdefault((name, load_name, route),
                                                 {"lat": [], "rate": [], "cpu": [], "client": []})  # fmt: skip
                        cpu = cpu_seconds(api.pid)
                        per_s, latencies, client_ms = async_load(
                            f"http://127.0.0.1:{port}", headers, call, per_round,
                            in_flight=in_flight, rate=offered)  # fmt: skip
                        got["cpu"].append((cpu_seconds(api.pid) - cpu) / per_round * 1000)
                        got["lat"] += latencies
                        got["rate"].append(per_s)
                        got["client"].append(client_ms)
        report.add(f"{per_round * rounds} requests per API, load and route in {rounds} "
                   f"interleaved rounds from one async client (raw keep-alive HTTP/1.1 on asyncio streams, one event loop, at most "
                   f"{in_flight} in flight); open loop: request i due at i/rate, its latency "
                   f"counted from then. Each API in one process (uvicorn, one worker), one "
                   f"broker. Load average at the start (1, 5, 15 min): {start_load}.")  # fmt: skip
        report.add("")
        report.add("| API | load | route | n | per second | p50 ms | p99 ms | API CPU ms a "
                   "request | client CPU ms a request |")  # fmt: skip
        report.add("|---|---|---|---|---|---|---|---|---|")
        for (name, load_name, route), got in figures.items():
            mean = {k: sum(v) / len(v) for k, v in got.items() if k != "lat"}
            report.add(f"| {name} | {load_name} | {route} | {len(got['lat'])} | "
                       f"{mean['rate']:,.0f} | {percentile(got['lat'], 0.5):.1f} | "
                       f"{percentile(got['lat'], 0.99):.1f} | {mean['cpu']:.2f} | "
                       f"{mean['client']:.2f} |")  # fmt: skip
        load = ", ".join(f"{v:.1f}" for v in os.getloadavg())
        report.add(f"\nLoad average at the end (1, 5, 15 min): {load}, on {os.cpu_count()} "
                   "cores shared with other work.")  # fmt: skip
        for _, api in servers.values():
            stop_process(api)
    append_report(report, "api-reads.md")


def profile_reads(count: int, concurrency: int) -> None:
    """Where the wall time of `count` reads goes in-process, stage by stage (each stage's
    wall time on whichever thread runs it), beside the whole request and a no-op route."""
    from fastapi.testclient import TestClient

    from tickwheel.services.api.app import create_app

    with bench_broker() as broker:
        in_process_api_env(broker.bootstrap, "profile.")
        apply_topology(bootstrap=broker.bootstrap)
        token, _ = create_key("default", ["read"], bootstrap=broker.bootstrap, now_ms=1)
        jobs = JobsClient(broker.bootstrap)
        for i in range(100):
            jobs.create({**SPEC, "jobId": f"read-{i}"})
        client = TestClient(create_app(), headers={"Authorization": f"Bearer {token}"})
        deadline = time.monotonic() + 60
        while client.get("/v1/jobs/read-0").status_code != 200 and time.monotonic() < deadline:
            time.sleep(0.2)
        spent = _timed_stages(READ_STAGES)

        def get(i: int) -> Callable[[], Any]:
            return lambda: client.get(f"/v1/jobs/read-{i % 100}")

        for path, calls in (("GET /jobs/{id}", [get(i) for i in range(count)]),
                            ("GET /healthz", [lambda: client.get("/healthz")] * count)):  # fmt: skip
            cpu = time.process_time()
            rate, latencies = timed(calls, concurrency)
            print(f"{path}: {rate:,.0f}/s, p50 {percentile(latencies, 0.5):.2f} ms, p99 "
                  f"{percentile(latencies, 0.99):.2f} ms, CPU {(time.process_time() - cpu) / count * 1000:.2f} "
                  f"ms a request (test client included; load {os.getloadavg()[0]:.1f})")  # fmt: skip
        print_stages(spent, 3)


def framework_costs(count: int) -> None:
    """CPU per request of FastAPI's own layers, on a one-route app called as ASGI in this
    process (no HTTP, no broker): each `app.middleware("http")` layer, a sync dependency
    (a thread-pool hop), a sync route (another): what every API request pays before a route
    runs, beside what the route does."""
    import asyncio

    from fastapi import Depends, FastAPI, Request
    from fastapi.responses import JSONResponse

    def make(layers: int, sync_dependency: bool, sync_route: bool) -> FastAPI:
        app = FastAPI()

        def given_sync(request: Request) -> int:
            return 1

        async def given_async(request: Request) -> int:
            return 1

        given = Depends(given_sync if sync_dependency else given_async)
        if sync_route:

            @app.get("/x")
            def sync_x(d: int = given) -> JSONResponse:
                return JSONResponse({"a": d})
        else:

            @app.get("/x")
            async def async_x(d: int = given) -> JSONResponse:
                return JSONResponse({"a": d})

        for _ in range(layers):

            async def passing(request: Request, call_next: Any) -> Any:
                return await call_next(request)

            app.middleware("http")(passing)
        return app

    async def cpu_per_request(app: FastAPI) -> float:
        scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
                 "method": "GET", "path": "/x", "raw_path": b"/x", "query_string": b"",
                 "headers": [], "scheme": "http", "server": ("127.0.0.1", 80),
                 "client": ("127.0.0.1", 1), "root_path": ""}  # fmt: skip

        async def receive() -> dict[str, Any]:
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(message: Any) -> None:
            pass

        for _ in range(50):
            await app(dict(scope), receive, send)
        started = time.process_time()
        for _ in range(count):
            await app(dict(scope), receive, send)
        return (time.process_time() - started) / count * 1e6

    print(f"load {os.getloadavg()[0]:.1f}")
    for layers, sync_dependency, sync_route in ((0, False, False), (1, False, False),
                                                (2, False, False), (0, True, False),
                                                (0, True, True), (2, True, True)):  # fmt: skip
        cpu = asyncio.run(cpu_per_request(make(layers, sync_dependency, sync_route)))
        print(f"middleware layers {layers}, sync dependency {sync_dependency}, sync route "
              f"{sync_route}: {cpu:,.0f} µs CPU a request")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reads", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--profile", type=int, default=0)
    parser.add_argument(
        "--framework",
        type=int,
        default=0,
        metavar="N",
        help="only FastAPI's own layers' CPU per request, N requests each",
    )
    parser.add_argument("--open-loop", type=float, default=0, metavar="RATE",
                        help="saturation and this offered rate, A/B against --baseline")  # fmt: skip
    parser.add_argument("--in-flight", type=int, default=32)
    parser.add_argument("--baseline", default="HEAD", help="the git revision to compare with")
    args = parser.parse_args()
    if args.open_loop:
        open_loop_reads(args.reads, args.open_loop, args.in_flight, args.rounds, args.baseline)
    elif args.framework:
        framework_costs(args.framework)
    elif args.profile:
        profile_reads(args.profile, args.concurrency)
    else:
        compare_reads(args.reads, args.concurrency, args.rounds)


if __name__ == "__main__":
    main()

"""Benchmark of the HTTP API: `POST /jobs` and `GET /jobs/{id}` per second with p50/p99
latency, beside the raw SDK (`JobsClient.create`/`get`) measured in the same run (issue 13's
aim: 1,000 creates/s and reads under 50 ms at p99).

A throwaway broker; the API as a user runs it (`python -m tickwheel.services.api`, keys on,
rate limits raised out of the way); C client threads over keep-alive connections. The SDK
figure is the same operations from C threads in this process, with no HTTP in between: the
difference is what the API costs. Every create is keyed (`Idempotency-Key`), as a careful
client sends it, so the idempotency record's write is in the figure.

Prints, and writes to bench/reports/api.md. Figures, never pass/fail.
Run: `.venv/bin/python bench/bench_api.py [--creates N] [--reads M] [--concurrency C]`.
`--compare-reads N [--rounds R]`: the reads A/B of bench/bench_api_reads.py.
`--profile N` instead profiles N keyed creates in-process (cProfile through the ASGI test
client, on C threads) and prints where the time goes.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402

from bench._common import Report, bench_broker, percentile, stop_process, track  # noqa: E402
from tickwheel.adapters.kafka.admin import apply_topology  # noqa: E402
from tickwheel.sdk.jobs import JobsClient  # noqa: E402
from tickwheel.services.api.keys import create_key  # noqa: E402
from tickwheel.stack.broker import free_port  # noqa: E402

SPEC = {"type": "noop", "cron": "0 2 * * *", "timezone": "Europe/London"}
WARM_UP = 20
# The API's rate limits raised out of the way: the bench measures the API, not its limiter.
UNLIMITED = {f"TICKWHEEL_API_{name}": "1000000"
             for name in ("READS_PER_S", "READ_BURST", "WRITES_PER_S", "WRITE_BURST")}  # fmt: skip


def timed(calls: list[Callable[[], Any]], concurrency: int) -> tuple[float, list[float]]:
    """(operations per second, latencies in ms) of running `calls` on `concurrency` threads."""

    def one(call: Callable[[], Any]) -> float:
        started = time.perf_counter()
        call()
        return (time.perf_counter() - started) * 1000

    started = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        latencies = list(pool.map(one, calls))
    return len(calls) / (time.perf_counter() - started), latencies


class RawConnection:
    """One keep-alive HTTP/1.1 connection on asyncio streams, the cheapest client this
    machine has (httpx's async client spends ~4 ms of CPU a request here, more than the API it
    measures): a request line, the headers, a body; the answer's status and body
    (Content-Length framed, as uvicorn answers these routes)."""

    def __init__(self, host: str, port: int, headers: dict[str, str]) -> None:
        self.host, self.port = host, port
        self.fixed = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        self.reader: Any = None
        self.writer: Any = None

    async def request(
        self, method: str, path: str, body: bytes = b"", headers: dict[str, str] | None = None
    ) -> tuple[int, bytes]:
        import asyncio

        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        extra = "".join(f"{k}: {v}\r\n" for k, v in (headers or {}).items())
        kind = "content-type: application/json\r\n" if body else ""
        head = (f"{method} {path} HTTP/1.1\r\nhost: {self.host}\r\n{self.fixed}{extra}{kind}"
                f"content-length: {len(body)}\r\n\r\n")  # fmt: skip
        self.writer.write(head.encode() + body)
        status_line = await self.reader.readline()
        length = 0
        while (line_ := await self.reader.readline()) not in (b"\r\n", b""):
            name, _, value = line_.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        return int(status_line.split()[1]), await self.reader.readexactly(length)

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()


def async_load(
    base_url: str,
    headers: dict[str, str],
    request: Callable[[RawConnection, int], Any],
    count: int,
    *,
    in_flight: int = 64,
    rate: float | None = None,
) -> tuple[float, list[float], float]:
    """(requests per second, latencies in ms, this process's CPU ms per request) of `count`
    calls of `request(connection, i)` on one event loop over `in_flight` keep-alive
    connections. Closed loop (`rate` None): every connection always has a call outstanding,
    the saturation figure. Open loop: call i is due at i / `rate` s and its latency counts
    from when it was due, so a server that falls behind shows it in the percentiles (no
    coordinated omission); at most `in_flight` outstanding."""
    import asyncio
    from urllib.parse import urlsplit

    where = urlsplit(base_url)
    host, port = where.hostname or "127.0.0.1", where.port or 80

    async def run() -> tuple[float, list[float]]:
        idle: asyncio.Queue[RawConnection] = asyncio.Queue()
        for _ in range(in_flight):
            idle.put_nowait(RawConnection(host, port, headers))
        latencies = [0.0] * count
        started = time.perf_counter()

        async def one(i: int) -> None:
            due = started + (i / rate if rate else 0.0)
            if rate:
                await asyncio.sleep(max(0.0, due - time.perf_counter()))
            connection = await idle.get()
            begun = due if rate else time.perf_counter()
            try:
                await request(connection, i)
            finally:
                idle.put_nowait(connection)
            latencies[i] = (time.perf_counter() - begun) * 1000

        await asyncio.gather(*(one(i) for i in range(count)))
        elapsed = time.perf_counter() - started
        while not idle.empty():
            idle.get_nowait().close()
        return count / elapsed, latencies

    cpu = time.process_time()
    per_s, latencies = asyncio.run(run())
    return per_s, latencies, (time.process_time() - cpu) * 1000 / count


def line(name: str, rate: float, latencies: list[float]) -> str:
    return (f"| {name} | {len(latencies)} | {rate:,.0f} | {percentile(latencies, 0.5):.1f} | "
            f"{percentile(latencies, 0.99):.1f} |")  # fmt: skip


def wait_healthy(
    process: subprocess.Popen[bytes], port: int, log: Path, seconds: float = 60, what: str = "API"
) -> subprocess.Popen[bytes]:
    """`process`, once the API it runs answers `/healthz` on `port`; a SystemExit naming
    `log` if it does not within `seconds`."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                return process
        except httpx.TransportError:
            time.sleep(0.2)
    raise SystemExit(f"the {what} did not answer within {seconds:g} s; see {log}")


def start_api(port: int, log: Path, extra: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    """The API on `port`, once it answers."""
    env = {**os.environ, **(extra or {}), "TICKWHEEL_API_PORT": str(port),
           "TICKWHEEL_LOG_LEVEL": "WARNING", **UNLIMITED}  # fmt: skip
    command = [sys.executable, "-m", "tickwheel.services.api"]
    process = track(subprocess.Popen(command, env=env,
                                     stdout=log.open("wb"), stderr=subprocess.STDOUT))  # fmt: skip
    return wait_healthy(process, port, log)


def in_process_api_env(bootstrap: str, prefix: str) -> None:
    """This process's environment for an API app made here (`create_app()` under the ASGI
    test client): the broker, the topic prefix, the rate limits out of the way."""
    os.environ["KAFKA_BOOTSTRAP_SERVERS"] = bootstrap
    os.environ["TICKWHEEL_TOPIC_PREFIX"] = prefix
    os.environ.update(UNLIMITED)


STAGES = (
    ("tickwheel.sdk.catalogue", "DefinitionCatalogue", "get"),
    ("tickwheel.adapters.kafka.follower", "SharedEnds", "end"),
    ("tickwheel.services.api.writes", "AckedJobsClient", "_publish"),
    ("tickwheel.sdk.jobs", "JobsClient", "create"),
    ("tickwheel.services.api.topic_view", "TopicView", "publish"),
    ("tickwheel.services.api.door", "AuditTrail", "record"),
    ("tickwheel.adapters.kafka.producer", "EventProducer", "flush"),
    ("tickwheel.adapters.kafka.producer", "EventProducer", "deliver"),
    ("tickwheel.sdk.jobs", "_module", "validate_job"),
)


def _timed_stages(stages: tuple[tuple[str, str, str], ...] = STAGES) -> dict[str, list[float]]:
    """Wrap the create path's stages to add up the wall time each takes (on any thread:
    cProfile sees only the thread it runs on, and the app runs on the ASGI client's)."""
    import importlib

    spent: dict[str, list[float]] = {}
    for module_name, owner, name in stages:
        module = importlib.import_module(module_name)
        target = module if owner == "_module" else getattr(module, owner)
        original = getattr(target, name)
        label = f"{owner}.{name}".removeprefix("_module.")
        spent[label] = []

        def wrapper(*a: Any, _f: Any = original, _l: str = label, **k: Any) -> Any:
            started = time.perf_counter()
            try:
                return _f(*a, **k)
            finally:
                spent[_l].append((time.perf_counter() - started) * 1000)

        setattr(target, name, wrapper)
    return spent


def print_stages(spent: dict[str, list[float]], digits: int = 2) -> None:
    """The table of what `_timed_stages` added up: calls, mean and p99 ms of each stage."""
    print(f"{'stage':<32} {'calls':>6} {'mean ms':>8} {'p99 ms':>8}")
    for label, values in spent.items():
        if values:
            print(f"{label:<32} {len(values):>6} {sum(values) / len(values):>8.{digits}f} "
                  f"{percentile(values, 0.99):>8.{digits}f}")  # fmt: skip


def profile_creates(count: int, concurrency: int) -> None:
    """Where the wall time of `count` keyed creates goes (the app in this process, through
    the ASGI client), stage by stage, and cProfile of the same run at concurrency 1."""
    import cProfile
    import pstats

    from fastapi.testclient import TestClient

    from tickwheel.services.api.app import create_app

    with bench_broker() as broker:
        in_process_api_env(broker.bootstrap, "profile.")
        apply_topology(bootstrap=broker.bootstrap)
        token, _ = create_key("bench", ["write"], bootstrap=broker.bootstrap, now_ms=1)
        spent = _timed_stages()
        client = TestClient(create_app(), headers={"Authorization": f"Bearer {token}"})
        deadline = time.monotonic() + 60
        while client.get("/v1/jobs/none").status_code == 401 and time.monotonic() < deadline:
            time.sleep(0.2)

        def post(i: int) -> float:
            started = time.perf_counter()
            answer = client.post("/v1/jobs", json={**SPEC, "jobId": f"p-{i}"},
                                 headers={"Idempotency-Key": f"p-{i}"})  # fmt: skip
            assert answer.status_code == 201, answer.text
            return (time.perf_counter() - started) * 1000

        post(-1)  # warm: producers connected, catalogue caught up
        for values in spent.values():
            values.clear()
        started = time.perf_counter()
        with ThreadPoolExecutor(concurrency) as pool:
            latencies = list(pool.map(post, range(count)))
        elapsed = time.perf_counter() - started
        print(f"{count} creates on {concurrency} threads in {elapsed:.2f} s: "
              f"{count / elapsed:,.0f}/s, p50 {percentile(latencies, 0.5):.1f} ms "
              f"(load {os.getloadavg()[0]:.1f})")  # fmt: skip
        print_stages(spent)
        profiler = cProfile.Profile()
        profiler.enable()
        # One thread: the app runs on the client's portal thread, which cProfile does not see;
        # what it sees here is the request's cost on the caller's side only.
        for i in range(count, count + min(count, 50)):
            post(i)
        profiler.disable()
        pstats.Stats(profiler).sort_stats("tottime").print_stats(25)


def append_report(report: Report, name: str = "api.md") -> None:
    """Appended: the earlier runs stay beside this one, each with its machine's load."""
    path = ROOT / "bench" / "reports" / name
    earlier = path.read_text() if path.exists() else ""
    written = report.write(name)
    if earlier:
        written.write_text(earlier.rstrip("\n") + "\n\n" + written.read_text())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--profile", type=int, default=0)
    parser.add_argument("--creates", type=int, default=300)
    parser.add_argument("--reads", type=int, default=600)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument(
        "--compare-reads",
        type=int,
        default=0,
        metavar="N",
        help="only the reads A/B (read window against an end per read)",
    )
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args()
    if args.profile:
        profile_creates(args.profile, args.concurrency)
        return
    if args.compare_reads:
        from bench.bench_api_reads import compare_reads

        compare_reads(args.compare_reads, args.concurrency, args.rounds)
        return
    report = Report("HTTP API: creates and reads per second")
    with bench_broker() as broker:
        os.environ["KAFKA_BOOTSTRAP_SERVERS"] = broker.bootstrap
        os.environ["TICKWHEEL_TOPIC_PREFIX"] = "bench."
        apply_topology(bootstrap=broker.bootstrap)
        token, _ = create_key("bench", ["write"], bootstrap=broker.bootstrap, now_ms=1)
        port = free_port()
        log = Path(tempfile.mkdtemp(prefix="tickwheel-bench-api-")) / "api.log"
        api = start_api(port, log)
        start_load = ", ".join(f"{v:.1f}" for v in os.getloadavg())
        report.add(f"{args.creates} creates, {args.reads} reads, {args.concurrency} client "
                   "threads each; the API in one process (uvicorn, one worker). Load average "
                   f"at the start (1, 5, 15 min): {start_load}.")  # fmt: skip
        report.add("")
        report.add("| operation | n | per second | p50 ms | p99 ms |")
        report.add("|---|---|---|---|---|")
        sdk = JobsClient(broker.bootstrap)
        headers = {"Authorization": f"Bearer {token}"}
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", headers=headers,
                          timeout=60, limits=httpx.Limits(max_connections=64)) as client:  # fmt: skip

            def post(i: int) -> Callable[[], Any]:
                def call() -> None:
                    body = {**SPEC, "jobId": f"api-{i}"}
                    answer = client.post("/v1/jobs", json=body,
                                         headers={"Idempotency-Key": f"bench-{i}"})  # fmt: skip
                    assert answer.status_code == 201, answer.text

                return call

            def get(i: int) -> Callable[[], Any]:
                def call() -> None:
                    answer = client.get(f"/v1/jobs/api-{i % args.creates}")
                    assert answer.status_code == 200, answer.text

                return call

            # Warm up (not counted): producers, views and connections made before timing.
            for i in range(WARM_UP):
                answer = client.post("/v1/jobs", json={**SPEC, "jobId": f"warm-{i}"})
                assert answer.status_code == 201 and client.get(f"/v1/jobs/warm-{i}").is_success
            rate, latencies = timed([post(i) for i in range(args.creates)], args.concurrency)
            report.add(line("API `POST /jobs`", rate, latencies))
            rate, latencies = timed([get(i) for i in range(args.reads)], args.concurrency)
            report.add(line("API `GET /jobs/{id}`", rate, latencies))

        def sdk_create(i: int) -> Callable[[], Any]:
            return lambda: sdk.create({**SPEC, "jobId": f"sdk-{i}"})

        def sdk_get(i: int) -> Callable[[], Any]:
            return lambda: sdk.get(f"sdk-{i % args.creates}")

        rate, latencies = timed([sdk_create(i) for i in range(args.creates)], args.concurrency)
        report.add(line("SDK `JobsClient.create`", rate, latencies))
        rate, latencies = timed([sdk_get(i) for i in range(args.reads)], args.concurrency)
        report.add(line("SDK `JobsClient.get`", rate, latencies))
        report.add("")
        report.add(
            "The API reads definitions through one catalogue (`tickwheel.sdk.catalogue`: a "
            "watermark request per read, shared by the reads waiting (decision 0100), then "
            "memory); `JobsClient` reads the job's partition to its end per call (and a "
            "create checks the id is free that way). Every API create also writes its "
            "idempotency record and an audit event; each write waits for its own "
            "acknowledgement (`EventProducer.deliver`), not a flush."
        )
        load = ", ".join(f"{v:.1f}" for v in os.getloadavg())
        report.add(f"Load average at the end (1, 5, 15 min): {load}, on {os.cpu_count()} cores "
                   "shared with other work: figures from a busy machine.")  # fmt: skip
        stop_process(api)
    append_report(report)


if __name__ == "__main__":
    main()

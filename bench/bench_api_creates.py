"""Creates through the single writer with many in flight (decision 0152), run from
`bench/bench_api_writes.py --in-flight 16,64,256` or `--stages N`: one async client (the raw
keep-alive connection of bench_api.py) keeps that many keyed `POST /jobs` outstanding; the
report gives creates/s with p50/p99, the CPU per create of the API, the judge, the broker and
the client, their idle CPU, and the raw limits of the same run. `--stages N` stamps a create's
stages across the client, the API and the judge (`bench/stamp_creates.py`) and prints where
its time goes. Figures, never pass/fail.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402

from bench._common import (  # noqa: E402
    Report,
    bench_broker,
    cpu_seconds,
    percentile,
    stop_process,
    track,
)
from bench.bench_api import SPEC, append_report, line, start_api  # noqa: E402
from bench.bench_api_writes import raw_limits, start_judge  # noqa: E402
from tickwheel.adapters.kafka.admin import apply_topology  # noqa: E402
from tickwheel.services.api.keys import create_key  # noqa: E402
from tickwheel.stack.broker import free_port  # noqa: E402

IDLE_S = 10.0


def rdkafka_cpu_seconds(pid: int) -> float:
    """The CPU of a process's librdkafka threads (named `rdk:...`; Python's are not named):
    what its Kafka clients cost beside its Python code."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            text = (task / "stat").read_text()
        except OSError:
            continue  # the thread ended
        name, fields = text.split("(", 1)[1].rsplit(")", 1)
        if name.startswith("rdk:"):
            parts = fields.split()
            total += int(parts[11]) + int(parts[12])
    return total / os.sysconf("SC_CLK_TCK")


def async_creates(
    creates: int, levels: list[int], rounds: int, profile_api: Path | None = None
) -> None:
    """Keyed `POST /jobs` through the single writer from one async client with many creates
    in flight (a closed loop per level: `levels` outstanding at once), beside the raw limits
    of the same run at the same levels: acknowledged produces (`deliver` from that many
    threads) and commands judged with no HTTP. CPU per create of every process: the API, the
    judge, the broker, and this client (decision 0152)."""
    import json as json_

    from bench.bench_api import RawConnection, async_load

    report = Report("HTTP API creates through the single writer, many in flight (decision 0152)")
    with bench_broker() as broker:
        os.environ["KAFKA_BOOTSTRAP_SERVERS"] = broker.bootstrap
        os.environ["TICKWHEEL_TOPIC_PREFIX"] = "benchw."
        apply_topology(bootstrap=broker.bootstrap)
        token, _ = create_key("bench", ["write"], bootstrap=broker.bootstrap, now_ms=1)
        logs = Path(tempfile.mkdtemp(prefix="tickwheel-bench-writes-"))
        judge = start_judge(logs / "jobwriter.log")
        port = free_port()
        wrapper = None if profile_api is None else [
            str(ROOT / "bench" / "bench_api_profile.py"), str(profile_api)]  # fmt: skip
        api = start_api(port, logs / "api.log", {"TICKWHEEL_JOB_WRITES": "commands"}, wrapper)
        assert broker.process is not None
        pids = {"API": api.pid, "judge": judge.pid, "broker": broker.process.pid}
        headers = {"Authorization": f"Bearer {token}"}
        base = f"http://127.0.0.1:{port}"

        def poster(tag: str) -> Callable[[RawConnection, int], Any]:
            async def post(connection: RawConnection, i: int) -> None:
                body = json_.dumps({**SPEC, "jobId": f"{tag}-{i}"}).encode()
                status, text = await connection.request(
                    "POST", "/v1/jobs", body, {"Idempotency-Key": f"{tag}-{i}"})  # fmt: skip
                assert status == 201, text

            return post

        async_load(base, headers, poster("warm"), 50, in_flight=8)
        before = {name: cpu_seconds(pid) for name, pid in pids.items()}
        time.sleep(IDLE_S)  # what each process spends with nothing to do: followers' polls
        idle = {name: (cpu_seconds(pid) - before[name]) / IDLE_S for name, pid in pids.items()}
        start_load = ", ".join(f"{v:.1f}" for v in os.getloadavg())
        baseline = os.environ.get("TICKWHEEL_BENCH_BASELINE")
        code = f"the services at revision {baseline}" if baseline else "this code"
        report.add(f"{code}: {rounds} rounds of {creates} keyed creates per level, from one async "
                   f"client (raw keep-alive HTTP/1.1, one event loop); the API (uvicorn, one "
                   f"worker), the judge and the broker each in one process. Load average at "
                   f"the start: {start_load}.")  # fmt: skip
        report.add("")
        report.add("Idle, over " + f"{IDLE_S:g} s before the rounds, in cores: " + ", ".join(
            f"{name} {share:.3f}" for name, share in idle.items()) + ".")  # fmt: skip
        report.add("")
        report.add("| in flight | n | creates/s | p50 ms | p99 ms | API CPU ms/create | "
                   "of it librdkafka | judge | broker | client |")  # fmt: skip
        report.add("|---|---|---|---|---|---|---|---|---|---|")
        for round_ in range(rounds):
            for level in levels:
                before = {name: cpu_seconds(pid) for name, pid in pids.items()}
                kafka_before = rdkafka_cpu_seconds(api.pid)
                rate, latencies, client_ms = async_load(
                    base, headers, poster(f"c{round_}-{level}"), creates, in_flight=level)  # fmt: skip
                spent = {name: (cpu_seconds(pid) - before[name]) * 1000 / creates
                         for name, pid in pids.items()}  # fmt: skip
                kafka_ms = (rdkafka_cpu_seconds(api.pid) - kafka_before) * 1000 / creates
                report.add(f"{line(str(level), rate, latencies)} {spent['API']:.2f} | "
                           f"{kafka_ms:.2f} | {spent['judge']:.2f} | {spent['broker']:.2f} | {client_ms:.2f} |")  # fmt: skip
        report.add("")
        report.add("Raw limits in the same run (threads, no HTTP):")
        report.add("")
        report.add("| operation | n | per second | p50 ms | p99 ms |")
        report.add("|---|---|---|---|---|")
        for level in levels:
            for row in raw_limits(broker.bootstrap, creates, level):
                report.add(row.replace("raw:", f"raw, {level} threads:"))
        load = ", ".join(f"{v:.1f}" for v in os.getloadavg())
        report.add(f"\nLoad average at the end (1, 5, 15 min): {load}, on {os.cpu_count()} "
                   "cores shared with other work.")  # fmt: skip
        stop_process(api)
        stop_process(judge)
    if profile_api is not None:  # a profiled run (printed): its figures carry cProfile's cost
        return
    append_report(report, "api-writes.md")


STAGE_SPANS = (
    ("request sent -> route enters submit (HTTP, door, validation, thread hop)", "sent", "submit"),
    ("submit -> command acknowledged (its produce)", "submit", "acked"),
    ("acknowledged -> the judge has it (its poll)", "acked", "polled"),
    ("judge has it -> its transaction begins (batching, the last one)", "polled", "tx_begin"),
    ("transaction begin -> committed", "tx_begin", "tx_committed"),
    ("committed -> the API's follower read the verdict", "tx_committed", "verdict_read"),
    ("verdict read -> the route's thread woken", "verdict_read", "woken"),
    ("woken -> answer received (render, door, HTTP)", "woken", "answered"),
    ("whole create", "sent", "answered"),
)


def stage_times(creates: int, in_flight: int) -> None:
    """Where a create's time goes across the client, the API and the judge: each process
    stamps its stages (`bench/stamp_creates.py`, wall clock, by job id) and the spans between
    consecutive stages are summarised (decision 0152)."""
    import json as json_

    from bench.bench_api import RawConnection, async_load

    with bench_broker() as broker:
        os.environ["KAFKA_BOOTSTRAP_SERVERS"] = broker.bootstrap
        os.environ["TICKWHEEL_TOPIC_PREFIX"] = "benchs."
        apply_topology(bootstrap=broker.bootstrap)
        token, _ = create_key("bench", ["write"], bootstrap=broker.bootstrap, now_ms=1)
        logs = Path(tempfile.mkdtemp(prefix="tickwheel-bench-stages-"))
        port = free_port()
        env = {**os.environ, "TICKWHEEL_LOG_LEVEL": "WARNING", "TICKWHEEL_API_PORT": str(port),
               "TICKWHEEL_JOB_WRITES": "commands",
               "TICKWHEEL_API_WRITES_PER_S": "1000000", "TICKWHEEL_API_WRITE_BURST": "1000000"}  # fmt: skip
        stamper = str(ROOT / "bench" / "stamp_creates.py")
        judge = track(subprocess.Popen([sys.executable, stamper, "judge", str(logs / "judge.jsonl")],
                                       env=env, stdout=(logs / "judge.log").open("wb"),
                                       stderr=subprocess.STDOUT))  # fmt: skip
        api = track(subprocess.Popen([sys.executable, stamper, "api", str(logs / "api.jsonl")],
                                     env=env, stdout=(logs / "api.log").open("wb"),
                                     stderr=subprocess.STDOUT))  # fmt: skip
        deadline = time.monotonic() + 90
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                if time.monotonic() > deadline:
                    raise SystemExit(f"the API did not answer; see {logs}") from None
                time.sleep(0.2)
        from tickwheel.sdk.job_write_path import judge_running

        while not judge_running(broker.bootstrap):
            time.sleep(0.5)
        client: dict[str, dict[str, float]] = {}

        def poster(tag: str, keep: bool) -> Any:
            async def post(connection: RawConnection, i: int) -> None:
                job_id = f"{tag}-{i}"
                body = json_.dumps({**SPEC, "jobId": job_id}).encode()
                sent = time.time()
                status, text = await connection.request(
                    "POST", "/v1/jobs", body, {"Idempotency-Key": job_id})  # fmt: skip
                if keep:
                    client[job_id] = {"sent": sent, "answered": time.time()}
                assert status == 201, text

            return post

        async_load(f"http://127.0.0.1:{port}", {"Authorization": f"Bearer {token}"},
                   poster("warm", False), 50, in_flight=8)  # fmt: skip
        load = ", ".join(f"{v:.1f}" for v in os.getloadavg())
        rate, latencies, _ = async_load(f"http://127.0.0.1:{port}",
                                        {"Authorization": f"Bearer {token}"},
                                        poster("s", True), creates, in_flight=in_flight)  # fmt: skip
        time.sleep(2)  # the stamps are appended every half second
        stop_process(api)
        stop_process(judge)
    stamps = {job: dict(times) for job, times in client.items()}
    for name in ("api.jsonl", "judge.jsonl"):
        for text in (logs / name).read_text().splitlines():
            entry = json_.loads(text)
            if entry["job"] in stamps:
                stamps[entry["job"]].setdefault(entry["stage"], entry["t"])
    print(f"{creates} keyed creates, {in_flight} in flight: {rate:,.0f}/s, p50 "
          f"{percentile(latencies, 0.5):.1f} ms, p99 {percentile(latencies, 0.99):.1f} ms "
          f"(load {load} at the start)")  # fmt: skip
    print("| span | n | mean ms | p50 ms | p99 ms |\n|---|---|---|---|---|")
    for label, start, end in STAGE_SPANS:
        spans = [(s[end] - s[start]) * 1000 for s in stamps.values() if start in s and end in s]
        if spans:
            print(f"| {label} | {len(spans)} | {sum(spans) / len(spans):.1f} | "
                  f"{percentile(spans, 0.5):.1f} | {percentile(spans, 0.99):.1f} |")  # fmt: skip

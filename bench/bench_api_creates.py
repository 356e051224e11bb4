"""Creates through the single writer with many in flight (decision 0152), run from
`bench/bench_api_writes.py --in-flight 16,64,256`: one async client (the raw keep-alive
connection of bench_api.py) keeps that many keyed `POST /jobs` outstanding; the report gives
creates/s with p50/p99, the CPU per create of the API, the judge, the broker and the client,
their idle CPU, and the raw limits of the same run. Figures, never pass/fail.

(`--stages N`, a create's stages stamped across processes by `bench/stamp_creates.py`, and
`--profile-api`, the API under cProfile by `bench/bench_api_profile.py`, were retired once
decisions 0152 and 0165 were made; git history keeps them. `bench/sampling.py` profiles any
service: `bench_api_writes.py --sample`.)
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


from bench._common import (  # noqa: E402
    Report,
    bench_broker,
    cpu_seconds,
    stop_process,
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


def async_creates(creates: int, levels: list[int], rounds: int) -> None:
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
        api = start_api(port, logs / "api.log", {"TICKWHEEL_JOB_WRITES": "commands"})
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
    append_report(report, "api-writes.md")

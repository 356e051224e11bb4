"""The judge A/B in one run (decision 0178): one broker and one API (this code), the judge at a
git revision (`--baseline`) and the judge of this code taking turns over the same group, round
by round: keyed `POST /jobs` creates at each in-flight level from one async client. Gives
creates/s with p50/p99, the CPU per create of the API, the judge, the broker and the client,
the judge's transactions per create (its `/metrics`), with the load average. Figures, never
pass/fail.

    .venv/bin/python bench/bench_api_judge_ab.py --baseline 94f00d7 --in-flight 64,256

Both judges run as the same static member (`--instance bench`), so each takes the partitions
over at once when the other stops. A judge of before decision 0178 resumes at its checkpoint
record, which this code no longer moves: it re-judges what the other judged since (as
`exists`), before its round's warm-up is answered, so inside no measured round.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench._common import Report, bench_broker, cpu_seconds, stop_process, track  # noqa: E402
from bench.bench_api import SPEC, append_report, line, start_api  # noqa: E402
from bench.bench_api_server import (  # noqa: E402
    create_poster,
    end_load_line,
    judge_transactions,
)
from tickwheel.adapters.kafka.admin import apply_topology  # noqa: E402
from tickwheel.services.api.keys import create_key  # noqa: E402
from tickwheel.stack.broker import free_port  # noqa: E402


def start_judge(log: Path, metrics_port: int, pythonpath: str | None) -> subprocess.Popen[bytes]:
    """A judge (at `pythonpath`'s code, else this code's) serving /metrics, once it answers."""
    import httpx

    env = {**os.environ, "TICKWHEEL_LOG_LEVEL": "WARNING",
           "TICKWHEEL_METRICS_PORT": str(metrics_port)}  # fmt: skip
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    command = [sys.executable, "-m", "tickwheel.services.jobwriter", "--instance", "bench"]
    process = track(subprocess.Popen(command, env=env, stdout=log.open("ab"),
                                     stderr=subprocess.STDOUT))  # fmt: skip
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        try:
            httpx.get(f"http://127.0.0.1:{metrics_port}/metrics", timeout=1)
            return process
        except httpx.TransportError:
            time.sleep(0.2)
    raise SystemExit(f"the judge did not serve /metrics within 90 s; see {log}")


def judge_ab(baseline: str, creates: int, levels: list[int], rounds: int) -> None:
    from bench.bench_api import RawConnection, async_load
    from bench.bench_api_reads import baseline_tree

    judges = {f"judge at {baseline}": str(baseline_tree(baseline)), "judge of this code": None}
    report = Report("The judge A/B: one transaction per partition per poll against one per "
                    "poll (decision 0178)")  # fmt: skip
    with bench_broker() as broker:
        os.environ["KAFKA_BOOTSTRAP_SERVERS"] = broker.bootstrap
        os.environ["TICKWHEEL_TOPIC_PREFIX"] = "benchj."
        apply_topology(bootstrap=broker.bootstrap)
        token, _ = create_key("bench", ["write"], bootstrap=broker.bootstrap, now_ms=1)
        logs = Path(tempfile.mkdtemp(prefix="tickwheel-bench-judge-"))
        port = free_port()
        api = start_api(port, logs / "api.log", {"TICKWHEEL_JOB_WRITES": "commands"})
        base = f"http://127.0.0.1:{port}"
        headers = {"Authorization": f"Bearer {token}"}
        assert broker.process is not None

        def warm(base: str, headers: dict[str, str], tag: str) -> None:
            """Until creates are answered (201) again: the judge holds the partitions and has
            judged any backlog (a 202 meanwhile: the verdict was late). Bounded."""
            pending: list[int] = []
            attempt = [0]

            async def post(connection: RawConnection, i: int) -> None:
                body = json.dumps({**SPEC, "jobId": f"{tag}-{attempt[0]}-{i}"}).encode()
                status, text = await connection.request("POST", "/v1/jobs", body)
                assert status in (201, 202), text
                if status == 202:
                    pending.append(i)

            for number in range(30):
                attempt[0], before = number, len(pending)
                async_load(base, headers, post, 50, in_flight=8)
                if len(pending) == before:
                    return
            raise SystemExit(f"{tag}: creates still answered late after 30 warm-up rounds")

        start_load = ", ".join(f"{v:.1f}" for v in os.getloadavg())
        report.add(f"{rounds} rounds; in each, each judge in turn takes the group over and "
                   f"answers {creates} keyed creates per level, from one async client (raw "
                   f"keep-alive HTTP/1.1); one API (this code, httptools+uvloop), one broker. "
                   f"Load average at the start: {start_load}.")  # fmt: skip
        report.add("")
        report.add("| judge | in flight | n | creates/s | p50 ms | p99 ms | API CPU ms | judge "
                   "| broker | client | judge transactions per create |")  # fmt: skip
        report.add("|---|---|---|---|---|---|---|---|---|---|---|")
        for round_ in range(rounds):
            for name, pythonpath in judges.items():
                metrics_port = free_port()
                judge = start_judge(logs / "jobwriter.log", metrics_port, pythonpath)
                try:
                    warm(base, headers, f"warm-{round_}-{name}")
                    pids = {"API": api.pid, "judge": judge.pid, "broker": broker.process.pid}
                    for level in levels:
                        before = {k: cpu_seconds(pid) for k, pid in pids.items()}
                        tx_before = judge_transactions(metrics_port)
                        rate, latencies, client_ms = async_load(
                            base, headers, create_poster(f"c{round_}-{level}-{name}"), creates,
                            in_flight=level)  # fmt: skip
                        spent = {k: (cpu_seconds(pid) - before[k]) * 1000 / creates
                                 for k, pid in pids.items()}  # fmt: skip
                        tx = (judge_transactions(metrics_port) - tx_before) / creates
                        report.add(f"| {name} {line(str(level), rate, latencies)} "
                                   f"{spent['API']:.2f} | {spent['judge']:.2f} | "
                                   f"{spent['broker']:.2f} | {client_ms:.2f} | {tx:.3f} |")  # fmt: skip
                finally:
                    stop_process(judge)
        report.add(end_load_line())
        stop_process(api)
    append_report(report, "api-writes.md")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", required=True, help="the judge's code before, a git rev")
    parser.add_argument("--in-flight", default="64,256")
    parser.add_argument("--creates", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    levels = [int(level) for level in args.in_flight.split(",")]
    judge_ab(args.baseline, args.creates, levels, args.rounds)


if __name__ == "__main__":
    main()

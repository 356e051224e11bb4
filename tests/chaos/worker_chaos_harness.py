"""The processes of the worker fault tests: a timer with short leases (`chaos_env`, for every
one of them), and for the SIGKILL tests (`test_worker_chaos.py`, `test_worker_restart_chaos.py`)
workers of the `normal` priority whose `chaos_hold` jobs
(`tests/integration/worker_chaos_handlers.py`) hold their slot for as long as the worker is
told, so how many executions are in flight at a kill does not depend on how fast the machine
is."""

from __future__ import annotations

import uuid
from pathlib import Path

from tests.integration.timer_harness import ServiceProcess, timer_env

LEASE_S = 3
HOLDERS = 300  # slots per worker: each `chaos_hold` execution holds one


def chaos_env(bootstrap: str, prefix: str, **extra: str) -> dict[str, str]:
    """The environment of every process: a fresh timer group, leases of LEASE_S seconds
    heartbeaten every second (and `extra`)."""
    return timer_env(
        bootstrap,
        prefix,
        TICKWHEEL_TIMER_GROUP=f"g-{uuid.uuid4()}",
        TICKWHEEL_LEASE_SECONDS=str(LEASE_S),
        TICKWHEEL_HEARTBEAT_SECONDS="1",
        **extra,
    )


def holding_worker(name: str, log_path: Path, env: dict[str, str], hold_s: int) -> ServiceProcess:
    """A worker (not started) with HOLDERS `normal` slots whose `chaos_hold` jobs each hold a
    slot for `hold_s` seconds (0: they finish at once)."""
    return ServiceProcess(
        name, log_path, {**env, "TICKWHEEL_TEST_HOLD_S": str(hold_s)}, "worker",
        ("--concurrency", f"normal={HOLDERS}", "--priority", "normal",
         "--module", "tests.integration.worker_chaos_handlers"),
    )  # fmt: skip

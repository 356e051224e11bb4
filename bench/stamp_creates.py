"""Stage timestamps of job creates across processes (decision 0152), for
`bench_api_writes.py --stages` (bench_api_creates.py): run a service with its create path's stages stamped.

    python bench/stamp_creates.py api|judge OUT.jsonl

patches the stages (keyed by job id: the bench's creates each name a new one), runs the
service's `__main__`, and appends `{"job": id, "stage": name, "t": epoch s}` lines to OUT
every half second. The wall clock, not a monotonic one: the stamps of three processes are compared.

API stages: `submit` (the route enters `JobCommandWriter.submit` or `submit_async`), `acked`
(the command's acknowledgement reaches it: `deliver` returns, or the awaited future is
resolved on the loop), `verdict_read` (the follower thread decoded the verdict), `woken`
(`submit` returns to the route). Judge stages: `polled` (the command reaches the
judge), `tx_begin` and `tx_committed` (its partition's transaction).
"""

from __future__ import annotations

import json
import runpy
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

STAMPS: list[tuple[str, str, float]] = []
_lock = threading.Lock()


def stamp(job_id: str, stage: str) -> None:
    now = time.time()  # compared across processes: the wall clock
    with _lock:
        STAMPS.append((job_id, stage, now))


def _wrap(owner: Any, name: str, before: Callable[..., None] | None,
          after: Callable[..., None] | None) -> None:  # fmt: skip
    original = getattr(owner, name)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if before is not None:
            before(*args, **kwargs)
        result = original(*args, **kwargs)
        if after is not None:
            after(*args, **kwargs)
        return result

    setattr(owner, name, wrapper)


def _wrap_async(owner: Any, name: str, before: Callable[..., None],
                after: Callable[..., None]) -> None:  # fmt: skip
    original = getattr(owner, name)

    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        before(*args, **kwargs)
        result = await original(*args, **kwargs)
        after(*args, **kwargs)
        return result

    setattr(owner, name, wrapper)


def stamp_api() -> None:
    from tickwheel.adapters.kafka.producer import EventProducer
    from tickwheel.sdk.acked_sends import AckedSends
    from tickwheel.sdk.job_commands import JobCommandWriter
    from tickwheel.topology import topic_name

    commands = topic_name("jobs.commands")
    entered = lambda _s, _k, job_id, *a, **k: stamp(job_id, "submit")  # noqa: E731
    returned = lambda _s, _k, job_id, *a, **k: stamp(job_id, "woken")  # noqa: E731
    _wrap(JobCommandWriter, "submit", entered, returned)
    _wrap_async(JobCommandWriter, "submit_async", entered, returned)  # the API's creates (0165)
    _wrap(EventProducer, "deliver", None,
          lambda _s, topic, key, *a, **k: stamp(key, "acked") if topic == commands else None)  # fmt: skip

    def acked_when_resolved(_s: Any, topic: str, key: str, _v: Any, _loop: Any,
                            future: Any) -> None:  # fmt: skip
        if topic == commands:
            future.add_done_callback(lambda _f: stamp(key, "acked"))

    _wrap(AckedSends, "send", acked_when_resolved, None)
    _wrap(JobCommandWriter, "_answer", lambda _s, value: stamp(value["job_id"], "verdict_read"),
          None)  # fmt: skip


def stamp_judge() -> None:
    from tickwheel.services.jobwriter.judge import PartitionJudge
    from tickwheel.services.jobwriter.writer import BatchWriter

    _wrap(PartitionJudge, "receive", lambda _s, record, _now: stamp(str(record.key), "polled"),
          None)  # fmt: skip

    def each(stage: str) -> Callable[..., None]:
        def mark(_self: Any, _producer: Any, _consumer: Any, batches: Any) -> None:
            for _runtime, batch in batches:  # the poll's one transaction (decision 0178)
                for job_id, _value in batch.definitions:
                    stamp(job_id, stage)

        return mark

    _wrap(BatchWriter, "write", each("tx_begin"), each("tx_committed"))


def main() -> None:
    role, out = sys.argv[1], Path(sys.argv[2])

    def flush_forever() -> None:
        # The services end with os._exit (no atexit): what is stamped is appended as it comes.
        written = 0
        while True:
            time.sleep(0.5)
            with _lock:
                fresh = STAMPS[written:]
                written = len(STAMPS)
            with out.open("a") as handle:
                for job_id, stage, at in fresh:
                    handle.write(json.dumps({"job": job_id, "stage": stage, "t": at}) + "\n")

    threading.Thread(target=flush_forever, name="stamps", daemon=True).start()
    (stamp_api if role == "api" else stamp_judge)()
    module = "tickwheel.services.api" if role == "api" else "tickwheel.services.jobwriter"
    sys.argv = [module]
    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()

"""Deterministic jitter: spread fire times of many jobs across a small window.

The offset of an occurrence is a hash of the job id and the slot (its scheduled UTC
instant) mapped into [0, window): recomputing it anywhere, after any restart, gives the
same fire time, and across jobs the offsets are uniform over the window. The job-id hash
(blake2b, 64 bits) is computed once per job (`jitter_seed`, remembered for the jobs that
fire often); each slot then costs a few integer operations (a SplitMix64 finaliser), so a
timer can jitter millions of occurrences per window. `vary_by_slot=False` gives one fixed
offset per job instead (Jenkins `H`-style), see docs/decisions/0013.
"""

from __future__ import annotations

import functools
import hashlib

from tickwheel.errors import InvalidInput

DEFAULT_MAX_JITTER_MS = 60_000
DEFAULT_PERIOD_FRACTION = 0.1
_MASK = (1 << 64) - 1


# Remembered for the jobs that fire often: a timer jitters every slot it inserts and fires
# (twice an occurrence), and an every-second job would hash its id twice a second. Bounded:
# a million-job burst hashes each job about once, as before, with at most this many kept.
SEED_CACHE_SIZE = 1 << 16


@functools.lru_cache(maxsize=SEED_CACHE_SIZE)
def jitter_seed(job_id: str) -> int:
    """The 64-bit per-job hash the offsets derive from (stable across processes)."""
    digest = hashlib.blake2b(job_id.encode("utf-8"), digest_size=8, person=b"tw-jitter").digest()
    return int.from_bytes(digest, "big")


def jitter_offset_from_seed(
    seed: int, scheduled_ms: int, window_ms: int, *, vary_by_slot: bool = True
) -> int:
    """`jitter_offset_ms` for a precomputed `jitter_seed(job_id)`."""
    if window_ms <= 0:
        return 0
    x = (seed + (scheduled_ms & _MASK) * 0x9E3779B97F4A7C15) & _MASK if vary_by_slot else seed
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK
    x ^= x >> 31
    # Multiply-shift maps 64 uniform bits onto [0, window) without modulo bias worth noting.
    return (x * window_ms) >> 64


def jitter_offset_ms(
    job_id: str, scheduled_ms: int, window_ms: int, *, vary_by_slot: bool = True
) -> int:
    """Deterministic offset in [0, window_ms) for occurrence (job_id, scheduled_ms).

    A window of 0 (jitter opted out) gives 0.
    """
    return jitter_offset_from_seed(
        jitter_seed(job_id), scheduled_ms, window_ms, vary_by_slot=vary_by_slot
    )


def default_jitter_window_ms(
    period_ms: int | None,
    *,
    explicit_ms: int | None = None,
    max_ms: int = DEFAULT_MAX_JITTER_MS,
    fraction: float = DEFAULT_PERIOD_FRACTION,
) -> int:
    """The jitter window of a job (DESIGN §4).

    `period_ms` is the schedule's nominal period (`CompiledSchedule.nominal_period_ms`;
    None for a one-off). An explicit setting wins (0 opts out) but must stay below the
    period so jitter never reorders a job's own occurrences. Otherwise recurring jobs get
    min(`max_ms`, `fraction` of the period) and one-offs get none.
    """
    if explicit_ms is not None:
        if explicit_ms < 0:
            raise InvalidInput(
                "jitter", f"{explicit_ms} ms is negative; accepted: 0 (off) or a positive duration"
            )
        if period_ms is not None and explicit_ms >= period_ms:
            raise InvalidInput(
                "jitter",
                f"{explicit_ms} ms is not shorter than the schedule's period of {period_ms} ms; "
                f"accepted: 0 to {period_ms - 1} ms",
            )
        return explicit_ms
    if period_ms is None:
        return 0
    return max(0, min(max_ms, int(period_ms * fraction)))

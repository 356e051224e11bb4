"""A sampling profiler for a service process, in the standard library only (py-spy's idea):
every few milliseconds each thread's stack is read with `sys._current_frames`, and the time
each function is on a stack (inclusive) or at its top (self) is counted per thread. Unlike
cProfile it sees every thread (a timer restores on one of its own) and costs the process
little, so the figures stay those of the real loop talking to a real broker.

    python bench/sampling.py --out /tmp/timer.txt -m tickwheel.services.timer --instance x

The report is rewritten every few seconds (services leave with `os._exit`, so nothing runs
at exit). `bench/bench_timer.py --sample DIR` runs its timers this way.
"""

from __future__ import annotations

import argparse
import runpy
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from types import FrameType

INTERVAL_S = 0.005
WRITE_EVERY_S = 3.0
TOP = 40
# The main thread's time line, second by second: the share of samples with each of these
# functions on the stack (a burst is a few seconds of a long run: this finds them).
TIMELINE = ("_poll", "_tick_all", "tick", "commit", "encode", "send", "flush", "follow")


def _where(frame: FrameType) -> str:
    code = frame.f_code
    path = code.co_filename
    marker = "/tickwheel/"
    path = "tickwheel/" + path.split(marker, 1)[1] if marker in path else Path(path).name
    return f"{path}:{code.co_firstlineno}({code.co_name})"


class Sampler:
    def __init__(self, out: Path) -> None:
        self.out = out
        self.samples: Counter[str] = Counter()
        self.inclusive: dict[str, Counter[str]] = {}
        self.own: dict[str, Counter[str]] = {}
        self.started = time.monotonic()
        self.timeline: dict[int, Counter[str]] = {}

    def run(self) -> None:
        me = threading.get_ident()
        last_write = time.monotonic()
        while True:
            time.sleep(INTERVAL_S)
            names = {t.ident: t.name for t in threading.enumerate()}
            for ident, frame in sys._current_frames().items():
                if ident == me:
                    continue
                name = names.get(ident, str(ident))
                self.samples[name] += 1
                inclusive = self.inclusive.setdefault(name, Counter())
                self.own.setdefault(name, Counter())[_where(frame)] += 1
                seen: set[str] = set()
                functions: set[str] = set()
                current: FrameType | None = frame
                while current is not None:
                    where = _where(current)
                    functions.add(current.f_code.co_name)
                    if where not in seen:
                        seen.add(where)
                        inclusive[where] += 1
                    current = current.f_back
                if name == "MainThread":
                    second = self.timeline.setdefault(
                        int(time.monotonic() - self.started), Counter()
                    )
                    second["samples"] += 1
                    second.update(f for f in TIMELINE if f in functions)
            if time.monotonic() - last_write > WRITE_EVERY_S:
                self.write()
                last_write = time.monotonic()

    def write(self) -> None:
        lines = [f"# {time.monotonic() - self.started:.1f} s sampled every {INTERVAL_S * 1000} ms"]
        for name, total in self.samples.most_common():
            lines.append(f"\n## thread {name}: {total} samples\n\n### self (at the top)")
            for where, count in self.own[name].most_common(TOP):
                lines.append(f"{count / total:6.1%}  {where}")
            lines.append("\n### inclusive (on the stack)")
            for where, count in self.inclusive[name].most_common(TOP):
                lines.append(f"{count / total:6.1%}  {where}")
        lines.append("\n## main thread, second by second (share of samples on the stack)\n")
        lines.append("second " + " ".join(f"{f:>9}" for f in TIMELINE))
        for second, counts in sorted(self.timeline.items()):
            total = counts["samples"]
            if counts["_poll"] < 0.9 * total:  # idle seconds (waiting in the poll) left out
                shares = " ".join(f"{counts[f] / total:9.0%}" for f in TIMELINE)
                lines.append(f"{second:6d} {shares}")
        self.out.write_text("\n".join(lines) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("-m", dest="module", required=True)
    args, rest = parser.parse_known_args()
    sampler = Sampler(args.out)
    threading.Thread(target=sampler.run, name="sampler", daemon=True).start()
    sys.argv = [args.module, *rest]
    runpy.run_module(args.module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()

"""Benchmark: `course watch`, from a save to the new verdict on screen, beside a plain `course check`.

    python tooling/bench/watch.py [--runs N] [--poll]

A learner repository with ag01 passing (the reference) is watched; each round appends a comment to
agent/provider/sse.py and times how long the new "N of M passing" line takes to appear, then runs a
plain `course check` in the same repository, so both are measured on the same machine at the same
moment. Target: the watch median under 300 ms (the watching process keeps the harness warm and
forks each run from itself). Figures are medians, with the spread.
"""

from __future__ import annotations

import argparse
import os
import re
import select
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CHAPTER = "ag01"
TARGET = 0.300
VERDICT = re.compile(rb"\d\d:\d\d:\d\d  (\d+) of (\d+) passing")
# As on a learner's machine: compiled files cached between runs.
ENV = {**{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},
       "PYTHONPATH": str(REPO), "NO_COLOR": "1"}


def course(*args: str) -> list[str]:
    return [sys.executable, "-m", "course", *args]


class Watch:
    def __init__(self, root: Path, poll: bool) -> None:
        self.process = subprocess.Popen(course("watch", *(["--poll"] if poll else [])), cwd=root, env=ENV,
                                        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        self.buffer = b""
        self.seen = 0

    def next_verdict(self, timeout: float = 60) -> float:
        """Wait for the next verdict line; the moment it arrived."""
        deadline = time.perf_counter() + timeout
        while True:
            found = list(VERDICT.finditer(self.buffer))
            if len(found) > self.seen:
                self.seen = len(found)
                return time.perf_counter()
            wait = deadline - time.perf_counter()
            if wait <= 0:
                raise TimeoutError(self.buffer.decode(errors="replace")[-2000:])
            ready, _, _ = select.select([self.process.stdout], [], [], wait)
            if ready:
                chunk = os.read(self.process.stdout.fileno(), 65536)
                if not chunk:
                    raise RuntimeError("course watch ended: " + self.buffer.decode(errors="replace")[-2000:])
                self.buffer += chunk

    def close(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)


def spread(values: list[float]) -> str:
    ms = sorted(v * 1000 for v in values)
    return f"median {statistics.median(ms):6.0f} ms  (min {ms[0]:.0f}, max {ms[-1]:.0f}, n={len(ms)})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--poll", action="store_true", help="watch by polling instead of OS notifications")
    options = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="course-bench-watch-") as tmp:
        root = Path(tmp) / "learner"
        root.mkdir()
        (root / ".git").mkdir()
        subprocess.run(course("start", CHAPTER), cwd=root, env=ENV, check=True, stdout=subprocess.DEVNULL)
        shutil.copytree(REPO / "reference" / "python" / CHAPTER, root, dirs_exist_ok=True,
                        ignore=shutil.ignore_patterns("__pycache__"))
        saved = root / "agent" / "provider" / "sse.py"
        original = saved.read_text()
        watch = Watch(root, options.poll)
        save_to_verdict: list[float] = []
        plain_check: list[float] = []
        try:
            watch.next_verdict()  # the first run, before any save
            for i in range(options.runs):
                time.sleep(0.4)  # the previous round's bookkeeping (state file) is done
                started = time.perf_counter()
                saved.write_text(original + f"\n# edit {i}\n")
                save_to_verdict.append(watch.next_verdict() - started)
                started = time.perf_counter()
                subprocess.run(course("check"), cwd=root, env=ENV, stdout=subprocess.DEVNULL, check=False)
                plain_check.append(time.perf_counter() - started)
                watch.seen = len(list(VERDICT.finditer(watch.buffer)))  # a check's save is not a verdict to time
        finally:
            watch.close()

    how = "polling" if options.poll else "notifications"
    print(f"{CHAPTER} on the reference, {options.runs} rounds, interleaved ({sys.version.split()[0]})")
    print(f"  course watch ({how}), save to verdict: {spread(save_to_verdict)}")
    print(f"  course check (a new process):         {spread(plain_check)}")
    met = statistics.median(save_to_verdict) < TARGET
    print(f"  target: watch under {TARGET * 1000:.0f} ms: {'met' if met else 'NOT met'}")


if __name__ == "__main__":
    main()

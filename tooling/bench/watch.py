"""Benchmark: `course watch`, from a save to the new verdict on screen, beside a plain `course check`.

    python tooling/bench/watch.py [--runs N] [--poll] [--against OTHER_CHECKOUT]

A learner repository with ag01 passing (the reference) is watched; each round appends a comment to
agent/provider/sse.py and times how long the new screen takes to appear, whole (the verdict line
and the line under it), then runs a plain `course check` in the same repository, so both are
measured on the same machine at the same moment. Target: the watch median under 300 ms. Figures
are medians, with the spread.

The time is then taken apart:
- the catalog run, as the screen shows it (`(0.42 s)` on the verdict line: from the run's start to
  its last result, worker start included); the rest is noticing the save and drawing the screen;
- noticing alone: the watcher `course watch` uses, with its settings, timed from a write to the
  moment it reports the save (no run);
- the start cost of a run: from the run's start to its first case, less that case's own time, in
  this process, with the worker watch keeps ready, with one forked from a process that has the
  harness and pytest imported (watch before it kept one ready), and with a new one (as check).
"""

from __future__ import annotations

import argparse
import io
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
VERDICT = re.compile(rb"\d\d:\d\d:\d\d  (\d+) of (\d+) passing  \((\d+\.\d+) s\)\r?\n(?:\r?\n)?[^\r\n]+\n")
# As on a learner's machine: compiled files cached between runs.
ENV = {**{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},
       "PYTHONPATH": str(REPO), "NO_COLOR": "1"}


def course(*args: str) -> list[str]:
    return [sys.executable, "-m", "course", *args]


class Watch:
    def __init__(self, root: Path, poll: bool, harness: Path = REPO) -> None:
        env = {**ENV, "PYTHONPATH": str(harness)}
        self.process = subprocess.Popen(course("watch", *(["--poll"] if poll else [])), cwd=root, env=env,
                                        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        self.root = root
        self.buffer = b""
        self.seen = 0

    def next_verdict(self, timeout: float = 60) -> tuple[float, float]:
        """Wait for the next screen (its verdict line and the line under it); the moment it
        arrived, and the run's duration it shows."""
        deadline = time.perf_counter() + timeout
        while True:
            found = list(VERDICT.finditer(self.buffer))
            if len(found) > self.seen:
                self.seen = len(found)
                return time.perf_counter(), float(found[-1].group(3))
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


def learner_repository(root: Path) -> Path:
    """A learner's repository with the chapter started and the reference's code in it."""
    root.mkdir()
    (root / ".git").mkdir()
    subprocess.run(course("start", CHAPTER), cwd=root, env=ENV, check=True, stdout=subprocess.DEVNULL)
    shutil.copytree(REPO / "reference" / "python" / CHAPTER, root, dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns("__pycache__"))
    return root


def noticing(root: Path, saved: Path, rounds: int) -> list[float]:
    """From a write to the moment the watcher course watch uses reports it."""
    sys.path.insert(0, str(REPO))
    from course import watch

    files = (str(saved.relative_to(root)),)
    watcher = watch.Notified(root, files)
    keys = watch.Keys(io.StringIO())  # not a terminal: never "q"
    times = []
    try:
        for i in range(rounds):
            time.sleep(0.2)
            started = time.perf_counter()
            saved.write_text(saved.read_text() + f"# notice {i}\n")
            watcher.wait(keys)
            times.append(time.perf_counter() - started)
    finally:
        watcher.close()
    return times


def start_costs(root: Path, rounds: int) -> dict[str, list[float]]:
    """A run's start cost (to its first case, less the case's own time), in this process: a new
    worker forked from a process that has imported nothing (as `course check` does), one forked
    from a process that has imported the harness and pytest (as watch did before it kept a worker
    ready), and the worker kept ready (watch now)."""
    sys.path.insert(0, str(REPO))
    from course import chapters, languages, rundir, runner
    from course.check import default_build_dir
    from course.languages.protocol import RunRequest
    from course.languages.python import handshake

    rundir.enter()
    chapter = chapters.get(CHAPTER)
    track = chapter.track("python")
    adapter = languages.get(track.language)
    request = RunRequest(track=track, code_root=root, tests=tuple(e.name for e in chapter.for_track(track).catalog),
                         timeout=5.0, build_dir=default_build_dir())

    def once() -> float:
        time.sleep(0.3)  # the previous worker is gone; the one kept ready has set itself up
        started = time.perf_counter()
        first: list[float] = []

        def on_case(case) -> None:  # noqa: ANN001
            if not first:
                first.append(time.perf_counter() - started - case.duration)

        runner.run(adapter, request, on_case=on_case)
        return first[0]

    costs = {"new": [once() for _ in range(rounds)]}
    handshake.warm()
    costs["forked"] = [once() for _ in range(rounds)]
    with adapter.standby():
        once()  # the first run of a watch starts a worker as check does; the next ones find it ready
        costs["ready"] = [once() for _ in range(rounds)]
    return costs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--poll", action="store_true", help="watch by polling instead of OS notifications")
    parser.add_argument("--against", type=Path, metavar="DIR",
                        help="another checkout of the harness (an earlier commit): its watch is timed in the same rounds")
    options = parser.parse_args()

    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="course-bench-watch-") as tmp:
        root = learner_repository(Path(tmp) / "learner")
        saved = root / "agent" / "provider" / "sse.py"
        original = saved.read_text()
        watch = Watch(root, options.poll)
        other = Watch(learner_repository(Path(tmp) / "other"), options.poll, options.against) if options.against else None
        save_to_verdict: list[float] = []
        run_shown: list[float] = []
        plain_check: list[float] = []
        other_save_to_verdict: list[float] = []
        try:
            watch.next_verdict()  # the first run, before any save
            if other:
                other.next_verdict()
            for i in range(options.runs):
                for which in ((watch, other) if i % 2 else (other, watch)):
                    if which is None:
                        continue
                    time.sleep(0.6)  # the previous round's bookkeeping (state file, the next worker) is done
                    file = which.root / "agent" / "provider" / "sse.py"
                    started = time.perf_counter()
                    file.write_text(original + f"\n# edit {i}\n")
                    arrived, shown = which.next_verdict()
                    if which is watch:
                        save_to_verdict.append(arrived - started)
                        run_shown.append(shown)
                    else:
                        other_save_to_verdict.append(arrived - started)
                started = time.perf_counter()
                subprocess.run(course("check"), cwd=root, env=ENV, stdout=subprocess.DEVNULL, check=False)
                plain_check.append(time.perf_counter() - started)
                watch.seen = len(list(VERDICT.finditer(watch.buffer)))  # a check's save is not a verdict to time
        finally:
            watch.close()
            if other:
                other.close()
        saved.write_text(original)
        notice = [] if options.poll else noticing(root, saved, options.runs)
        starts = start_costs(root, max(3, options.runs // 2))
    load_after = os.getloadavg()

    how = "polling" if options.poll else "notifications"
    rest = [total - run for total, run in zip(save_to_verdict, run_shown)]
    print(f"{CHAPTER} on the reference, {options.runs} rounds, interleaved ({sys.version.split()[0]}; "
          f"load average {load_before[0]:.1f} before, {load_after[0]:.1f} after)")
    print(f"  course watch ({how}), save to screen: {spread(save_to_verdict)}")
    print(f"    the catalog run (on screen):         {spread(run_shown)}")
    print(f"    the rest (notice the save, draw):    {spread(rest)}")
    if other_save_to_verdict:
        print(f"  course watch of {options.against}: {spread(other_save_to_verdict)}")
    print(f"  course check (a new process):         {spread(plain_check)}")
    if notice:
        print(f"  noticing a save alone (no run):       {spread(notice)}")
    print("  a run's start (to its first case), in-process:")
    print(f"    worker kept ready (watch):          {spread(starts['ready'])}")
    print(f"    forked from a warm harness:         {spread(starts['forked'])}")
    print(f"    new worker (as check starts one):   {spread(starts['new'])}")
    met = statistics.median(save_to_verdict) < TARGET
    print(f"  target: watch under {TARGET * 1000:.0f} ms: {'met' if met else 'NOT met'}")


if __name__ == "__main__":
    main()

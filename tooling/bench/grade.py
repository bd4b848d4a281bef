"""Benchmark: `course grade` over a class of identical passing ag01 repositories.

    python tooling/bench/grade.py [--learners 100] [--jobs N]

Measures, in one run: a single `course check` of one such repository (median of 5, run the way
`course grade` runs each one), then `course grade` over the whole roster with N jobs (the cores by
default). Target: grade's wall time under 1.5x (learners x single check / jobs). Also reports the
per-repository median that the gradebook records.
"""

from __future__ import annotations

import argparse
import csv
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ENV = {**{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}, "PYTHONPATH": str(REPO),
       "NO_COLOR": "1"}
CHAPTER = "ag01"


def course(*args: str, cwd: Path) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "course", *args], cwd=cwd, env=ENV, check=False,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--learners", type=int, default=100)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="course-bench-grade-") as tmp:
        roster = Path(tmp) / "class"
        first = roster / "learner000"
        first.mkdir(parents=True)
        course("start", CHAPTER, cwd=first)
        shutil.copytree(REPO / "reference" / "python" / CHAPTER, first, dirs_exist_ok=True,
                        ignore=shutil.ignore_patterns("__pycache__"))
        for i in range(1, options.learners):
            shutil.copytree(first, roster / f"learner{i:03}")
        results = Path(tmp) / "r.json"
        course("check", CHAPTER, "--json", str(results), cwd=first)  # warm the bytecode cache
        single = statistics.median(course("check", CHAPTER, "--json", str(results), cwd=first) for _ in range(5))
        book = Path(tmp) / "book.csv"
        wall = course("grade", str(roster), "--chapter", CHAPTER, "--jobs", str(options.jobs), "--csv", str(book),
                      "--json", str(Path(tmp) / "book.json"), cwd=Path(tmp))
        rows = list(csv.DictReader(book.open()))
        passed = sum(r["status"] == "pass" for r in rows)
        per_repo = statistics.median(float(r["seconds"]) for r in rows)
    ideal = options.learners * single / options.jobs
    print(f"single check (median of 5): {single:.2f} s")
    print(f"course grade, {options.learners} repositories, {options.jobs} jobs: {wall:.1f} s wall "
          f"({passed} passed); per-repository median {per_repo:.2f} s")
    print(f"ratio to learners x single / jobs ({ideal:.1f} s): {wall / ideal:.2f}x (target under 1.5x)")


if __name__ == "__main__":
    main()

"""The reference of every chapter and track under load: does a correct solution ever fail?

    python tooling/load/reference.py [--runs 200] [--busy N] [--chapter CH ...] [--out FILE]

A verdict must not depend on the machine's load. This runs `course check CH --reference --language L`
RUNS times for each track of each chapter (round-robin: one check of each per round, so every track
meets the same load), with N busy loops running (one per core by default) on top of whatever else the
machine is doing, and counts the runs that did not pass and the tests that failed in them. The busy
loops are this script's own children, ended when it ends (Ctrl-C included). Exit 0 when no run failed.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def busy_loops(count: int) -> list[subprocess.Popen]:
    return [subprocess.Popen(["sh", "-c", "while :; do :; done"], stdin=subprocess.DEVNULL) for _ in range(count)]


def check(chapter: str, language: str, results: Path) -> tuple[int, list[str], float]:
    """One check of the reference: its exit code, the tests that did not pass, its seconds."""
    results.unlink(missing_ok=True)
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "course", "check", chapter, "--reference", "--language", language,
                           "--json", str(results)], cwd=ROOT, stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, check=False)
    took = time.monotonic() - started
    try:
        doc = json.loads(results.read_text(encoding="utf-8"))
        failed = [f"{t['name']}: {(t.get('message') or t['status']).strip().splitlines()[0][:200]}"
                  for t in doc["tests"] if t["status"] != "pass"]
    except (OSError, ValueError, KeyError, IndexError):
        failed = [f"(no results: {(done.stderr.strip().splitlines() or ['?'])[-1][:200]})"]
    return done.returncode, failed if done.returncode else [], took


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--busy", type=int, default=os.cpu_count() or 1, help="busy loops (default: one per core)")
    parser.add_argument("--chapter", action="append", default=[], help="only these chapters (repeatable)")
    parser.add_argument("--out", type=Path, default=None, help="write the tally as JSON here, after every round")
    args = parser.parse_args()

    sys.path.insert(0, str(ROOT))
    from course import chapters

    tracks = [(c.id, t.language) for c in chapters.load_all() if not args.chapter or c.id in args.chapter
              for t in c.tracks.values()]
    tally = {f"{c} {lang}": {"runs": 0, "failed_runs": 0, "tests": Counter(), "seconds": []} for c, lang in tracks}
    signal.signal(signal.SIGTERM, _stopped)  # `kill PID` ends the busy loops too, as Ctrl-C does
    loops = busy_loops(args.busy)
    try:
        with tempfile.TemporaryDirectory(prefix="course-load-") as scratch:
            results = Path(scratch) / "results.json"
            for round_ in range(1, args.runs + 1):
                for chapter, language in tracks:
                    code, failed, took = check(chapter, language, results)
                    entry = tally[f"{chapter} {language}"]
                    entry["runs"] += 1
                    entry["seconds"].append(round(took, 2))
                    if code != 0:
                        entry["failed_runs"] += 1
                        entry["tests"].update(failed)
                        print(f"round {round_}: {chapter} {language} exit {code}: {'; '.join(failed)}", flush=True)
                load = os.getloadavg()[0]
                print(f"round {round_} of {args.runs} done (load {load:.1f})", flush=True)
                if args.out:
                    args.out.write_text(json.dumps(summary(tally), indent=2) + "\n", encoding="utf-8")
    finally:
        for loop in loops:
            loop.kill()
            loop.wait()
    report = summary(tally)
    for name, entry in report.items():
        print(f"{name}: {entry['failed_runs']} of {entry['runs']} runs failed "
              f"(median {entry['median_seconds']} s){''.join(f'; {t} x{n}' for t, n in entry['tests'].items())}")
    return 1 if any(e["failed_runs"] for e in report.values()) else 0


def _stopped(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def summary(tally: dict) -> dict:
    out = {}
    for name, entry in tally.items():
        seconds = sorted(entry["seconds"])
        out[name] = {"runs": entry["runs"], "failed_runs": entry["failed_runs"], "tests": dict(entry["tests"]),
                     "median_seconds": seconds[len(seconds) // 2] if seconds else None}
    return out


if __name__ == "__main__":
    sys.exit(main())

"""`course mutants`: run a chapter's documented pitfall mutants against its catalog.

First the catalog on the untouched reference (it must pass: a mutant is only killed relative to a
passing baseline). Then each mutant on a temporary copy of the reference, several at once, each with a
per-test timeout derived from the baseline. The reference itself is only ever read.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Callable

from course import processes, regions
from course.chapters import Chapter, Mutant, Track
from course.check import run_check
from course.results import TIMEOUT, CheckResult
from course.errors import BaselineFailed, StaleMutant
from course.mutant import apply

class MutantStatus(str, Enum):
    """What became of a documented mutant. A str, so it compares with and serialises as its value."""

    KILLED = "killed"  # some catalog test failed on it
    SURVIVED = "survived"  # every test passed: the catalog misses the bug
    TIMED_OUT = "timeout"  # a test ran out of time on it (it counts as killed)
    STALE = "stale"  # its change no longer applies to the reference

    def __str__(self) -> str:
        return self.value

    __format__ = str.__format__  # f"{status:<8}" pads the value, on every Python


KILLED, SURVIVED, TIMED_OUT, STALE = MutantStatus.KILLED, MutantStatus.SURVIVED, MutantStatus.TIMED_OUT, MutantStatus.STALE


@dataclass
class MutantResult:
    mutant: Mutant
    status: MutantStatus
    failing: list[str] = field(default_factory=list)  # the catalog tests that failed
    signature: list[str] = field(default_factory=list)  # how it failed (CheckResult.signature)
    detail: str = ""  # why it is stale, or what stopped the run
    seconds: float = 0.0  # wall time of its run

    @property
    def documented(self) -> bool:
        """Killed by at least one of the tests the manifest says catch it."""
        return self.status in (KILLED, TIMED_OUT) and bool(set(self.failing) & set(self.mutant.caught_by))

    def as_dict(self) -> dict:
        return {"id": self.mutant.id, "pitfall": self.mutant.pitfall, "status": self.status,
                "failing": self.failing, "caught_by": list(self.mutant.caught_by),
                "killed_as_documented": self.documented, "signature": self.signature, "detail": self.detail,
                "seconds": round(self.seconds, 3)}


def default_jobs() -> int:
    """Mutants judged at once: twice the cores. A mutant's run waits more than it computes (the
    catalog's stalls and sockets, a hang's timeout), so one per core leaves cores idle; measured on
    ag01 with 2 cores, twice the cores took the Go track from 21 s to 13 s and Python from 16 s to 12 s."""
    return 2 * (os.cpu_count() or 1)


def derived_timeout(baseline: CheckResult) -> float:
    """Per-test time allowed to a mutant: well above the slowest baseline case, never below 1 s."""
    slowest = max((c.duration for e in baseline.entries for c in e.cases), default=0.0)
    return max(1.0, 10 * slowest)


def _passing(chapter: Chapter, result: CheckResult) -> CheckResult:
    if not result.ok:
        failing = ", ".join(sorted(result.failing)) or result.problem
        raise BaselineFailed(f"chapter {chapter.id}: the catalog does not pass on the reference ({failing}); "
                             "no mutant can be judged")
    return result


def run_one(chapter: Chapter, track: Track, mutant: Mutant, timeout: float, scratch: Path, origin: Path) -> MutantResult:
    started = time.perf_counter()
    result = _judge(chapter, track, mutant, timeout, scratch, origin)
    result.seconds = time.perf_counter() - started
    return result


def reference_copy(track: Track, into: Path) -> Path:
    """The track's reference copied into `into` (a fresh folder), without its region markers, for a
    run that may change it or write beside it: the reference itself is only ever read."""
    copy = into / "code"
    shutil.copytree(track.reference, copy, ignore=shutil.ignore_patterns("__pycache__"))
    regions.strip_files(copy, track.files)  # a mutant's diff counts the code's lines, not the markers
    return copy


def _judge(chapter: Chapter, track: Track, mutant: Mutant, timeout: float, scratch: Path, origin: Path) -> MutantResult:
    with tempfile.TemporaryDirectory(prefix=f"course-{chapter.id}-{mutant.id}-") as tmp:
        copy = Path(tmp) / "code"
        shutil.copytree(origin, copy)
        try:
            apply(mutant, copy)
        except StaleMutant as exc:
            return MutantResult(mutant, STALE, detail=str(exc))
        result = run_check(chapter, track, copy, timeout=timeout, scratch=scratch, origin=origin, mutant=mutant)
    failing = sorted(result.failing)
    signature = sorted(result.signature)
    if result.problem:
        return MutantResult(mutant, KILLED, failing, signature, detail=result.problem)
    if not failing:
        return MutantResult(mutant, SURVIVED)
    timed_out = any(e.status == TIMEOUT for e in result.entries)
    return MutantResult(mutant, TIMED_OUT if timed_out else KILLED, failing, signature)


def run_mutants(
    chapter: Chapter,
    track: Track,
    mutants: list[Mutant],
    *,
    jobs: int | None = None,
    on_result: Callable[[MutantResult], None] | None = None,
    reference_result: CheckResult | None = None,
) -> list[MutantResult]:
    """Judge each mutant; results in manifest order. Ctrl-C stops the workers and removes the copies.
    `reference_result`, a catalog run on the reference the caller already has, saves running it again."""
    timeout = derived_timeout(_passing(chapter, reference_result or run_check(chapter, track, track.reference)))
    results: dict[str, MutantResult] = {}
    # Build products of every copy (compiled files) share one scratch folder, removed at the end; so
    # does the unmarked reference each copy is made from, which adapters may build them as.
    scratch = tempfile.TemporaryDirectory(prefix=f"course-{chapter.id}-scratch-")
    origin = reference_copy(track, Path(scratch.name))
    pool = ThreadPoolExecutor(max_workers=jobs or default_jobs())
    futures = [pool.submit(run_one, chapter, track, m, timeout, Path(scratch.name), origin) for m in mutants]
    try:
        for future in as_completed(futures):
            result = future.result()
            results[result.mutant.id] = result
            if on_result:
                on_result(result)
    except BaseException:
        for future in futures:
            future.cancel()
        processes.kill_all()  # the running workers die; their threads then remove their copies
        pool.shutdown(wait=True, cancel_futures=True)
        scratch.cleanup()
        raise
    pool.shutdown()
    scratch.cleanup()
    return [results[m.id] for m in mutants]

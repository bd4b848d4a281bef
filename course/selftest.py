"""`course selftest`: the learner's own tests, judged as a test suite (Brown's Examplar, with the
chapter's reference as the wheat and its documented mutants as the chaff).

A good suite passes on the reference (a test that fails there expects something wrong) and fails on
every mutant (each mutant is one plausible bug: a suite that passes on it would let that bug through).
Both runs go through the same runner as `course check`: the learner's tests get the same timeouts,
isolation and clean-up as the catalog does. The reference's source is never shown: a wrong
expectation is reported by its test and message only.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

from course import languages
from course.chapters import CatalogEntry, Chapter, Mutant, Track
from course.check import run_check
from course.errors import UsageError
from course.languages.protocol import LearnerTests
from course.results import CheckResult
from course.mutation.documented import KILLED, TIMED_OUT, MutantResult, reference_copy, run_mutants


@dataclass
class SelftestResult:
    tests: list[str]  # the learner's tests, catalog-style names
    on_reference: CheckResult
    mutants: list[MutantResult] = field(default_factory=list)  # empty when the reference run failed

    @property
    def wrong_expectations(self) -> list[tuple[str, str]]:
        """(test name, first failure message) of each learner test that fails on the reference."""
        return [(e.test_name, e.failures[0].message if e.failures else e.status.value)
                for e in self.on_reference.entries if e.status.value != "pass"]

    @property
    def caught(self) -> list[MutantResult]:
        return [m for m in self.mutants if m.status in (KILLED, TIMED_OUT)]

    @property
    def missed(self) -> list[Mutant]:
        return [m.mutant for m in self.mutants if m.status not in (KILLED, TIMED_OUT)]

    @property
    def ok(self) -> bool:
        return not self.on_reference.problem and not self.wrong_expectations and bool(self.mutants) \
            and not self.missed


def tests_folder(track: Track, root: Path) -> Path:
    """Where the learner's own tests are in their repository `root`: the language decides (a Python
    learner keeps them apart, a Go learner beside the code, as each language's tests go)."""
    return _learner_tests(track).learner_tests_folder(track, root)


def _learner_tests(track: Track) -> LearnerTests:
    if not track.selftest:
        raise UsageError(f"chapter {track.chapter_id} has no selftest for its {track.language} track")
    offered = languages.capability(languages.get(track.language), LearnerTests)
    if offered is None:
        raise UsageError(f"selftest is not available for the {track.language} track yet")
    return offered


def run_selftest(chapter: Chapter, track: Track, root: Path, *, timeout: float, jobs: int | None = None,
                 on_mutant: Callable[[MutantResult], None] | None = None) -> SelftestResult:
    """Run the learner's tests (in the selftest folder of `root`) on the reference, then, if they all
    pass there, on every documented mutant of the track."""
    folder = tests_folder(track, root)
    names = _learner_tests(track).learner_tests(track, folder) if folder.is_dir() else []
    if not names:
        raise UsageError(f"no tests of yours in {folder}: write test functions there "
                         f"(`course start {chapter.id}` gives an example)")
    theirs = replace(chapter, catalog=tuple(CatalogEntry(name=n, kind="unit", checks="", why="") for n in names))
    # the learner's tests stand in for the catalog: the track's list of the catalog entries it runs
    # would leave every one of them out
    track = replace(track, tests_at=folder.resolve(), catalog=())
    with tempfile.TemporaryDirectory(prefix=f"course-selftest-{chapter.id}-") as tmp:
        # the learner's tests are code nobody has read, run where the code is (a test may write
        # beside it): a copy of the reference, as each mutant is, never the reference itself
        on_reference = run_check(theirs, track, reference_copy(track, Path(tmp)), timeout=timeout)
    result = SelftestResult(tests=names, on_reference=on_reference)
    if on_reference.ok and track.mutants:
        result.mutants = run_mutants(theirs, track, list(track.mutants), jobs=jobs, on_result=on_mutant,
                                     reference_result=on_reference)
    return result

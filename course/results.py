"""What a catalog run found, language-neutral: one CaseResult per executed test case, folded into one
EntryResult per catalog entry (a parametrized test has several cases), in catalog order."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # a worker imports this module (for Status), and needs no manifest
    from course.chapters import CatalogEntry


class Status(str, Enum):
    """A test case's verdict. A str, so it compares with and serialises as its plain value."""

    PASS = "pass"
    FAIL = "fail"  # a wrong result: an assertion, a not-implemented stub
    ERROR = "error"  # the test could not judge: an unexpected exception, a crash, a missing test
    TIMEOUT = "timeout"  # stopped at its time limit
    SKIP = "skip"

    def __str__(self) -> str:
        return self.value

    __format__ = str.__format__  # f"{status:<8}" pads the value, on every Python


PASS, FAIL, ERROR, TIMEOUT, SKIP = Status.PASS, Status.FAIL, Status.ERROR, Status.TIMEOUT, Status.SKIP
# When an entry's cases disagree, the entry shows the most serious of them.
_SEVERITY = {PASS: 0, SKIP: 1, FAIL: 2, ERROR: 3, TIMEOUT: 4}
FAIL_STATUSES = (FAIL, ERROR, TIMEOUT)


@dataclass
class CaseResult:
    entry: str  # the catalog name the case belongs to
    case: str  # the case id within a parametrized test ("" for a plain test)
    status: Status
    message: str = ""  # the short reason: assertion message, exception, timeout
    where: str = ""  # the learner's file:line the failure points at, when it points into their code
    test_line: str = ""  # the test file:line that failed
    details: str = ""  # the full traceback, shown with -v
    failed_at: str = ""  # which check failed, and how: the test lines down to it and the exception type
    output: str = ""  # what the test printed
    duration: float = 0.0


    def __post_init__(self) -> None:
        self.status = Status(self.status)


@dataclass
class FileCoverage:
    """What a catalog run executed of one file of the code under test (line numbers from 1)."""

    path: str  # relative to the code's root, as the manifest names it
    statements: list[int]  # the lines that hold code (excluded lines left out)
    missing: list[int]  # statements never run
    branches: int = 0  # possible jumps between lines
    missing_branches: list[tuple[int, int]] = field(default_factory=list)  # (from, to); to < 0: leaves the function

    @property
    def complete(self) -> bool:
        return not self.missing and not self.missing_branches


@dataclass
class RunOutcome:
    """What a catalog run returns: its cases in the order they ran, and what stopped it, if anything."""

    cases: list[CaseResult] = field(default_factory=list)
    problem: str = ""  # what stopped the run before (or outside) the tests; "" when nothing did
    out_of_time: bool = False  # the whole-check budget ran out: the tests without cases did not run
    coverage: dict[str, FileCoverage] | None = None  # by file, when the run was asked to measure it


@dataclass
class EntryResult:
    entry: CatalogEntry
    test_name: str  # the language's name for it: test_hand_example, TestHandExample
    cases: list[CaseResult] = field(default_factory=list)
    missing: bool = False  # the catalog names a test that the test files do not define

    @property
    def status(self) -> Status:
        if self.missing or not self.cases:
            return ERROR
        return max((c.status for c in self.cases), key=_SEVERITY.__getitem__)

    @property
    def failures(self) -> list[CaseResult]:
        return [c for c in self.cases if c.status in FAIL_STATUSES]

    @property
    def not_run(self) -> list[CaseResult]:
        """Cases skipped by the harness (after an earlier case of the test timed out)."""
        return [c for c in self.cases if c.status == SKIP and self.status != SKIP]


@dataclass
class CheckResult:
    entries: list[EntryResult]
    problem: str = ""  # a failure before any test could run (a learner module that does not import)
    duration: float = 0.0
    not_run: list[str] = field(default_factory=list)  # tests left out by -x or an exhausted budget
    stopped_first: bool = False  # -x ended the run at the first failure
    coverage: dict[str, FileCoverage] | None = None  # by file, when asked for

    @property
    def passed(self) -> int:
        return sum(e.status == PASS for e in self.entries)

    @property
    def total(self) -> int:
        return len(self.entries)

    @property
    def ok(self) -> bool:
        return not self.problem and bool(self.entries) and all(e.status == PASS for e in self.entries)

    @property
    def failing(self) -> frozenset[str]:
        """The catalog names that did not pass."""
        return frozenset(e.entry.name for e in self.entries if e.status != PASS)

    @property
    def signature(self) -> frozenset[str]:
        """How the run failed, finer than `failing`: each case that did not pass with the check that
        failed in it, 'name[case]@test_x.py:41 AssertionError' ('name@...' for a test without cases).
        Bugs that break different recorded streams, or different asserts of one broad test, differ."""
        marks = set()
        for entry in self.entries:
            if entry.status == PASS:
                continue
            broken = [c for c in entry.cases if c.status in FAIL_STATUSES]  # a case not run is not broken
            marks.update(f"{entry.entry.name}{f'[{c.case}]' if c.case else ''}@{c.failed_at or c.status}"
                         for c in broken)
            if not broken:
                marks.add(f"{entry.entry.name}@{entry.status}")
        return frozenset(marks)

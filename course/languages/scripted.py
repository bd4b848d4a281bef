"""The scripted adapter: the smallest complete language adapter, and the template a new language copies.

It runs no process and builds nothing: each worker it starts plays a script, the events a real
worker would report, so the runner can be driven through every case of the contract (a worker that
dies in a test, one that hangs, a problem before any test) without a test process, a toolchain or a
chapter. The harness ships it as httpx ships MockTransport: the runner's contract tests use it
(tests/harness/core/test_runner.py), and a new language's author reads it for what the contract
asks. Every member of course.languages.protocol.Adapter is here, each saying in a line what a real
language does there (Python's and Go's adapters are the full examples). It is not registered in
ADAPTERS: learners never meet it, and a test registers it for the length of the test.

Its catalog, when it has one, is a folder of `<name>.test` files (the test's source, what `course
tests --source` prints); without scripts every test it is named passes.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, ContextManager, Mapping, Optional, Union

from course.languages.protocol import (
    CaseFinished,
    CaseId,
    Collected,
    CommentBlindDiff,
    Ended,
    Event,
    Finished,
    Prepared,
    RunRequest,
)
from course.results import FileCoverage, Status

if TYPE_CHECKING:
    from course.chapters import Track


class Hang:
    """In a script: the worker says nothing more, as one stuck in a test would (the runner's deadline fires)."""


# A script: given the cases a worker is to run (those of the run's tests minus `skip`), the events it
# reports in order and how its process ends.
Script = Callable[[list[CaseId]], tuple[list[Union[Event, Hang]], Ended]]


def passing(cases: list[CaseId]) -> tuple[list[Union[Event, Hang]], Ended]:
    """The script of a worker whose every case passes: what a real worker reports for good code."""
    return [Collected(tuple(cases), starts_said=False), *(CaseFinished(c.key, Status.PASS) for c in cases),
            Finished()], Ended(0)


@dataclass
class ScriptedWorker:
    """One worker: the events of its script, one at a time (a real worker reads them from its process)."""

    events: list[Union[Event, Hang]]
    ended: Ended
    killed: bool = False

    def next_event(self, deadline: Optional[float]) -> Optional[Event]:
        """The next event; None once the process is gone; TimeoutError past the deadline (a real
        worker waits on its pipe until then)."""
        if not self.events:
            return None
        event = self.events.pop(0)
        if isinstance(event, Hang):
            raise TimeoutError
        return event

    def kill(self) -> None:
        """A real worker kills its process group: whatever a test started goes with it."""
        self.killed = True

    def close(self) -> Ended:
        """A real worker reaps its process and reads the tail of its stderr."""
        return self.ended


@dataclass
class ScriptedAdapter:
    """Each start() plays the next script; once none is left, every case passes."""

    scripts: list[Script] = field(default_factory=list)
    # the catalog's cases, several for a parametrized test; None: one case per test a run names
    cases: Optional[tuple[CaseId, ...]] = None
    problem: str = ""  # what prepare() finds wrong with the code (a compile error), "" for none
    # what each start() was told to skip, in order (for tests of the runner)
    skips: list[frozenset[str]] = field(default_factory=list)

    # --- required: course.languages.protocol.Adapter ---------------------------------------------
    name: str = "scripted"  # the language's name, as ADAPTERS and a manifest's `tracks:` spell it
    exit_call: str = "exit()"  # how code ends its process from inside a test, named in a crash's message
    splits: bool = False  # True only if a run's tests may be shared among workers at once (then: Worker.fileno)
    # the optional capabilities it offers, each to the object that implements it: this one only shows
    # how a declaration looks (course.languages.capability(adapter, CommentBlindDiff) finds it)
    capabilities: Mapping[type, object] = field(init=False)

    def __post_init__(self) -> None:
        self.capabilities = {CommentBlindDiff: self}

    def test_name(self, entry: str) -> str:
        """A catalog name in the language's own style (Python: test_x; Go: TestX); here, unchanged."""
        return entry

    def toolchain(self) -> str:
        """What runs the language here ('go1.26.8 (/usr/local/go/bin/go)'); ToolMissing, saying what
        to install, when it is missing. `course doctor` shows it."""
        return "nothing to install (a scripted adapter)"

    def test_sources(self, track: Track) -> dict[str, str]:
        """Each catalog test's source by its name in the language: verify checks the catalog's entries
        against it, `course tests --source` prints it, results.json carries it."""
        return {path.stem: path.read_text(encoding="utf-8") for path in sorted(Path(track.tests).glob("*.test"))}

    def catalog_problems(self, track: Track) -> list[str]:
        """What would make the track's catalog unsound or unreadable (verify's manifest step): Python
        refuses a bare assert, Go a file gofmt would change."""
        return []

    def prepare(self, request: RunRequest) -> Prepared:
        """Build the code with the catalog, or check that it compiles: a problem here is one line at the
        learner's file:line and no test runs. Go builds a test binary here (Prepared.artifact)."""
        return Prepared(problem=self.problem)

    def start(self, request: RunRequest, prepared: Prepared, skip: frozenset[str]) -> ScriptedWorker:
        """Start one worker running request.tests in that order, leaving out the case keys in `skip`
        (reported by an earlier worker of the run); the runner supervises it."""
        self.skips.append(skip)
        cases = self.cases if self.cases is not None else tuple(CaseId(name, name) for name in request.tests)
        chosen = [c for c in cases if c.entry in request.tests and c.key not in skip]
        events, ended = (self.scripts.pop(0) if self.scripts else passing)(chosen)
        return ScriptedWorker(list(events), ended)

    def ahead(self, request: RunRequest, workers: int) -> ContextManager[None]:
        """While the runner starts services and prepares: start workers getting ready (Python forks
        them with pytest loaded), never importing the code under test. Nothing to do here."""
        return contextlib.nullcontext()

    def standby(self) -> ContextManager[None]:
        """For `course watch`: keep what the next run needs ready between saves. Nothing to keep here."""
        return contextlib.nullcontext()

    def read_coverage(self, request: RunRequest) -> dict[str, FileCoverage]:
        """After a run with request.coverage: the lines and branches of the track's files its tests ran,
        from what the workers recorded in request.coverage_dir. A script runs no code: none."""
        return {}

    def has_docstring(self, source: str, symbol: str) -> bool | None:
        """Whether `symbol` ('EventReader.feed'; '' for the file) is documented in the source, where a
        catalog entry says its rule is stated (verify); None when the source cannot be read."""
        return None

    def exclusion_problems(self, track: Track) -> list[str]:
        """Lines of the reference left out of coverage without a reason beside them (verify)."""
        return []

    # --- an optional capability: CommentBlindDiff ---------------------------------------------------

    def commentary_lines(self, text: str) -> set[int]:
        """Lines holding only a `#` comment or nothing: what `course diff` leaves out unless --all."""
        return {n for n, line in enumerate(text.splitlines(), 1) if not line.strip() or line.lstrip().startswith("#")}

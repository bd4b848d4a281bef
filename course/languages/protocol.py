"""The runner boundary: what the harness hands a language adapter, and what comes back.

    course.check.run_check ──> course.runner.run(adapter, request, on_case)      shared by every language
                                 │  starts the services the track needs, fills COURSE_* in request.env
                                 ├─> adapter.ahead(request, workers)               workers may get ready now
                                 ├─> adapter.prepare(request) -> Prepared          build or import check
                                 │     a failure is one problem, at the learner's file:line; no test runs
                                 └─> adapter.start(request, prepared, skip) -> Worker   one test process
                                       Worker.next_event(deadline) -> Event | None     typed records below
                                       Worker.kill(); Worker.close() -> Ended          exit code, stderr tail
    The runner owns the per-test deadline, kills a worker that overstays it or dies, blames the test
    it was in, and starts a fresh worker that skips every case already reported: an adapter only runs
    the named tests it is given (minus `skip`) and reports what happened, in order.
    An adapter whose workers may run at once (`splits`) gets a run's tests shared among up to
    request.workers workers, each test whole in one of them; the runner supervises each as above
    and reports the cases in the run's order.

What a catalog needs from the harness reaches it through the environment, the same for every
language: request.env, given to the test process as it is (course.environment names the variables).

Below the events: Adapter, what every language implements, and the optional capabilities only some
offer (LearnerTests, BroadMutation, CommentBlindDiff, Demonstration, Foreground, Outline,
WorkerServices), which an adapter declares in `capabilities` and a command (or the runner) asks for
with course.languages.capability.
course.languages.scripted is the smallest adapter that keeps the contract; contract_problems says what
one lacks.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, ContextManager, Mapping, Optional, Protocol, Union, runtime_checkable

from course.mutant import Mutant
from course.results import FileCoverage, Status

if TYPE_CHECKING:  # a worker imports this module, and needs no manifest
    from course.chapters import Chapter, Track


@dataclass(frozen=True)
class RunRequest:
    """One catalog run, as the harness asks for it."""

    track: Track
    code_root: Path  # the code under test: a learner's repository, the reference, a mutant's copy
    tests: tuple[str, ...]  # catalog names to run, in the order to run them (already filtered by -k)
    timeout: float  # seconds each test case may take
    build_dir: Path  # where build products go (compiled files, a test binary); may be shared by runs
    env: Mapping[str, str] = field(default_factory=dict)  # added to the test process's environment
    shuffle: Optional[int] = None  # a seed: run the cases in an order drawn from it, not the catalog's
    coverage: bool = False  # measure which lines and branches of the track's files the run executes
    coverage_dir: Optional[Path] = None  # where workers record coverage (the runner makes it, when asked)
    budget: Optional[float] = None  # seconds for the whole run, every restart included
    cases: str = ""  # a -k style expression over case ids: the cases to run (the runner matches it)
    # how many workers may run the tests at once (when the adapter splits runs): more than one for a
    # learner's single check, one where many runs go on at once already (mutants, grading)
    workers: int = 1
    # code_root is a copy of this folder with a few files changed (a documented mutant): an adapter
    # may build it as if its files were there, to reuse what it built for the others; the catalog
    # alone judges it (no linter's verdict)
    origin: Optional[Path] = None
    # the documented mutant code_root holds (origin with this mutant applied, nothing else), or None
    # for code that is not one: an adapter that builds many mutants at once is told which this is
    mutant: Optional[Mutant] = None
    # no file the test processes write may grow past this many bytes (course.processes.limit_file_size,
    # set in each test process as its run starts; a write past it fails, and the case says so with
    # processes.file_too_large); None: no limit of the harness's own
    max_file_bytes: Optional[int] = None


@dataclass(frozen=True)
class Prepared:
    """The outcome of the build (or import check) step."""

    problem: str = ""  # why nothing can run, at the learner's file:line; "" when the code is ready
    artifact: Any = None  # whatever start() needs from the build (a test binary), the adapter's own


# --- Events: what a worker reports, in the order it happens ---------------------------------------


@dataclass(frozen=True)
class CaseId:
    key: str  # the adapter's own id of the case ("test_x.py::test_y[a]", "TestY/a"): what `skip` holds
    entry: str  # the catalog name it belongs to
    case: str = ""  # the case within a parametrized test or subtest ("" for a plain test)


@dataclass(frozen=True)
class Collected:
    """The cases this worker is about to run, in order. A worker that runs exactly these, one after
    the other in this order, may leave out CaseStarted (`starts_said=False`): each case then starts
    as the one before it ends (the first, now). An event fewer per case is a wake-up fewer for the
    harness, on a core the tests need."""

    cases: tuple[CaseId, ...]
    starts_said: bool = True


@dataclass(frozen=True)
class CaseStarted:
    key: str


@dataclass(frozen=True)
class CaseFinished:
    key: str
    status: Status
    message: str = ""  # the short reason: assertion message, exception, timeout
    where: str = ""  # the learner's file:line the failure points at
    test_line: str = ""  # the catalog's file:line that failed
    details: str = ""  # the full traceback or log, shown with -v
    failed_at: str = ""  # which check failed, and how ('test_x.py:41 AssertionError'): kill signatures
    output: str = ""  # what the test printed
    duration: float = 0.0
    # the learner's code the failure came through, outermost first: each frame of the exception or
    # panic in the learner's files, 'agent/provider/sse.py:88' (relative to the code's root); none
    # for a failed assert of the test's own, nor for a timeout (where a timer fires is chance)
    frames: tuple[str, ...] = ()


@dataclass(frozen=True)
class Problem:
    """The run cannot go on (an import or collection failure): every test not run is an error."""

    message: str


@dataclass(frozen=True)
class Finished:
    """The worker ran everything it was given."""


Event = Union[Collected, CaseStarted, CaseFinished, Problem, Finished]
_KINDS: dict[str, type] = {cls.__name__: cls for cls in (Collected, CaseStarted, CaseFinished, Problem, Finished)}


def encode(event: Event) -> bytes:
    """One event as a JSON object, for a worker that reports over a pipe."""
    # asdict copies recursively: needed for Collected's CaseIds only, and costly once per case
    fields = asdict(event) if isinstance(event, Collected) else vars(event)
    return json.dumps({"event": type(event).__name__, **fields}).encode()


def decode(data: bytes) -> Event:
    raw = json.loads(data)
    kind = _KINDS[raw.pop("event")]
    if kind is Collected:
        return Collected(tuple(CaseId(**c) for c in raw["cases"]), raw.get("starts_said", True))
    if kind is CaseFinished:
        raw["status"] = Status(raw["status"])
        raw["frames"] = tuple(raw.get("frames", ()))
    return kind(**raw)


@dataclass(frozen=True)
class Ended:
    exit_code: int  # negative: killed by that signal
    stderr: str = ""  # the tail of what the process wrote to stderr


class Worker(Protocol):
    def next_event(self, deadline: Optional[float]) -> Optional[Event]:
        """The next event; None once the worker is gone; TimeoutError past `deadline` (monotonic)."""

    def kill(self) -> None:
        """Kill the worker and everything it started (its process group)."""

    def close(self) -> Ended:
        """Reap the worker (killing what is left of it) and free its resources."""

    # Only the workers of an adapter that splits runs (several at once, waited for together):
    def fileno(self) -> int:
        """A descriptor that becomes readable when the worker has an event for next_event, or is gone."""


class Adapter(Protocol):
    """What every language adapter implements: the required part of the contract. What only some
    languages offer is in `capabilities` (see the optional capabilities below), never found by
    looking for an attribute. course.languages.scripted is the smallest adapter there is: copy it."""

    name: str
    exit_call: str  # how code ends the process from inside a test ("os._exit", "os.Exit"), for messages
    # whether a run's tests may be shared among several workers running at once (its Worker has
    # fileno()): worth it where each worker costs little next to the tests (a Python interpreter
    # forked with pytest loaded), not where one process runs a whole catalog fast (a Go test binary)
    splits: bool
    # the optional capabilities it offers, each to the object that implements it (often the adapter
    # itself): {LearnerTests: self, BroadMutation: Mutmut()}; ask with course.languages.capability
    capabilities: Mapping[type, object]

    def test_name(self, entry: str) -> str:
        """The catalog entry's name in this language ('hand_example' -> 'test_hand_example')."""

    def toolchain(self) -> str:
        """What runs this language's tracks here, in a few words ('go1.26.8 (/usr/local/go/bin/go)');
        ToolMissing, whose message says what to install, when it is missing or too old."""

    def test_sources(self, track: Track) -> dict[str, str]:
        """Each catalog test's source, by its name in this language."""

    def catalog_problems(self, track: Track) -> list[str]:
        """What in the track's manifest section or catalog files would make a run unsound or unreadable."""

    def prepare(self, request: RunRequest) -> Prepared:
        """Build the code under test with the catalog (or check that it imports)."""

    def start(self, request: RunRequest, prepared: Prepared, skip: frozenset[str]) -> Worker:
        """Start one process running request.tests in catalog order, minus the case keys in `skip`."""

    def ahead(self, request: RunRequest, workers: int) -> ContextManager[None]:
        """Opened by the runner before it starts the services and prepares the code, closed once the
        run is over: while it lasts, the adapter may start `workers` workers for `request` getting
        ready (never importing the code under test), for start() to hand out. Their run's spec
        (environment, skip) is the one start() is given."""

    def standby(self) -> ContextManager[None]:
        """For a command that runs the same catalog on the same code again and again (`course
        watch`): while the block lasts, the adapter may prepare what the next run needs ahead of
        it (a worker started and set up, a toolchain found). Never the code under test itself: each
        run must test the files as they are when it starts."""

    def read_coverage(self, request: RunRequest) -> dict[str, FileCoverage]:
        """After a run with request.coverage: what its workers recorded in request.coverage_dir, by file."""

    def has_docstring(self, source: str, symbol: str) -> bool | None:
        """Whether the source defines `symbol` ('EventReader.feed'; '' for the file itself) with
        documentation a learner reads; None when the source cannot be read at all."""

    def exclusion_problems(self, track: Track) -> list[str]:
        """Lines of the reference left out of its coverage without a reason written beside them."""


# --- Optional capabilities: what some languages offer, declared in Adapter.capabilities -------------
# A command that needs one asks course.languages.capability(adapter, Kind) and says plainly that the
# track does not offer it when the answer is None.


@runtime_checkable
class LearnerTests(Protocol):
    """`course selftest`: the learner's own tests, run in place of the catalog."""

    def learner_tests_folder(self, track: Track, root: Path) -> Path:
        """Where a learner keeps their own tests in their repository `root` (track.selftest names the
        example `course start` writes); run with this folder as the track's tests (Track.tests_at)."""

    def learner_tests(self, track: Track, folder: Path) -> list[str]:
        """The learner's tests of `track` in `folder`, as names `test_name` turns into the language's
        own. A language whose learners keep the tests of several chapters in one folder (Go: beside
        the code, in one module) leaves out those that test another chapter's code."""


class BroadReport(Protocol):
    """What a broad mutation tool found."""

    def show(self, echo: Callable[[str], None]) -> None:
        """The score and each survivor, as lines for the terminal."""

    def as_dict(self) -> dict:
        """The same as JSON data (`course mutants --broad --json`)."""


@runtime_checkable
class BroadMutation(Protocol):
    """`course mutants CHAPTER --broad`: a general mutation tool's score of the track's catalog on its
    reference (mutmut for Python, gremlins for Go): an instructor's measure, not part of verify."""

    tool: str  # the tool, as the command line names it ("mutmut", "gremlins v0.6.0")

    def run(self, chapter: Chapter, track: Track, env: Mapping[str, str], *, echo: Callable[[str], None]) -> BroadReport:
        """Score the catalog on a staged copy of the reference, the run's environment in `env` (the
        COURSE_* variables, services started: course.services.environment); `echo` says progress."""


@runtime_checkable
class CommentBlindDiff(Protocol):
    """`course diff` leaves out the hunks that differ only in comments and docstrings (`--all` shows them)."""

    def commentary_lines(self, text: str) -> set[int]:
        """The lines (1-based) of `text` that hold only comments, documentation or nothing."""


@runtime_checkable
class Demonstration(Protocol):
    """`course run`: the chapter's demonstration program (the track's `run:` script) on the code under test."""

    def run_script(self, track: Track, code_root: Path, script: Path, args: list[str], env: Mapping[str, str],
                   *, timeout: float, whole_errors: bool = False) -> int:
        """Run the script on the code in code_root with `args` (already checked against the chapter's
        `demonstration:` options) and the run's `env`; its exit code. CodeProblem when the code
        cannot run at all (it does not compile), or runs past `timeout`. What ends the program with
        an error (a traceback, a panic) is one line saying what and where in the learner's code,
        unless `whole_errors` (`course run --traceback`)."""


@runtime_checkable
class Foreground(Protocol):
    """`course check -s` and `course check --pdb TEST`: one catalog test with the learner's terminal
    attached, to debug it (its prints as they happen, the language's debugger, input())."""

    def run_foreground(self, track: Track, code_root: Path, test: str, env: Mapping[str, str], *,
                       debugger: bool) -> int:
        """Run catalog entry `test` alone on the code in code_root with the run's `env`, in the
        foreground (course.processes.foreground: the terminal's, no time limit); its exit code, 0
        when it passed. With `debugger`, under the language's debugger where the harness can start
        one; where it cannot, print the commands that do, to run by hand, and return 0."""


@runtime_checkable
class WorkerServices(Protocol):
    """Services (course.services) that each worker of a run starts inside its own process, for its
    own tests, where the run would otherwise start one for all of them: a test and the service it
    talks to then hand over within one process, on one core, at every exchange. The catalog reaches
    the service the same way (the variables course.services.start gives, set in the worker's
    environment before any test runs)."""

    def services_in_workers(self) -> frozenset[str]:
        """The names of the services this language's workers start themselves."""


@dataclass(frozen=True)
class Function:
    """A function or method a source file defines, as a learner reads its name."""

    name: str  # 'Decoder.decode', 'run_loop'; in Go 'EventReader.Next' (the receiver's type, no *)
    first: int  # its first line (1-based)
    last: int  # its last line


@runtime_checkable
class Outline(Protocol):
    """The pitfall hints' places: the functions of a source file with their lines, so that a failure's
    frame (file:line) or a documented mutant's change is placed in a function by its name."""

    def functions(self, source: str) -> list[Function]:
        """The functions and methods `source` defines, in source order: those at the top level and
        those of its classes or types, a function nested in another counting as part of it; [] when
        the source cannot be read."""


CAPABILITIES: tuple[type, ...] = (LearnerTests, BroadMutation, CommentBlindDiff, Demonstration, Foreground,
                                  Outline, WorkerServices)


def contract_problems(adapter: object) -> list[str]:
    """What `adapter` lacks of the contract: a required member it does not have, a capability it
    declares that is none of CAPABILITIES, or one whose object lacks that capability's members.
    The harness's tests hold every registered adapter to it; a new language's author runs it first."""
    have = set(dir(adapter))
    problems = [f"no {name} (required of every adapter)" for name in _members(Adapter) if name not in have]
    declared = adapter.capabilities if "capabilities" in have else {}  # type: ignore[attr-defined]
    if not isinstance(declared, Mapping):
        return problems + ["capabilities must map each capability it offers to the object offering it"]
    for kind, offered in declared.items():
        if kind not in CAPABILITIES:
            problems.append(f"capabilities: {kind!r} is not one of {', '.join(c.__name__ for c in CAPABILITIES)}")
            continue
        missing = [name for name in _members(kind) if name not in dir(offered)]
        if missing or not isinstance(offered, kind):
            problems.append(f"capabilities: {type(offered).__name__} offers {kind.__name__} without "
                            + ", ".join(missing or ["what it requires"]))
    return problems


def _members(protocol: type) -> list[str]:
    """The attributes and methods a protocol class asks for."""
    import inspect

    methods = [name for name, value in vars(protocol).items() if callable(value) and not name.startswith("_")]
    return sorted({*inspect.get_annotations(protocol), *methods})

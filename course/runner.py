"""Run a catalog through a language adapter; the part of a run that no language changes.

A test that hangs past its time, ends the process, or kills the interpreter or the test binary takes
its worker down with it. The runner records that test (timeout or error), starts a fresh worker that
skips every case already reported, and goes on, so one bad test never hides the verdicts of the
others. The adapter only builds, starts workers and translates its test runner's events (see
course.languages.protocol for the boundary and the environment a catalog receives).
"""

from __future__ import annotations

import signal
import tempfile
import time
from contextlib import ExitStack, contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Callable, Iterator

from course import content
from course.chapters import Track
from course.check.results import ERROR, SKIP, TIMEOUT, CaseResult, RunOutcome
from course.languages.protocol import (
    FIXTURES_VAR,
    SCRATCH_VAR,
    Adapter,
    CaseFinished,
    CaseId,
    CaseStarted,
    Collected,
    Ended,
    Finished,
    Prepared,
    Problem,
    RunRequest,
)

# Grace on top of the per-test time before a worker that stopped answering is killed (code that
# blocks signals, or hangs in C).
KILL_GRACE = 2.0
# Outside any test (starting, collecting, ending) a worker that says nothing for this long, on top of
# the per-test timeout, is stopped: the command always ends.
QUIET_LIMIT = 30.0


@contextmanager
def environment(track: Track) -> Iterator[dict[str, str]]:
    """What a catalog (or a chapter's script) receives from the harness, for the length of a block:
    its fixtures folder, a fresh scratch folder, the services its track lists (see
    course.languages.protocol for the variables)."""
    from course import services

    with ExitStack() as stack:
        scratch = stack.enter_context(tempfile.TemporaryDirectory(prefix="course-scratch-"))
        env = {FIXTURES_VAR: str(content.fixtures_dir(track.chapter_id)), SCRATCH_VAR: scratch}
        for name in track.services:
            env.update(stack.enter_context(services.start(name)))
        yield env


def missing_file(request: RunRequest) -> str:
    """The first of the track's files absent from the code being checked, as the one line every
    language says it in (a compiler would otherwise report each name the file declared), or ''."""
    for name in request.track.files:
        if not (request.code_root / name).is_file():
            return f"{name} is missing; `course start` writes missing stubs again"
    return ""


def run(adapter: Adapter, request: RunRequest, on_case: Callable[[CaseResult], None] | None = None) -> RunOutcome:
    """Prepare the code, then run request.tests, restarting workers as needed; cases reach `on_case`
    as they finish, in the order they ran."""
    missing = missing_file(request)
    if missing:  # said before any service starts or anything is built
        return RunOutcome(problem=missing)
    with environment(request.track) as env, ExitStack() as stack:
        request = replace(request, env={**env, **request.env})
        if request.coverage:
            coverage_dir = stack.enter_context(tempfile.TemporaryDirectory(prefix="course-coverage-"))
            request = replace(request, coverage_dir=Path(coverage_dir))
        prepared = adapter.prepare(request)
        if prepared.problem:
            return RunOutcome(problem=prepared.problem)
        outcome = _supervise(adapter, request, prepared, on_case)
        if request.coverage:
            outcome.coverage = adapter.read_coverage(request)
        return outcome


def _supervise(adapter: Adapter, request: RunRequest, prepared: Prepared,
               on_case: Callable[[CaseResult], None] | None) -> RunOutcome:
    from course import selection

    outcome = RunOutcome()
    done: set[str] = set()  # case keys reported (or left out by --case), by this worker or an earlier one
    known: dict[str, CaseId] = {}
    wanted = selection.parse(request.cases) if request.cases else None
    out_of_time = None if request.budget is None else time.monotonic() + request.budget

    def record(key: str, **fields) -> None:  # noqa: ANN003
        done.add(key)
        case = known[key]
        result = CaseResult(entry=case.entry, case=case.case, **fields)
        outcome.cases.append(result)
        if on_case:
            on_case(result)

    def skip_rest_of(key: str) -> bool:
        """One timeout per test: the test's cases not run yet are reported as not run (a loop that
        never ends in code every case calls would otherwise cost the timeout once per case)."""
        timed_out = known[key]
        rest = [k for k, c in known.items() if c.entry == timed_out.entry and k not in done]
        for other in rest:
            record(other, status=SKIP, message=f"not run: case {timed_out.case or key} of this test timed out")
        return bool(rest)

    while True:
        progress = len(done)
        worker = adapter.start(request, prepared, frozenset(done))
        current = ""
        finished = False
        try:
            while True:
                limit = request.timeout + (KILL_GRACE if current else QUIET_LIMIT)
                wait = time.monotonic() + (KILL_GRACE if finished else limit)
                try:
                    event = worker.next_event(wait if out_of_time is None else min(wait, out_of_time))
                except TimeoutError:
                    worker.kill()
                    if out_of_time is not None and time.monotonic() >= out_of_time and not finished:
                        if current:
                            record(current, status=TIMEOUT, message="stopped when the whole check ran out of time")
                            skip_rest_of(current)
                        outcome.problem = (f"the whole check took longer than {request.budget:g} s and was stopped; "
                                           "the tests it did not reach are not run (use --budget to allow more)")
                        outcome.out_of_time = finished = True
                    elif current:
                        record(current, status=TIMEOUT, message=f"the test, with its setup and teardown, did not "
                               f"finish within {limit:g} s and was stopped (use --timeout to allow more)")
                        skip_rest_of(current)
                        current = ""
                    elif not finished:
                        outcome.problem = f"the test process stopped answering outside any test for {limit:g} s"
                        finished = True
                    break
                if event is None:
                    break
                if isinstance(event, Collected):
                    known.update((c.key, c) for c in event.cases)
                    unwanted = {c.key for c in event.cases if wanted and not wanted((c.case,)) and c.key not in done}
                    if unwanted:  # --case: start again without them (they never ran, so nothing is lost)
                        done.update(unwanted)
                        worker.kill()
                        break
                elif isinstance(event, CaseStarted):
                    current = event.key
                elif isinstance(event, CaseFinished):
                    fields = {k: v for k, v in vars(event).items() if k != "key"}
                    record(event.key, **fields)
                    current = ""
                    if event.status == TIMEOUT and skip_rest_of(event.key):
                        worker.kill()  # it would run the cases just reported as not run: start again
                        break
                elif isinstance(event, Problem):
                    outcome.problem = outcome.problem or event.message
                    finished = True
                elif isinstance(event, Finished):
                    finished = True
        finally:
            ended = worker.close()
        if finished:
            return outcome
        if current:  # the worker died inside a test: blame that test, then run the rest
            record(current, status=ERROR, message=_death_message(adapter, ended))
            continue
        if known and progress < len(done) < len(known):
            continue  # a timeout (or --case) stopped the worker: run the rest
        if len(done) < len(known) or not known:
            last = ended.stderr.splitlines()[-1] if ended.stderr else f"exit code {ended.exit_code}"
            outcome.problem = f"the test process ended outside any test: {last}"
        return outcome


def _death_message(adapter: Adapter, ended: Ended) -> str:
    code = ended.exit_code
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        why = f"the test process was killed by {name}"
    else:
        why = f"the test process exited with code {code} ({adapter.exit_call} or a crash in the code under test)"
    last = ended.stderr.splitlines()[-1] if ended.stderr else ""
    return f"{why} during this test" + (f": {last}" if last else "")

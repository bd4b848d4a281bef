"""Run a catalog through a language adapter; the part of a run that no language changes.

A test that hangs past its time, ends the process, or kills the interpreter or the test binary takes
its worker down with it. The runner records that test (timeout or error), starts a fresh worker that
skips every case already reported, and goes on, so one bad test never hides the verdicts of the
others. The adapter only builds, starts workers and translates its test runner's events (see
course.languages.protocol for the boundary, course.services for the environment a catalog receives).

Where the adapter allows it, a run's tests are shared among several workers running at once (one
per core a learner's check may use), each test whole in one share. Each share is supervised as
above on its own; the cases reach the caller grouped by test in the run's order, so a split run
reads like one worker's: a test's cases are passed on once every test before it is complete.
"""

from __future__ import annotations

import signal
import tempfile
import time
from contextlib import ExitStack
from dataclasses import replace
from multiprocessing.connection import wait
from pathlib import Path
from typing import Callable

from course import cache, services
from course.languages import capability
from course.results import ERROR, SKIP, TIMEOUT, CaseResult, RunOutcome
from course.languages.protocol import (
    Adapter,
    CaseFinished,
    CaseId,
    CaseStarted,
    Collected,
    Ended,
    Event,
    Finished,
    Prepared,
    Problem,
    RunRequest,
    Worker,
    WorkerServices,
)

# Grace on top of the per-test time before a worker that stopped answering is killed (code that
# blocks signals, or hangs in C).
KILL_GRACE = 2.0
# Outside any test (starting, collecting, ending) a worker that says nothing for this long, on top of
# the per-test timeout, is stopped: the command always ends.
QUIET_LIMIT = 30.0
# A run given a `stop` question (course watch: has the learner saved again?) asks it this often while
# it waits for its workers, so that a run on files no longer on disk is abandoned at once.
STOP_EVERY = 0.05


class Abandoned(Exception):
    """The run was given up because its `stop` question said so; its workers are stopped."""


def missing_file(request: RunRequest) -> str:
    """The first of the track's files absent from the code being checked, as the one line every
    language says it in (a compiler would otherwise report each name the file declared), or ''."""
    for name in request.track.files:
        if not (request.code_root / name).is_file():
            return f"{name} is missing; `course start` writes missing stubs again"
    return ""


def run(adapter: Adapter, request: RunRequest, on_case: Callable[[CaseResult], None] | None = None,
        stop: Callable[[], bool] | None = None, on_test: Callable[[str], None] | None = None) -> RunOutcome:
    """Prepare the code, then run request.tests, restarting workers as needed; cases reach `on_case`
    grouped by test, in the order of request.tests (as they ran within a test). `stop`, when given,
    is asked every STOP_EVERY seconds while the run waits (and before and after the code is
    prepared): once it answers True the run's workers are killed and Abandoned is raised. `on_test`
    hears each test's name once all its cases are passed on (in the order of request.tests): what
    is shown of a test can be shown as soon as it ends."""
    missing = missing_file(request)
    if missing:  # said before any service starts or anything is built
        return RunOutcome(problem=missing)
    shares = split(request.tests, request.workers if adapter.splits else 1, _weights(request))
    hosts = capability(adapter, WorkerServices)
    in_workers = hosts.services_in_workers() if hosts is not None else frozenset()
    # the workers start getting ready now, while the services start and the code is prepared
    with adapter.ahead(request, len(shares)), services.environment(request.track, in_workers=in_workers) as env, \
            ExitStack() as stack:
        request = replace(request, env={**env, **request.env})
        if request.coverage:
            coverage_dir = stack.enter_context(tempfile.TemporaryDirectory(prefix="course-coverage-"))
            request = replace(request, coverage_dir=Path(coverage_dir))
        _asked(stop)
        prepared = adapter.prepare(request)
        _asked(stop)
        if prepared.problem:
            return RunOutcome(problem=prepared.problem)
        outcome = _Supervisor(adapter, request, prepared, shares, on_case, stop, on_test).run()
        if request.coverage:
            outcome.coverage = adapter.read_coverage(request)
    if len(shares) > 1:
        _record_weights(request, outcome)
    return outcome


def _asked(stop: Callable[[], bool] | None) -> None:
    if stop is not None and stop():
        raise Abandoned


def split(tests: tuple[str, ...], workers: int, weights: dict[str, float]) -> list[tuple[str, ...]]:
    """The tests shared among at most `workers` workers: each test whole in one share (its cases may
    depend on each other), the heaviest first onto the lightest share, so the shares take about
    the same time; each share keeps the run's order. Without weights every test weighs the same
    (the shares alternate along the catalog); a test without one weighs what a typical test does."""
    workers = max(1, min(workers, len(tests)))
    if workers == 1:
        return [tests]
    typical = sorted(weights.values())[len(weights) // 2] if weights else 1.0
    load = [0.0] * workers
    owner: dict[str, int] = {}
    for name in sorted(tests, key=lambda n: -weights.get(n, typical)):  # stable: equal weights keep order
        share = min(range(workers), key=load.__getitem__)
        owner[name] = share
        load[share] += weights.get(name, typical)
    return [tuple(name for name in tests if owner[name] == share) for share in range(workers)]


# Each test's time in the last split run, by chapter and language, in the build folder: only a hint
# for sharing the tests out, never part of a verdict. A shuffled run shares by count alone, so that
# one seed always puts the same tests together.
WEIGHTS_FOLDER = "durations"


def _weights_file(request: RunRequest) -> Path:
    return request.build_dir / WEIGHTS_FOLDER / f"{request.track.chapter_id}.{request.track.language}.json"


def _weights(request: RunRequest) -> dict[str, float]:
    if request.workers <= 1 or request.shuffle is not None:
        return {}
    data = cache.read_json(_weights_file(request))
    if not isinstance(data, dict):
        return {}
    return {name: float(v) for name, v in data.items() if isinstance(v, (int, float)) and v >= 0}


def _record_weights(request: RunRequest, outcome: RunOutcome) -> None:
    """Keep each test's time for the next split run (a timed-out case counts its whole timeout)."""
    spent: dict[str, float] = {}
    for case in outcome.cases:
        spent[case.entry] = spent.get(case.entry, 0.0) + (request.timeout if case.status == TIMEOUT else case.duration)
    if spent:
        known = _weights(replace(request, shuffle=None))
        cache.write_json(_weights_file(request), {**known, **{name: round(t, 4) for name, t in spent.items()}})


class _Share:
    """One worker's share of a run: its tests, the cases reported for them, the worker running them now."""

    def __init__(self, tests: tuple[str, ...]) -> None:
        self.tests = tests
        self.done: set[str] = set()  # case keys reported (or left out by --case), by this worker or an earlier one
        self.known: dict[str, CaseId] = {}
        self.worker: Worker | None = None
        self.current = ""  # the case running now
        self.order: tuple[str, ...] = ()  # the current worker's cases, when it runs them in order unannounced
        self.cursor = 0  # where in `order` the case running now is, or a case before it
        self.finished = False  # the worker ran all it was given, or the share cannot go on
        self.over = False  # no worker will run anything more of this share
        self.progress = 0  # cases done when the current worker started
        self.heard = 0.0  # when the worker last said something (monotonic)

    def next_case(self) -> str:
        """The case an unannounced worker runs now: the first of its order not reported yet."""
        while self.cursor < len(self.order) and self.order[self.cursor] in self.done:
            self.cursor += 1
        return self.order[self.cursor] if self.cursor < len(self.order) else ""

    def complete(self, entry: str) -> bool:
        """Whether every case of `entry` is reported: none can follow."""
        return self.over or bool(self.known) and all(
            key in self.done for key, case in self.known.items() if case.entry == entry)


class _Supervisor:
    """Runs the shares at once, one worker each, and reports their cases grouped by test, in the
    run's order: a test's cases are passed on as soon as every test before it is complete."""

    def __init__(self, adapter: Adapter, request: RunRequest, prepared: Prepared, shares: list[tuple[str, ...]],
                 on_case: Callable[[CaseResult], None] | None, stop: Callable[[], bool] | None = None,
                 on_test: Callable[[str], None] | None = None) -> None:
        from course import selection

        self.adapter, self.request, self.prepared, self.on_case = adapter, request, prepared, on_case
        self.stop, self.on_test = stop, on_test
        self.next_ask = time.monotonic() + STOP_EVERY
        self.outcome = RunOutcome()
        self.wanted = selection.parse(request.cases, "--case") if request.cases else None
        self.out_of_time = None if request.budget is None else time.monotonic() + request.budget
        self.shares = [_Share(tests) for tests in shares]
        self.owner = {name: share for share in self.shares for name in share.tests}
        self.held: dict[str, list[CaseResult]] = {}  # cases of tests that cannot be reported yet
        self.reported = 0  # tests of request.tests whose cases are all passed on

    def run(self) -> RunOutcome:
        try:
            for share in self.shares:
                self.start(share)
            while any(share.worker is not None for share in self.shares):
                self.step()
                self.ask()
        finally:
            for share in self.shares:  # stopped early (-x, an interrupt): end every worker now
                if share.worker is not None:
                    share.worker.kill()
                    share.worker.close()
                    share.worker = None
        return self.outcome

    def ask(self) -> None:
        """Put the `stop` question, at most every STOP_EVERY seconds (asking may cost a little)."""
        if self.stop is not None and time.monotonic() >= self.next_ask:
            _asked(self.stop)
            self.next_ask = time.monotonic() + STOP_EVERY

    def until(self, deadline: float) -> float:
        """How long a wait may last: to the deadline, or to the next `stop` question if sooner."""
        return deadline if self.stop is None else min(deadline, self.next_ask)

    def start(self, share: _Share) -> None:
        share.progress, share.current, share.finished, share.order = len(share.done), "", False, ()
        share.worker = self.adapter.start(replace(self.request, tests=share.tests), self.prepared,
                                          frozenset(share.done))
        share.heard = time.monotonic()

    def deadline(self, share: _Share) -> float:
        wait = KILL_GRACE if share.finished else self.limit(share)
        return share.heard + wait if self.out_of_time is None else min(share.heard + wait, self.out_of_time)

    def limit(self, share: _Share) -> float:
        return self.request.timeout + (KILL_GRACE if share.current else QUIET_LIMIT)

    def step(self) -> None:
        """Take the next events of the workers, or stop those past their deadline."""
        live = [share for share in self.shares if share.worker is not None]
        if len(live) == 1:  # one worker: wait for it alone (a worker need not be selectable)
            share = live[0]
            deadline = self.deadline(share)
            wait_until = self.until(deadline)
            try:
                self.take(share, share.worker.next_event(wait_until))
            except TimeoutError:  # past the time it was given: the deadline, or the next `stop` question
                if wait_until >= deadline:
                    self.expire(share)
            return
        heard = False
        for share in live:
            while share.worker is not None:
                try:
                    event = share.worker.next_event(0.0)  # what it has said already, without waiting
                except TimeoutError:
                    if time.monotonic() >= self.deadline(share):
                        self.expire(share)
                    break
                heard = True
                self.take(share, event)
        live = [share for share in self.shares if share.worker is not None]
        if live and not heard:
            nearest = self.until(min(self.deadline(share) for share in live))
            wait([share.worker for share in live], max(0.0, nearest - time.monotonic()))

    def take(self, share: _Share, event: Event | None) -> None:
        share.heard = time.monotonic()
        if event is None:
            self.ended(share)
        elif isinstance(event, Collected):
            share.known.update((c.key, c) for c in event.cases)
            unwanted = {c.key for c in event.cases if self.wanted and not self.wanted((c.case,))
                        and c.key not in share.done}
            if unwanted:  # --case: start again without them (they never ran, so nothing is lost)
                share.done.update(unwanted)
                share.worker.kill()
                self.ended(share)
            else:
                if not event.starts_said:
                    share.order, share.cursor = tuple(c.key for c in event.cases), 0
                    share.current = share.next_case()
                self.report()  # a test with no case is complete
        elif isinstance(event, CaseStarted):
            share.current = event.key
        elif isinstance(event, CaseFinished):
            fields = {k: v for k, v in vars(event).items() if k != "key"}
            share.current = ""
            self.record(share, event.key, **fields)
            if event.status == TIMEOUT and self.skip_rest_of(share, event.key):
                share.worker.kill()  # it would run the cases just reported as not run: start again
                self.ended(share)
            else:
                share.current = share.next_case()
        elif isinstance(event, Problem):
            self.outcome.problem = self.outcome.problem or event.message
            for each in self.shares:  # the code cannot run: no share goes on
                each.finished = True
                if each is not share and each.worker is not None:
                    each.worker.kill()
        elif isinstance(event, Finished):
            share.finished = True

    def expire(self, share: _Share) -> None:
        """The worker said nothing by its deadline: kill it, and say why."""
        share.worker.kill()
        limit = self.limit(share)
        if self.out_of_time is not None and time.monotonic() >= self.out_of_time and not share.finished:
            if share.current:
                self.record(share, share.current, status=TIMEOUT, message="stopped when the whole check ran out of time")
                self.skip_rest_of(share, share.current)
            self.outcome.problem = (f"the whole check took longer than {self.request.budget:g} s and was stopped; "
                                    "the tests it did not reach are not run (use --budget to allow more)")
            self.outcome.out_of_time = share.finished = True
        elif share.current:
            self.record(share, share.current, status=TIMEOUT, message=f"the test, with its setup and teardown, did "
                        f"not finish within {limit:g} s and was stopped (use --timeout to allow more)")
            self.skip_rest_of(share, share.current)
            share.current = ""
        elif not share.finished:
            self.outcome.problem = f"the test process stopped answering outside any test for {limit:g} s"
            share.finished = True
        self.ended(share)

    def ended(self, share: _Share) -> None:
        """The worker is gone (or going): reap it, then start another for the rest, or end the share."""
        ended = share.worker.close()
        share.worker = None
        if share.finished:
            pass
        elif share.current:  # the worker died inside a test: blame that test, then run the rest
            self.record(share, share.current, status=ERROR, message=_death_message(self.adapter, ended))
            return self.start(share)
        elif share.known and share.progress < len(share.done) < len(share.known):
            return self.start(share)  # a timeout (or --case) stopped the worker: run the rest
        elif len(share.done) < len(share.known) or not share.known:
            last = ended.stderr.splitlines()[-1] if ended.stderr else f"exit code {ended.exit_code}"
            self.outcome.problem = self.outcome.problem or f"the test process ended outside any test: {last}"
        share.over = True
        self.report()

    def record(self, share: _Share, key: str, **fields) -> None:  # noqa: ANN003
        share.done.add(key)
        case = share.known[key]
        self.held.setdefault(case.entry, []).append(CaseResult(entry=case.entry, case=case.case, **fields))
        self.report()

    def skip_rest_of(self, share: _Share, key: str) -> bool:
        """One timeout per test: the test's cases not run yet are reported as not run (a loop that
        never ends in code every case calls would otherwise cost the timeout once per case)."""
        timed_out = share.known[key]
        rest = [k for k, c in share.known.items() if c.entry == timed_out.entry and k not in share.done]
        for other in rest:
            self.record(share, other, status=SKIP, message=f"not run: case {timed_out.case or key} of this test timed out")
        return bool(rest)

    def report(self) -> None:
        """Pass on the cases that can be: the next test's so far, and the tests after it once it is complete."""
        tests = self.request.tests
        while self.reported < len(tests):
            name = tests[self.reported]
            for result in self.held.pop(name, ()):
                self.outcome.cases.append(result)
                if self.on_case:
                    self.on_case(result)
            if not self.owner[name].complete(name):
                return
            self.reported += 1
            if self.on_test:
                self.on_test(name)
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

"""A catalog run shared among two workers gives the verdict one worker gives: the same cases, with
the same statuses and messages, reported in the same order, crashes, hangs, -x, --case, the
budget and coverage included; a shuffled run is the same for the same seed; and nothing of either
worker outlives the command, however it is stopped."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from conftest import SYN, syn_reference
from course import runner
from course.chapters import Track
from course.results import Status
from course.languages.protocol import CaseFinished, CaseId, CaseStarted, Collected, Ended, Finished, Problem, RunRequest
from test_no_leftovers import marked, marked_check, wait_for
from test_watch_warm import CRASH_AND_HANG, syn_chapter  # noqa: F401 - a fixture

LONG = 120.0  # seconds anything may take on a busy machine


# -- sharing the tests out ----------------------------------------------------------------------------


def test_each_test_goes_whole_to_one_share_and_each_share_keeps_the_runs_order() -> None:
    tests = tuple("abcdefg")
    for workers in (1, 2, 3, 7, 20):
        shares = runner.split(tests, workers, {})
        assert len(shares) == min(workers, len(tests))
        assert sorted(name for share in shares for name in share) == list(tests), "every test once"
        for share in shares:
            assert list(share) == sorted(share), f"{share} keeps the run's order"
    assert runner.split(tests, 2, {}) == [tuple("aceg"), tuple("bdf")], "without weights the shares alternate"
    assert runner.split((), 2, {}) == [()]


def test_recorded_times_spread_the_heavy_tests_over_the_shares() -> None:
    weights = {"a": 0.01, "b": 0.5, "c": 0.02, "d": 0.45, "e": 0.01, "f": 0.01}
    shares = runner.split(tuple("abcdef"), 2, weights)
    loads = sorted(sum(weights[n] for n in share) for share in shares)
    assert loads[1] - loads[0] < 0.1, f"the heaviest tests on different workers: {shares}"
    assert not any({"b", "d"} <= set(share) for share in shares)
    # a test never timed weighs what a typical one does, not nothing
    shares = runner.split(tuple("abcdefg"), 2, weights)
    assert all(share for share in shares)


# -- the runner, with scripted workers ----------------------------------------------------------------


class Hang:
    """In a script: the worker says nothing more."""


@dataclass
class ScriptedWorker:
    """A worker playing a script; selectable (readable while it has something to say)."""

    events: list
    ended: Ended
    pipes: tuple[int, int] = field(default_factory=os.pipe)

    def __post_init__(self) -> None:
        os.write(self.pipes[1], b"x")

    def next_event(self, deadline):  # noqa: ANN001, ANN201
        if self.events and isinstance(self.events[0], Hang):
            if deadline is not None:
                time.sleep(max(0.0, deadline - time.monotonic()))
            raise TimeoutError
        if not self.events:
            return None
        return self.events.pop(0)

    def fileno(self) -> int:
        if self.events and isinstance(self.events[0], Hang):
            return self._quiet()
        return self.pipes[0]

    def _quiet(self) -> int:
        """A descriptor that never becomes readable while the worker hangs."""
        if not hasattr(self, "quiet"):
            self.quiet = os.pipe()
        return self.quiet[0]

    def kill(self) -> None:
        self.events = []

    def close(self) -> Ended:
        for fd in (*self.pipes, *getattr(self, "quiet", ())):
            with contextlib.suppress(OSError):
                os.close(fd)
        return self.ended


CASES = {"a": [CaseId("t::a", "a")], "b": [CaseId("t::b[1]", "b", "1"), CaseId("t::b[2]", "b", "2")],
         "c": [CaseId("t::c", "c")], "d": [CaseId("t::d", "d")]}


@dataclass
class SharingAdapter:
    """Scripts by share: start() plays the next script for the share's first test, given the
    share's cases not yet reported."""

    scripts: dict
    name: str = "scripted"
    exit_call: str = "exit()"
    splits: bool = True
    starts: list = field(default_factory=list)
    capabilities: dict = field(default_factory=dict)  # none of the optional ones

    def ahead(self, request: RunRequest, workers: int):  # noqa: ANN201
        return contextlib.nullcontext()

    def prepare(self, request: RunRequest):  # noqa: ANN201
        from course.languages.protocol import Prepared

        return Prepared()

    def start(self, request: RunRequest, prepared, skip: frozenset[str]) -> ScriptedWorker:  # noqa: ANN001
        self.starts.append((request.tests, skip))
        cases = [c for name in request.tests for c in CASES[name] if c.key not in skip]
        events, ended = self.scripts[request.tests[0]].pop(0)(cases)
        return ScriptedWorker(list(events), ended)


def passing(cases: list[CaseId]) -> list:
    return [event for c in cases for event in (CaseStarted(c.key), CaseFinished(c.key, Status.PASS))]


def clean(cases: list[CaseId]):  # noqa: ANN201
    return [Collected(tuple(cases)), *passing(cases), Finished()], Ended(0)


def sharing_request(tmp_path: Path, **options) -> RunRequest:  # noqa: ANN003
    track = Track(chapter_id="none", language="scripted", files=())
    return RunRequest(track=track, code_root=tmp_path, tests=("a", "b", "c", "d"), timeout=0.2,
                      build_dir=tmp_path, workers=2, **options)


def test_cases_of_two_shares_reach_the_caller_grouped_by_test_in_the_runs_order(tmp_path: Path) -> None:
    def dies_in_b1(cases: list[CaseId]):  # noqa: ANN202
        return [Collected(tuple(cases)), CaseStarted(cases[0].key)], Ended(-9)

    adapter = SharingAdapter({"a": [clean], "b": [dies_in_b1, clean]})
    seen = []
    outcome = runner.run(adapter, sharing_request(tmp_path), on_case=lambda case: seen.append((case.entry, case.case,
                                                                                                case.status.value)))
    assert seen == [("a", "", "pass"), ("b", "1", "error"), ("b", "2", "pass"), ("c", "", "pass"),
                    ("d", "", "pass")]
    assert [(c.entry, c.case) for c in outcome.cases] == [(e, c) for e, c, _ in seen]
    assert adapter.starts == [(("a", "c"), frozenset()), (("b", "d"), frozenset()),
                              (("b", "d"), frozenset({"t::b[1]"}))], "only the share that lost its worker starts again"


def test_a_hang_in_one_share_costs_that_test_only(tmp_path: Path) -> None:
    def hangs_in_c(cases: list[CaseId]):  # noqa: ANN202
        return [Collected(tuple(cases)), *passing(cases[:1]), CaseStarted(cases[1].key), Hang()], Ended(-9)

    adapter = SharingAdapter({"a": [hangs_in_c], "b": [clean]})
    outcome = runner.run(adapter, sharing_request(tmp_path))
    assert [(c.entry, c.status.value) for c in outcome.cases] == [
        ("a", "pass"), ("b", "pass"), ("b", "pass"), ("c", "timeout"), ("d", "pass")]
    assert outcome.problem == ""


def test_a_problem_in_one_share_stops_the_other(tmp_path: Path) -> None:
    def problem(cases: list[CaseId]):  # noqa: ANN202
        return [Problem("importing pkg.calc failed: ValueError: no")], Ended(0)

    def slow(cases: list[CaseId]):  # noqa: ANN202
        return [Collected(tuple(cases)), CaseStarted(cases[0].key), Hang()], Ended(-9)

    adapter = SharingAdapter({"a": [problem], "b": [slow]})
    started = time.monotonic()
    outcome = runner.run(adapter, sharing_request(tmp_path, budget=LONG))
    assert outcome.problem == "importing pkg.calc failed: ValueError: no" and outcome.cases == []
    assert time.monotonic() - started < LONG / 2, "the other share was stopped, not waited for"


def test_an_adapter_that_does_not_split_gets_one_worker(tmp_path: Path) -> None:
    adapter = SharingAdapter({"a": [clean]}, splits=False)
    outcome = runner.run(adapter, sharing_request(tmp_path))
    assert adapter.starts == [(("a", "b", "c", "d"), frozenset())]
    assert len(outcome.cases) == 5


# -- real workers on the synthetic chapter ------------------------------------------------------------


def verdict(result) -> list[tuple]:  # noqa: ANN001
    """What a learner reads: each test's cases in order, with status, message and place (an
    object's address in a message is the process's own)."""
    return [(entry.test_name, case.case, case.status.value, re.sub(r"0x[0-9a-f]+", "0x?", case.message), case.where,
             case.test_line) for entry in result.entries for case in entry.cases]


def both(chapter, track, root: Path, tmp_path: Path, **options):  # noqa: ANN001, ANN003, ANN201
    from course.check import run_check

    one = run_check(chapter, track, root, scratch=tmp_path / "build", workers=1, **options)
    two = run_check(chapter, track, root, scratch=tmp_path / "build", workers=2, **options)
    return one, two


def test_two_workers_give_the_verdict_of_one(syn_chapter, tmp_path: Path) -> None:  # noqa: F811
    chapter, track, learner = syn_chapter
    one, two = both(chapter, track, learner, tmp_path)
    assert one.ok and verdict(two) == verdict(one)
    calc = learner / "pkg" / "calc.py"
    calc.write_text(calc.read_text().replace("return a + b", "return a - b"))
    one, two = both(chapter, track, learner, tmp_path)
    assert not one.ok and verdict(two) == verdict(one)


def test_a_crash_and_a_hang_in_the_shares_give_the_verdict_of_one_worker(syn_chapter, tmp_path: Path) -> None:  # noqa: F811
    chapter, track, learner = syn_chapter
    calc = learner / "pkg" / "calc.py"
    calc.write_text(calc.read_text() + CRASH_AND_HANG)
    entries = []
    one, two = both(chapter, track, learner, tmp_path, timeout=1.0)
    assert verdict(two) == verdict(one), (verdict(two), verdict(one))
    statuses = {f"{e.test_name}[{c.case}]": c.status.value for e in two.entries for c in e.cases}
    assert statuses["test_add_cases[zero]"] == "error" and statuses["test_scratch_round_trip[]"] == "timeout"
    assert statuses["test_add_cases[negative]"] == "pass", "the share goes on after its worker died"
    from course.check import run_check

    run_check(chapter, track, learner, scratch=tmp_path / "build", workers=2, timeout=1.0, on_entry=entries.append)
    assert [e.test_name for e in entries] == [e.test_name for e in one.entries], "each test once, in catalog order"


def test_exitfirst_case_and_budget_with_two_workers(syn_chapter, tmp_path: Path) -> None:  # noqa: F811
    chapter, track, learner = syn_chapter
    calc = learner / "pkg" / "calc.py"
    calc.write_text(calc.read_text().replace("return a + b", "return a - b"))
    one, two = both(chapter, track, learner, tmp_path, stop_first=True)
    assert two.stopped_first and verdict(two) == verdict(one) and two.not_run == one.not_run
    one, two = both(chapter, track, learner, tmp_path, cases="zero or ones")
    assert verdict(two) == verdict(one) and [c[1] for c in verdict(two)] == ["ones", "zero"]

    calc.write_text(calc.read_text() + CRASH_AND_HANG)
    started = time.monotonic()
    from course.check import run_check

    two = run_check(chapter, track, learner, scratch=tmp_path / "build", workers=2, timeout=30.0, budget=2.0)
    assert time.monotonic() - started < 25, "the budget stops both workers"
    assert "longer than 2 s" in two.problem
    assert ("test_scratch_round_trip", "", "timeout", "stopped when the whole check ran out of time", "", "") in verdict(two)


def test_a_shuffled_split_run_is_the_same_for_the_same_seed(syn_chapter, tmp_path: Path) -> None:  # noqa: F811
    from course.check import run_check

    chapter, track, learner = syn_chapter
    calc = learner / "pkg" / "calc.py"
    calc.write_text(calc.read_text() + CRASH_AND_HANG)
    runs = [run_check(chapter, track, learner, scratch=tmp_path / "build", workers=2, shuffle=7, timeout=1.0)
            for _ in range(2)]
    assert verdict(runs[0]) == verdict(runs[1])
    request = RunRequest(track=track, code_root=learner, tests=("add",), timeout=1.0, build_dir=tmp_path / "build",
                         workers=2, shuffle=7)
    assert (tmp_path / "build" / runner.WEIGHTS_FOLDER).is_dir(), "the split runs recorded their times"
    assert runner._weights(request) == {}, "a shuffled run shares by count: the seed alone decides"


def test_coverage_of_two_workers_is_combined(syn_chapter, tmp_path: Path) -> None:  # noqa: F811
    chapter, track, learner = syn_chapter
    one, two = both(chapter, track, learner, tmp_path, coverage=True)
    assert one.coverage and two.coverage == one.coverage
    assert not two.coverage["pkg/calc.py"].missing, "lines run by either worker count"
    assert "add" not in {e.test_name for e in two.entries if e.status != "pass"}


def test_watch_keeps_as_many_workers_ready_as_a_run_uses(syn_chapter, tmp_path: Path) -> None:  # noqa: F811
    from course import languages
    from course.check import run_check

    chapter, track, learner = syn_chapter
    adapter = languages.get("python")
    with adapter.standby():
        assert run_check(chapter, track, learner, scratch=tmp_path / "build", workers=2).ok
        spares = list(adapter._standby.spares)
        assert len(spares) == 2, "two workers kept ready after a run of two"
        assert all(s.wait_until_ready(time.monotonic() + LONG) for s in spares)
        handed = adapter._standby.handed
        one, two = both(chapter, track, learner, tmp_path)
        assert two.ok and verdict(two) == verdict(one)
        pids = [s.process.pid for s in adapter._standby.spares]
    assert adapter._standby is None
    assert handed >= 2 and not any(Path(f"/proc/{pid}").exists() for pid in pids), "the spares end with the watch"


# -- stopping a check that runs two workers -----------------------------------------------------------


HANG_EVERYWHERE = '''

def add(a, b):
    while True:
        pass


def total(numbers):
    while True:
        pass
'''


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs /proc to find the processes")
@pytest.mark.parametrize("how", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_stopping_a_check_ends_both_workers_and_leaves_no_file(syn, started: Path, content: Path, tmp_path: Path,
                                                               how) -> None:
    syn_reference(content, started)
    calc = started / "pkg" / "calc.py"
    calc.write_text(calc.read_text() + HANG_EVERYWHERE)
    private = tmp_path / "tmp"
    private.mkdir()
    env = {"TMPDIR": str(private), "COURSE_CONTENT": str(content)}
    with marked_check(["check", SYN, "--timeout", "60"], started, env) as (check, marker):
        workers = 2 if len(os.sched_getaffinity(0)) >= 2 else 1
        assert wait_for(lambda: len([p for p in marked(marker) if p != check.pid]) >= workers, LONG), \
            f"{workers} test processes spinning in the learner's loops"
        time.sleep(0.3)
        check.send_signal(how)
        assert check.wait(timeout=LONG) == 130
        assert wait_for(lambda: not marked(marker), 2.0), f"left running after {how.name}: {marked(marker)}"
    assert not list(private.iterdir()), f"left behind: {list(private.iterdir())}"


# -- the real catalog ---------------------------------------------------------------------------------


def test_two_workers_agree_with_one_on_an_ag01_mutant(learner: Path, tmp_path: Path) -> None:
    import shutil

    from course import chapters
    from course.mutant import apply

    chapter = chapters.get("ag01")
    track = chapter.track("python")
    shutil.copytree(track.reference, learner, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__"))
    apply(next(m for m in track.mutants if m.id == "s01"), learner)
    one, two = both(chapter, track, learner, tmp_path)
    assert not one.ok and verdict(two) == verdict(one)

"""The runner boundary, driven by the scripted adapter the package ships (course.languages.scripted):
no process, no pytest, no chapter content.

What any language adapter can rely on: prepare's problem stops the run before a worker starts; a
worker that dies in a test gets that test blamed and a fresh worker for the rest; a test past its
deadline is stopped; cases already reported are skipped by the next worker; a Problem ends the run.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from course import runner
from course.chapters import Track
from course.environment import FAKE_MODEL_VAR
from course.languages.protocol import (
    CaseFinished,
    CaseId,
    CaseStarted,
    Collected,
    Ended,
    Finished,
    Prepared,
    Problem,
    RunRequest,
    WorkerServices,
    decode,
    encode,
)
from course.languages.scripted import Hang, ScriptedAdapter
from course.results import Status

CASES = [CaseId("t::a", "a"), CaseId("t::b[1]", "b", "1"), CaseId("t::b[2]", "b", "2"), CaseId("t::c", "c")]


def scripted(scripts: list, **fields) -> ScriptedAdapter:  # noqa: ANN003
    """The package's scripted adapter playing `scripts` over CASES."""
    return ScriptedAdapter(scripts, cases=tuple(CASES), **fields)


def passing(cases: list[CaseId]) -> list:
    return [event for c in cases for event in (CaseStarted(c.key), CaseFinished(c.key, Status.PASS))]


def request(tmp_path: Path) -> RunRequest:
    track = Track(chapter_id="none", language="scripted", files=())
    return RunRequest(track=track, code_root=tmp_path, tests=("a", "b", "c"), timeout=0.1, build_dir=tmp_path)


def statuses(outcome) -> list[tuple[str, str, str]]:  # noqa: ANN001
    return [(c.entry, c.case, c.status.value) for c in outcome.cases]


def test_a_clean_run_reports_every_case_in_order(tmp_path: Path) -> None:
    adapter = scripted([lambda cases: ([Collected(tuple(cases)), *passing(cases), Finished()], Ended(0))])
    outcome = runner.run(adapter, request(tmp_path))
    assert statuses(outcome) == [("a", "", "pass"), ("b", "1", "pass"), ("b", "2", "pass"), ("c", "", "pass")]
    assert outcome.problem == ""


def test_a_prepare_problem_stops_the_run_before_any_worker(tmp_path: Path) -> None:
    adapter = scripted([], problem="pkg/calc.py:3: syntax error: invalid syntax")
    outcome = runner.run(adapter, request(tmp_path))
    assert outcome.problem == "pkg/calc.py:3: syntax error: invalid syntax" and outcome.cases == []
    assert adapter.skips == [], "no worker may start when the code does not build"


def test_a_worker_dying_in_a_test_blames_it_and_a_fresh_worker_runs_the_rest(tmp_path: Path) -> None:
    def dies_in_b1(cases: list[CaseId]):  # noqa: ANN202
        return [Collected(tuple(cases)), *passing(cases[:1]), CaseStarted(cases[1].key)], Ended(3, "boom\nlast words")

    def the_rest(cases: list[CaseId]):  # noqa: ANN202
        return [Collected(tuple(cases)), *passing(cases), Finished()], Ended(0)

    adapter = scripted([dies_in_b1, the_rest])
    outcome = runner.run(adapter, request(tmp_path))
    assert statuses(outcome) == [("a", "", "pass"), ("b", "1", "error"), ("b", "2", "pass"), ("c", "", "pass")]
    assert outcome.cases[1].message == ("the test process exited with code 3 (exit() or a crash in the code "
                                        "under test) during this test: last words")
    assert adapter.skips == [frozenset(), frozenset({"t::a", "t::b[1]"})]


def test_a_signal_death_names_the_signal(tmp_path: Path) -> None:
    def killed(cases: list[CaseId]):  # noqa: ANN202
        return [Collected(tuple(cases)), CaseStarted(cases[0].key)], Ended(-9)

    def the_rest(cases: list[CaseId]):  # noqa: ANN202
        return [Collected(tuple(cases)), *passing(cases), Finished()], Ended(0)

    outcome = runner.run(scripted([killed, the_rest]), request(tmp_path))
    assert outcome.cases[0].message == "the test process was killed by SIGKILL during this test"


def test_a_test_past_its_deadline_is_stopped_and_the_rest_run(tmp_path: Path) -> None:
    def hangs_in_c(cases: list[CaseId]):  # noqa: ANN202
        return [Collected(tuple(cases)), *passing(cases[:3]), CaseStarted(cases[3].key), Hang()], Ended(-9)

    outcome = runner.run(scripted([hangs_in_c]), request(tmp_path))
    assert statuses(outcome)[-1] == ("c", "", "timeout")
    assert "did not finish within" in outcome.cases[-1].message and "--timeout" in outcome.cases[-1].message


# A worker that runs its cases in the order it collected them may say only when each ends
# (Collected(..., starts_said=False)): the runner then knows the case running from that order.


def finishing(cases: list[CaseId], status: Status = Status.PASS) -> list:
    return [CaseFinished(c.key, status) for c in cases]


def test_an_unannounced_worker_dying_blames_the_case_after_the_last_one_it_finished(tmp_path: Path) -> None:
    def dies_in_b1(cases: list[CaseId]):  # noqa: ANN202
        return [Collected(tuple(cases), starts_said=False), *finishing(cases[:1])], Ended(-9)

    def dies_at_once(cases: list[CaseId]):  # noqa: ANN202
        return [Collected(tuple(cases), starts_said=False)], Ended(3)

    def the_rest(cases: list[CaseId]):  # noqa: ANN202
        return [Collected(tuple(cases), starts_said=False), *finishing(cases), Finished()], Ended(0)

    adapter = scripted([dies_in_b1, dies_at_once, the_rest])
    outcome = runner.run(adapter, request(tmp_path))
    assert statuses(outcome) == [("a", "", "pass"), ("b", "1", "error"), ("b", "2", "error"), ("c", "", "pass")]
    assert outcome.cases[1].message == "the test process was killed by SIGKILL during this test"
    assert adapter.skips == [frozenset(), frozenset({"t::a", "t::b[1]"}), frozenset({"t::a", "t::b[1]", "t::b[2]"})]


def test_an_unannounced_case_past_its_deadline_is_the_one_stopped(tmp_path: Path) -> None:
    def hangs_in_b2(cases: list[CaseId]):  # noqa: ANN202
        return [Collected(tuple(cases), starts_said=False), *finishing(cases[:2]), Hang()], Ended(-9)

    def the_rest(cases: list[CaseId]):  # noqa: ANN202
        return [Collected(tuple(cases), starts_said=False), *finishing(cases), Finished()], Ended(0)

    outcome = runner.run(scripted([hangs_in_b2, the_rest]), request(tmp_path))
    assert statuses(outcome) == [("a", "", "pass"), ("b", "1", "pass"), ("b", "2", "timeout"), ("c", "", "pass")]


def test_an_unannounced_worker_that_ends_after_its_last_case_blames_no_case(tmp_path: Path) -> None:
    def ends_without_finished(cases: list[CaseId]):  # noqa: ANN202
        return [Collected(tuple(cases), starts_said=False), *finishing(cases)], Ended(1, "Fatal")

    outcome = runner.run(scripted([ends_without_finished]), request(tmp_path))
    assert [s for _, _, s in statuses(outcome)] == ["pass"] * 4
    assert outcome.problem == ""


def test_an_unannounced_timeout_skips_the_rest_of_its_test_and_blames_nothing_else(tmp_path: Path) -> None:
    def times_out_in_b1(cases: list[CaseId]):  # noqa: ANN202
        return [Collected(tuple(cases), starts_said=False), *finishing(cases[:1]),
                *finishing(cases[1:2], Status.TIMEOUT), Hang()], Ended(-9)

    def the_rest(cases: list[CaseId]):  # noqa: ANN202
        return [Collected(tuple(cases), starts_said=False), *finishing(cases), Finished()], Ended(0)

    outcome = runner.run(scripted([times_out_in_b1, the_rest]), request(tmp_path))
    assert statuses(outcome) == [("a", "", "pass"), ("b", "1", "timeout"), ("b", "2", "skip"), ("c", "", "pass")]


def test_a_problem_event_ends_the_run_with_its_message(tmp_path: Path) -> None:
    adapter = scripted([lambda cases: ([Problem("importing pkg.calc failed: ValueError: no")], Ended(0))])
    outcome = runner.run(adapter, request(tmp_path))
    assert outcome.problem == "importing pkg.calc failed: ValueError: no" and outcome.cases == []


def test_a_worker_that_ends_outside_any_test_is_restarted_while_it_makes_progress(tmp_path: Path) -> None:
    def one_then_gone(cases: list[CaseId]):  # noqa: ANN202
        return [Collected(tuple(cases)), *passing(cases[:1])], Ended(1, "Fatal")

    def nothing(cases: list[CaseId]):  # noqa: ANN202
        return [Collected(tuple(cases))], Ended(1, "Fatal again")

    adapter = scripted([one_then_gone, nothing])
    outcome = runner.run(adapter, request(tmp_path))
    assert statuses(outcome) == [("a", "", "pass")]
    assert outcome.problem == "the test process ended outside any test: Fatal again"


def test_the_catalog_gets_fixtures_and_a_scratch_folder_through_the_environment(tmp_path: Path) -> None:
    seen = {}

    @dataclass
    class Recording(ScriptedAdapter):
        def prepare(self, request: RunRequest) -> Prepared:
            seen.update(request.env)
            assert Path(request.env["COURSE_SCRATCH"]).is_dir(), "the scratch folder exists during the run"
            return Prepared()

    adapter = Recording([lambda cases: ([Collected(tuple(cases)), *passing(cases), Finished()], Ended(0))])
    runner.run(adapter, request(tmp_path))
    assert seen["COURSE_FIXTURES"].endswith("fixtures/none")
    assert not Path(seen["COURSE_SCRATCH"]).exists(), "the scratch folder is removed after the run"


@pytest.mark.parametrize("event", [
    Collected((CaseId("k", "e", "c"),)), Collected((CaseId("k", "e"),), starts_said=False), CaseStarted("k"),
    Problem("p"), Finished(),
    CaseFinished("k", Status.FAIL, message="m", where="f.py:1", test_line="t.py:2", details="d", output="o",
                 duration=0.5, failed_at="t.py:2 AssertionError"),
])
def test_events_cross_a_pipe_unchanged(event) -> None:  # noqa: ANN001
    assert decode(encode(event)) == event


class _Stuck:
    """A worker inside a test that never ends: it says nothing, waiting as a real one does, until killed."""

    def __init__(self, cases: list[CaseId]) -> None:
        self.events = [Collected(tuple(cases)), CaseStarted(cases[0].key)]
        self.killed = False

    def next_event(self, deadline):  # noqa: ANN001, ANN201
        import time

        if self.events:
            return self.events.pop(0)
        time.sleep(max(0.0, deadline - time.monotonic()))
        raise TimeoutError

    def kill(self) -> None:
        self.killed = True

    def close(self) -> Ended:
        return Ended(-9)


def test_a_run_asked_to_stop_is_given_up_its_worker_killed(tmp_path: Path) -> None:
    import time

    stuck: list[_Stuck] = []

    class Adapter(ScriptedAdapter):
        def start(self, request, prepared, skip):  # noqa: ANN001, ANN201
            stuck.append(_Stuck([CaseId("t::a", "a")]))
            return stuck[-1]

    asked: list[float] = []
    began = time.monotonic()

    def stop() -> bool:
        asked.append(time.monotonic())
        return time.monotonic() - began > 0.3

    slow = RunRequest(track=Track(chapter_id="none", language="scripted", files=()), code_root=tmp_path,
                      tests=("a",), timeout=30.0, build_dir=tmp_path)
    with pytest.raises(runner.Abandoned):
        runner.run(Adapter(), slow, stop=stop)
    assert stuck and stuck[0].killed, "the worker of a run given up is killed"
    assert time.monotonic() - began < 20, "given up long before the test's 30 s deadline"
    assert len(asked) >= 3, "asked again and again while the test ran, not only at its deadline"


def test_a_run_asked_to_stop_before_it_starts_starts_no_worker(tmp_path: Path) -> None:
    adapter = scripted([])
    with pytest.raises(runner.Abandoned):
        runner.run(adapter, request(tmp_path), stop=lambda: True)
    assert adapter.skips == [], "no worker started for a run given up before its code was prepared"


class _Hosting(ScriptedAdapter):
    """The scripted adapter, keeping each start()'s environment, and (when `hosts`) declaring that its
    workers start the fake model themselves (WorkerServices)."""

    def __init__(self, hosts: bool) -> None:
        super().__init__([])
        self.envs: list[dict[str, str]] = []
        if hosts:
            self.capabilities = {**self.capabilities, WorkerServices: self}

    def services_in_workers(self) -> frozenset[str]:
        return frozenset({"fake-model"})

    def start(self, request: RunRequest, prepared: Prepared, skip: frozenset[str]):  # noqa: ANN201
        self.envs.append(dict(request.env))
        return super().start(request, prepared, skip)


@pytest.mark.parametrize("hosts", [False, True], ids=["run-starts-it", "workers-host-it"])
def test_a_service_is_started_by_the_run_unless_the_workers_host_it(tmp_path: Path, hosts: bool) -> None:
    """A track's fake model is the run's, named in every worker's environment; where the adapter
    declares WorkerServices the run starts none and names none (each worker starts its own)."""
    track = Track(chapter_id="none", language="scripted", files=(), services=("fake-model",))
    adapter = _Hosting(hosts)
    outcome = runner.run(adapter, RunRequest(track=track, code_root=tmp_path, tests=("a",), timeout=1.0, build_dir=tmp_path))
    assert outcome.problem == "" and adapter.envs, outcome
    named = [env.get(FAKE_MODEL_VAR, "") for env in adapter.envs]
    if hosts:
        assert named == [""] * len(named), f"the run started a fake model its workers host: {named}"
    else:
        assert all(url.startswith("http://127.0.0.1:") for url in named), named

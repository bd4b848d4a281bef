"""Bad input gets one clear line and a documented exit code; broken learner code gets a verdict,
never a harness traceback."""

from __future__ import annotations

from pathlib import Path

from conftest import copy_reference
from test_learner_loop import CATALOG, CHAPTER, verdict_lines


def started_with_reference(course, learner: Path) -> None:
    assert course("start", CHAPTER, cwd=learner).code == 0
    copy_reference(CHAPTER, learner)


def append(path: Path, text: str) -> None:
    path.write_text(path.read_text() + "\n" + text)


def test_unknown_chapter_is_a_usage_error_listing_the_chapters(course, learner: Path) -> None:
    ran = course("start", "zz99", cwd=learner)
    assert ran.code == 2
    assert "unknown chapter 'zz99'" in ran.err and CHAPTER in ran.err
    assert "Traceback" not in ran.err
    assert not (learner / ".course.json").exists()


def test_outside_a_learner_repository_says_to_start(course, tmp_path: Path) -> None:
    for command in ("check", "diff", "show"):
        ran = course(command, cwd=tmp_path)
        assert ran.code == 2, (command, ran.err)
        assert "course start" in ran.err and "Traceback" not in ran.err


def test_a_chapter_not_started_is_a_usage_error(course, learner: Path) -> None:
    assert course("start", CHAPTER, cwd=learner).code == 0
    ran = course("check", "ag00", cwd=learner)
    assert ran.code == 2 and "not started" in ran.err


def test_a_corrupt_state_file_is_one_clear_error(course, learner: Path) -> None:
    (learner / ".course.json").write_text("{not json")
    ran = course("check", cwd=learner)
    assert ran.code == 2 and ".course.json" in ran.err and "Traceback" not in ran.err
    assert (learner / ".course.json").read_text() == "{not json", "the harness must not rewrite it"


def test_a_syntax_error_names_the_file_and_line_and_errors_every_test(course, learner: Path) -> None:
    started_with_reference(course, learner)
    types = learner / "agent" / "types.py"
    lines = len(types.read_text().splitlines())
    append(types, "def broken(:\n    pass\n")
    ran = course("check", cwd=learner)
    assert ran.code == 1
    assert f"agent/types.py:{lines + 2}: syntax error" in ran.out, ran.out
    assert [s for s, _ in verdict_lines(ran.out)] == ["ERROR"] * len(CATALOG)
    assert "Traceback" not in ran.out + ran.err


def test_a_hanging_test_times_out_and_the_others_still_run(course, learner: Path) -> None:
    started_with_reference(course, learner)
    append(learner / "agent" / "types.py", "def llm_step(iter):\n    while True:\n        pass\n")
    ran = course("check", "--timeout", "1", cwd=learner)
    assert ran.code == 1
    rows = dict((name, status) for status, name in verdict_lines(ran.out))
    assert rows["test_step_names"] == "TIMEOUT", ran.out
    assert [n for n in CATALOG if rows[n] != "PASS"] == ["test_step_names"], ran.out
    assert "longer than 1 s" in ran.out


def test_code_that_exits_the_interpreter_is_an_error_verdict(course, learner: Path) -> None:
    started_with_reference(course, learner)
    append(learner / "agent" / "types.py", "def tool_step(iter, i, name):\n    import os\n    os._exit(3)\n")
    ran = course("check", cwd=learner)
    assert ran.code == 1
    rows = dict((name, status) for status, name in verdict_lines(ran.out))
    assert rows["test_step_names"] == "ERROR" and "exited with code 3" in ran.out, ran.out
    assert sum(s == "PASS" for s in rows.values()) == len(CATALOG) - 1, "the other tests must still run"
    assert "Traceback" not in ran.err


def test_sys_exit_in_learner_code_is_an_error_not_a_crash(course, learner: Path) -> None:
    started_with_reference(course, learner)
    append(learner / "agent" / "types.py", "def collect(deltas):\n    import sys\n    sys.exit(4)\n")
    ran = course("check", cwd=learner)
    assert ran.code == 1
    assert "the code called sys.exit(4)" in ran.out, ran.out
    assert "Traceback" not in ran.err


def test_bad_options_are_usage_errors(course, learner: Path) -> None:
    assert course("start", CHAPTER, cwd=learner).code == 0
    ran = course("check", "--timeout", "-3", cwd=learner)
    assert ran.code == 2 and "Traceback" not in ran.err


def test_check_runs_from_the_learners_agent_folder_whose_types_py_shadows_the_stdlib(course, learner: Path) -> None:
    import subprocess
    import sys

    started_with_reference(course, learner)
    # The installed command, as a learner runs it (`python -m` would itself put agent/ first on the
    # path); the fork server and workers it starts must not pick up agent/types.py either.
    command = Path(sys.executable).with_name("course")
    assert command.is_file(), f"{command} is not installed: `pip install -e .` first"
    ran = subprocess.run([str(command), "check"], cwd=learner / "agent", capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "Traceback" not in ran.stderr


def test_a_selection_that_matches_nothing_is_a_usage_error(course, learner: Path) -> None:
    assert course("start", CHAPTER, cwd=learner).code == 0
    nothing = course("check", "-k", "no_such_test", cwd=learner)
    assert nothing.code == 2 and "no catalog test matches -k 'no_such_test'" in nothing.err
    broken = course("check", "-k", "bad(((", cwd=learner)
    assert broken.code == 2 and "not a valid test selection" in broken.err


def test_a_report_path_in_a_missing_folder_is_refused_before_running(course, learner: Path, tmp_path: Path) -> None:
    assert course("start", CHAPTER, cwd=learner).code == 0
    ran = course("check", "--json", str(tmp_path / "nowhere" / "results.json"), cwd=learner)
    assert ran.code == 2 and "cannot write" in ran.err and "Traceback" not in ran.err
    assert "PASS" not in ran.out and "FAIL" not in ran.out, "it must refuse before running the tests"


def test_a_wrong_result_reported_by_pytest_raises_is_a_fail_not_an_error(course, learner: Path) -> None:
    started_with_reference(course, learner)
    retry = learner / "agent" / "provider" / "retry.py"
    append(retry, "def retryable(error):\n    return True\n")  # retries a 400: pytest.raises sees no APIError
    ran = course("check", "-k", "api_error_not_retried", cwd=learner)
    assert ran.code == 1
    assert ("FAIL", "test_api_error_not_retried") in verdict_lines(ran.out), ran.out


def test_code_that_swallows_the_timer_is_stopped_by_the_supervisor(course, learner: Path) -> None:
    started_with_reference(course, learner)
    stubborn = "def llm_step(iter):\n    while True:\n        try:\n            while True:\n                pass\n        except BaseException:\n            continue\n"
    append(learner / "agent" / "types.py", stubborn)
    ran = course("check", "--timeout", "0.5", "-k", "step_names", cwd=learner)
    assert ran.code == 1
    assert ("TIMEOUT", "test_step_names") in verdict_lines(ran.out), ran.out


def test_a_state_file_with_wrong_types_is_one_clear_error(course, learner: Path) -> None:
    (learner / ".course.json").write_text('{"version": 1, "current": 5, "chapters": {}}')
    ran = course("check", cwd=learner)
    assert ran.code == 2 and "'current' must be a chapter id" in ran.err and "Traceback" not in ran.err
    (learner / ".course.json").write_text('{"version": 99, "chapters": {}}')
    ran = course("list", cwd=learner)
    assert ran.code == 2 and "newer course" in ran.err


def test_a_file_where_a_folder_should_be_is_reported_and_nothing_is_lost(course, learner: Path) -> None:
    (learner / "agent").write_text("my notes\n")
    ran = course("start", CHAPTER, cwd=learner)
    assert ran.code == 2 and "FAILED" in ran.out and "Traceback" not in ran.err
    assert (learner / "agent").read_text() == "my notes\n"


def test_code_that_hangs_at_import_time_is_one_clear_error(course, learner: Path) -> None:
    started_with_reference(course, learner)
    append(learner / "agent" / "provider" / "retry.py", "while True:\n    pass\n")
    ran = course("check", "--timeout", "1", cwd=learner, timeout=60)
    assert ran.code == 1
    lines = len((learner / "agent" / "provider" / "retry.py").read_text().splitlines())
    loop = {f"agent/provider/retry.py:{n}: importing" for n in (lines - 1, lines)}  # the while or the pass
    assert any(place in ran.out for place in loop), ran.out
    assert "took longer than 1 s" in ran.out, ran.out


def test_a_thread_left_running_does_not_hold_the_check(course, learner: Path) -> None:
    import time

    started_with_reference(course, learner)
    append(learner / "agent" / "types.py",
           "import threading as _t, time as _time\n_t.Thread(target=_time.sleep, args=(60,)).start()\n")
    started = time.monotonic()
    ran = course("check", cwd=learner, timeout=60)
    assert ran.code == 0, ran.out + ran.err
    assert time.monotonic() - started < 30, "the check waited for a thread the learner's code left running"


def test_processes_started_by_tests_do_not_outlive_the_check(course, learner: Path, tmp_path: Path) -> None:
    import subprocess

    started_with_reference(course, learner)
    marker = f"course-harness-test-{tmp_path.name}"
    append(learner / "agent" / "types.py",
           f"import subprocess as _sp\n_sp.Popen(['sh', '-c', 'exec -a {marker} sleep 60'])\n")
    assert course("check", "-k", "step_names", cwd=learner, timeout=60).code == 0
    left = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True).stdout.split()
    assert not left, f"processes left running: {left}"

"""Bad input gets one clear line and a documented exit code; broken learner code gets a verdict,
never a harness traceback. On the synthetic chapter (conftest.SYNTHETIC), except where a real
chapter's layout is the point."""

from __future__ import annotations

from pathlib import Path

from conftest import SYN, SYN_CATALOG, copy_reference, start_in_process, syn_reference
from test_learner_loop import verdict_lines


def started_with_reference(syn, learner: Path, content: Path) -> Path:  # noqa: ANN001
    start_in_process(content, learner)
    syn_reference(content, learner)
    return learner / "pkg" / "calc.py"


def append(path: Path, text: str) -> None:
    path.write_text(path.read_text() + "\n" + text)


def test_unknown_chapter_is_a_usage_error_listing_the_chapters(syn, learner: Path) -> None:
    ran = syn("start", "zz99", cwd=learner)
    assert ran.code == 2
    assert "unknown chapter 'zz99'" in ran.err and SYN in ran.err
    assert "Traceback" not in ran.err
    assert not (learner / ".course.json").exists()


def test_outside_a_learner_repository_says_to_start(syn, tmp_path: Path) -> None:
    for command in ("check", "diff", "show"):
        ran = syn(command, cwd=tmp_path)
        assert ran.code == 2, (command, ran.err)
        assert "course start" in ran.err and "Traceback" not in ran.err


def test_a_chapter_not_started_is_a_usage_error(course, learner: Path) -> None:
    assert course("start", "ag00", cwd=learner).code == 0
    ran = course("check", "ag01", cwd=learner)
    assert ran.code == 2 and "not started" in ran.err


def test_a_corrupt_state_file_is_one_clear_error(syn, learner: Path) -> None:
    (learner / ".course.json").write_text("{not json")
    ran = syn("check", cwd=learner)
    assert ran.code == 2 and ".course.json" in ran.err and "Traceback" not in ran.err
    assert (learner / ".course.json").read_text() == "{not json", "the harness must not rewrite it"


def test_a_syntax_error_names_the_file_and_line_and_errors_every_test(syn, learner: Path, content: Path) -> None:
    calc = started_with_reference(syn, learner, content)
    lines = len(calc.read_text().splitlines())
    append(calc, "def broken(:\n    pass\n")
    ran = syn("check", cwd=learner)
    assert ran.code == 1
    assert f"pkg/calc.py:{lines + 2}: syntax error" in ran.out, ran.out
    assert [s for s, _ in verdict_lines(ran.out)] == ["ERROR"] * len(SYN_CATALOG)
    assert "Traceback" not in ran.out + ran.err


def test_a_hanging_test_times_out_and_the_others_still_run(syn, learner: Path, content: Path) -> None:
    calc = started_with_reference(syn, learner, content)
    append(calc, "def total(numbers):\n    while True:\n        pass\n")
    ran = syn("check", "--timeout", "0.5", cwd=learner)
    assert ran.code == 1
    rows = {name: status for status, name in verdict_lines(ran.out)}
    assert [n for n in SYN_CATALOG if rows[n] != "PASS"] == ["test_total_of_the_fixture", "test_scratch_round_trip"], ran.out
    assert rows["test_total_of_the_fixture"] == "TIMEOUT" and "longer than 0.5 s" in ran.out, ran.out


def test_code_that_exits_the_interpreter_is_an_error_verdict(syn, learner: Path, content: Path) -> None:
    calc = started_with_reference(syn, learner, content)
    append(calc, "def total(numbers):\n    import os\n    os._exit(3)\n")
    ran = syn("check", cwd=learner)
    assert ran.code == 1
    rows = {name: status for status, name in verdict_lines(ran.out)}
    assert rows["test_total_of_the_fixture"] == "ERROR" and "exited with code 3" in ran.out, ran.out
    assert rows["test_add"] == rows["test_add_cases"] == "PASS", "the other tests must still run"
    assert "Traceback" not in ran.err


def test_sys_exit_in_learner_code_is_an_error_not_a_crash(syn, learner: Path, content: Path) -> None:
    calc = started_with_reference(syn, learner, content)
    append(calc, "def add(a, b):\n    import sys\n    sys.exit(4)\n")
    ran = syn("check", "-k", "add", cwd=learner)
    assert ran.code == 1
    assert "the code called sys.exit(4)" in ran.out, ran.out
    assert "Traceback" not in ran.err


def test_bad_options_are_usage_errors(syn, learner: Path, content: Path) -> None:
    start_in_process(content, learner)
    ran = syn("check", "--timeout", "-3", cwd=learner)
    assert ran.code == 2 and "Traceback" not in ran.err


def test_check_runs_from_the_learners_agent_folder_whose_types_py_shadows_the_stdlib(course, learner: Path) -> None:
    import subprocess
    import sys

    assert course("start", "ag01", cwd=learner).code == 0
    copy_reference("ag01", learner)
    # The installed command, as a learner runs it (`python -m` would itself put agent/ first on the
    # path); the fork server and workers it starts must not pick up agent/types.py either.
    command = Path(sys.executable).with_name("course")
    assert command.is_file(), f"{command} is not installed: `pip install -e .` first"
    ran = subprocess.run([str(command), "check"], cwd=learner / "agent", capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "Traceback" not in ran.stderr


def test_a_selection_that_matches_nothing_is_a_usage_error(syn, learner: Path, content: Path) -> None:
    start_in_process(content, learner)
    nothing = syn("check", "-k", "no_such_test", cwd=learner)
    assert nothing.code == 2 and "no catalog test matches -k 'no_such_test'" in nothing.err
    broken = syn("check", "-k", "bad(((", cwd=learner)
    assert broken.code == 2 and "not a valid test selection" in broken.err
    assert "PASS" not in nothing.out + broken.out and "FAIL" not in nothing.out + broken.out


def test_a_report_path_in_a_missing_folder_is_refused_before_running(syn, learner: Path, content: Path, tmp_path: Path) -> None:
    start_in_process(content, learner)
    ran = syn("check", "--json", str(tmp_path / "nowhere" / "results.json"), cwd=learner)
    assert ran.code == 2 and "cannot write" in ran.err and "Traceback" not in ran.err
    assert "PASS" not in ran.out and "FAIL" not in ran.out, "it must refuse before running the tests"


def test_a_wrong_result_reported_by_pytest_raises_is_a_fail_not_an_error(syn, learner: Path, content: Path) -> None:
    started_with_reference(syn, learner, content)
    tests = content / "tests" / "python" / SYN / "test_syn.py"
    tests.write_text(tests.read_text().replace(
        'def test_add() -> None:\n',
        'def test_add() -> None:\n    with pytest.raises(TypeError):\n        calc.add(1, 2)\n'))
    ran = syn("check", "-k", "test_add and not cases", cwd=learner)
    assert ran.code == 1
    assert ("FAIL", "test_add") in verdict_lines(ran.out), ran.out


def test_code_that_swallows_the_timer_is_stopped_by_the_runner(syn, learner: Path, content: Path) -> None:
    calc = started_with_reference(syn, learner, content)
    stubborn = ("def add(a, b):\n    while True:\n        try:\n            while True:\n                pass\n"
                "        except BaseException:\n            continue\n")
    append(calc, stubborn)
    ran = syn("check", "--timeout", "0.3", "-k", "test_add and not cases", cwd=learner)
    assert ran.code == 1
    assert ("TIMEOUT", "test_add") in verdict_lines(ran.out), ran.out


def test_a_state_file_with_wrong_types_is_one_clear_error(syn, learner: Path) -> None:
    (learner / ".course.json").write_text('{"version": 1, "current": 5, "chapters": {}}')
    ran = syn("check", cwd=learner)
    assert ran.code == 2 and "'current' must be a chapter id" in ran.err and "Traceback" not in ran.err
    (learner / ".course.json").write_text('{"version": 99, "chapters": {}}')
    ran = syn("list", cwd=learner)
    assert ran.code == 2 and "newer course" in ran.err


def test_a_file_where_a_folder_should_be_is_reported_and_nothing_is_lost(syn, learner: Path) -> None:
    (learner / "pkg").write_text("my notes\n")
    ran = syn("start", SYN, cwd=learner)
    assert ran.code == 2 and "FAILED" in ran.out and "Traceback" not in ran.err
    assert (learner / "pkg").read_text() == "my notes\n"


def test_code_that_hangs_at_import_time_is_one_clear_error(syn, learner: Path, content: Path) -> None:
    calc = started_with_reference(syn, learner, content)
    append(calc, "while True:\n    pass\n")
    ran = syn("check", "--timeout", "0.5", cwd=learner)
    assert ran.code == 1
    lines = len(calc.read_text().splitlines())
    loop = {f"pkg/calc.py:{n}: importing" for n in (lines - 1, lines)}  # the while or the pass
    assert any(place in ran.out for place in loop), ran.out
    assert "took longer than 0.5 s" in ran.out, ran.out


def test_a_thread_left_running_does_not_hold_the_check(syn, learner: Path, content: Path) -> None:
    import time

    calc = started_with_reference(syn, learner, content)
    append(calc, "import threading as _t, time as _time\n_t.Thread(target=_time.sleep, args=(60,)).start()\n")
    started = time.monotonic()
    ran = syn("check", cwd=learner)
    assert ran.code == 0, ran.out + ran.err
    assert time.monotonic() - started < 30, "the check waited for a thread the learner's code left running"


def test_processes_started_by_tests_do_not_outlive_the_check(syn, learner: Path, content: Path, tmp_path: Path) -> None:
    import subprocess

    calc = started_with_reference(syn, learner, content)
    marker = f"course-harness-test-{tmp_path.name}"
    append(calc, f"import subprocess as _sp\n_sp.Popen(['sh', '-c', 'exec -a {marker} sleep 60'])\n")
    assert syn("check", "-k", "test_add and not cases", cwd=learner).code == 0
    left = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True).stdout.split()
    assert not left, f"processes left running: {left}"


def test_a_missing_learner_file_is_one_clear_error(syn, learner: Path, content: Path) -> None:
    start_in_process(content, learner)
    (learner / "pkg" / "calc.py").unlink()
    ran = syn("check", cwd=learner)
    assert ran.code == 1 and "pkg/calc.py is missing" in ran.out and "course start" in ran.out, ran.out
    assert "Traceback" not in ran.out + ran.err


def test_option_errors_are_one_line_like_every_usage_error(course, tmp_path: Path) -> None:
    for args, words in ((("check", "--timeout", "0"), "--timeout"), (("check", "--language", "cobol"), "--language"),
                        (("fake-model", "--port", "70000"), "--port"), (("nosuchcommand",), "nosuchcommand")):
        ran = course(*args, cwd=tmp_path)
        lines = ran.err.strip().splitlines()
        assert ran.code == 2 and len(lines) == 1 and words in lines[0] and "--help" in lines[0], (args, ran.err)


def test_a_track_a_chapter_lacks_is_a_usage_error_in_every_reading_command(course, tmp_path: Path) -> None:
    for command in ("tests", "show"):
        ran = course(command, "ag02", "--language", "typescript", cwd=tmp_path)
        assert ran.code == 2 and "ag02 has no typescript track" in ran.err and "Traceback" not in ran.err, (command, ran.err)


def test_a_second_track_of_a_started_chapter_needs_its_own_repository(course, learner: Path) -> None:
    assert course("start", "ag01", cwd=learner).code == 0
    before = sorted(p.relative_to(learner) for p in learner.rglob("*"))
    state = (learner / ".course.json").read_bytes()
    ran = course("start", "ag01", "--language", "go", cwd=learner)
    assert ran.code == 2 and "started here in its python track" in ran.err and len(ran.err.strip().splitlines()) == 1, ran.err
    assert sorted(p.relative_to(learner) for p in learner.rglob("*")) == before, "nothing written"
    assert (learner / ".course.json").read_bytes() == state, "the python track's progress is kept as it was"


# -- the write limit: a runaway loop writing into the repository ------------------------------------------

RUNAWAY = ("def _runaway():\n    with open('runaway.log', 'w') as log:\n        while True:\n"
           "            log.write('x' * 65536)\n")


def test_a_test_that_writes_without_end_is_stopped_at_the_write_limit(syn, learner: Path, content: Path) -> None:
    calc = started_with_reference(syn, learner, content)
    calc.write_text(calc.read_text().replace('    """The sum of a and b."""\n', '    """The sum of a and b."""\n    _runaway()\n')
                    + "\n\n" + RUNAWAY)
    ran = syn("check", "-k", "test_add and not cases", "--max-file-size", "1", "--timeout", "60", cwd=learner)
    assert ran.code == 1, ran.out + ran.err
    assert "write limit (1 MB per file)" in ran.out and "--max-file-size MB" in ran.out, ran.out
    assert (learner / "runaway.log").stat().st_size <= 2**20, "the file stopped growing at the limit"
    assert "importing" not in ran.out, ran.out

    (learner / "runaway.log").unlink()
    ran = syn("check", "-k", "test_add and not cases", "--timeout", "60", cwd=learner)  # the default limit
    assert ran.code == 1 and "write limit (64 MB per file)" in ran.out, ran.out
    assert (learner / "runaway.log").stat().st_size <= 64 * 2**20


def test_a_write_without_end_at_import_time_is_blamed_on_its_file_and_the_limit(syn, learner: Path, content: Path) -> None:
    calc = started_with_reference(syn, learner, content)
    (learner / "pkg" / "log.py").write_text(RUNAWAY + "\n\n_runaway()\n")
    append(calc, "from pkg import log  # noqa: F401, E402\n")
    ran = syn("check", "--max-file-size", "1", "--timeout", "60", cwd=learner)
    assert ran.code == 1, ran.out + ran.err
    problem = next(line for line in ran.out.splitlines() if "write limit" in line)
    assert problem.strip().startswith(("pkg/log.py:2: a file it wrote reached the write limit (1 MB per file)",
                                       "pkg/log.py:4: a file it wrote reached the write limit (1 MB per file)")), problem
    assert "(in pkg.log, run as pkg.calc was imported)" in problem, problem


def test_an_import_failure_names_the_module_whose_line_failed(syn, learner: Path, content: Path) -> None:
    calc = started_with_reference(syn, learner, content)
    (learner / "pkg" / "helper.py").write_text("VALUE = 1 / 0\n")
    append(calc, "from pkg import helper  # noqa: F401, E402\n")
    ran = syn("check", cwd=learner)
    assert ran.code == 1
    assert ("pkg/helper.py:1: ZeroDivisionError: division by zero (in pkg.helper, run as pkg.calc was imported)"
            in ran.out), ran.out
    assert "importing pkg.calc failed" not in ran.out, "the import that failed is helper's, not calc's"
    append(calc, "VALUE = 1 / 0\n")
    (learner / "pkg" / "helper.py").write_text("")
    ran = syn("check", cwd=learner)
    assert f"pkg/calc.py:{len(calc.read_text().splitlines())}: importing pkg.calc failed: ZeroDivisionError" in ran.out, ran.out


def test_output_cut_to_its_last_part_says_so(syn, learner: Path, content: Path) -> None:
    calc = started_with_reference(syn, learner, content)
    calc.write_text(calc.read_text().replace('    """The sum of a and b."""\n',
                                             '    """The sum of a and b."""\n    print(("line %05d " % 0) * 3000)\n'
                                             '    for i in range(1, 2000):\n        print("line %05d" % i)\n'
                                             '    return a - b\n'))
    ran = syn("check", "-k", "test_add and not cases", "-v", cwd=learner)
    assert ran.code == 1, ran.out
    assert "characters this test printed are left out; its last" in ran.out, ran.out[-3000:]
    assert "line 01999" in ran.out and "line 00001\n" not in ran.out, "the end is kept"


def test_each_tests_line_is_shown_as_it_ends_even_when_nothing_passes(content: Path, learner: Path) -> None:
    """A long check on failing code: the first tests' lines come while the slow ones still run
    (they were once held back until something passed, so fresh stubs printed nothing until the end)."""
    import os
    import subprocess
    import sys
    import time

    from conftest import REPO

    calc = started_with_reference(None, learner, content)
    calc.write_text(calc.read_text().replace("return a + b", "return a - b")
                    .replace("    result = 0\n", "    __import__('time').sleep(4)\n    result = 1\n"))
    env = {**os.environ, "NO_COLOR": "1", "PYTHONPATH": str(REPO), "COURSE_CONTENT": str(content)}
    began = time.monotonic()
    process = subprocess.Popen([sys.executable, "-m", "course", "check", "--timeout", "30"], cwd=learner, env=env,
                               stdout=subprocess.PIPE, text=True)
    seen: dict[str, float] = {}
    for line in process.stdout:
        seen.setdefault(line.strip(), time.monotonic() - began)
    ended = time.monotonic() - began
    assert process.wait() == 1
    first = seen.get("FAIL    test_add")
    assert first is not None, seen
    assert first < ended - 2.5, f"test_add's line came at {first:.1f} s, the check ended at {ended:.1f} s"

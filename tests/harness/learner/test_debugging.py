"""Debugging one test: `course check --pdb TEST` and `course check -s` run it alone with the learner's
terminal attached (a pseudo-terminal here), in both tracks; a normal check that meets breakpoint() or
input() says how to get there, in the harness's own options."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from conftest import start_in_process, syn_reference
from test_watch import Screen
from tiny import CHAPTER, GO_REFERENCE, GO_SUM_TEST, tiny_go_chapter

needs_go = pytest.mark.skipif(shutil.which("go") is None, reason="the Go track needs Go on PATH")


def _syn_with(content: Path, learner: Path, body: str) -> None:
    """The synthetic chapter started, its reference in place, add() doing `body` first."""
    start_in_process(content, learner)
    syn_reference(content, learner)
    calc = learner / "pkg" / "calc.py"
    calc.write_text(calc.read_text().replace('    """The sum of a and b."""\n', f'    """The sum of a and b."""\n{body}'))


def test_pdb_stops_at_a_breakpoint_with_the_terminal_attached(content: Path, learner: Path) -> None:
    _syn_with(content, learner, "    breakpoint()\n")
    screen = Screen(["check", "--pdb", "test_add"], learner, env={"COURSE_CONTENT": str(content)})
    try:
        screen.wait_for(lambda t: "(Pdb)" in t, 120)
        assert "alone, with your terminal attached" in screen.text, screen.text
        screen.press("p a * 100 + b\n")
        screen.wait_for(lambda t: "203" in t)
        screen.press("c\n")
        assert screen.process.wait(timeout=60) == 0, "the test passes once continued: exit 0\n" + screen.text
        screen.read(0.2)
        assert "1 passed" in screen.text, screen.text
    finally:
        screen.close()


def test_s_gives_input_the_terminal_and_shows_prints_as_they_happen(content: Path, learner: Path) -> None:
    _syn_with(content, learner, "    print('asking')\n    if input('sure? ') != 'yes':\n        return 0\n")
    screen = Screen(["check", "-s", "-k", "test_add_cases"], learner, env={"COURSE_CONTENT": str(content)})
    try:
        screen.wait_for(lambda t: "sure? " in t, 120)
        assert "asking" in screen.text, "a print before the question is on screen already"
        for _ in range(8):  # eight cases, each asks
            screen.press("yes\n")
            screen.read(0.5)
        assert screen.process.wait(timeout=60) == 0, screen.text
    finally:
        screen.close()


def test_a_check_that_meets_breakpoint_says_how_to_debug_it(syn, content: Path, learner: Path) -> None:
    _syn_with(content, learner, "    breakpoint()\n")
    ran = syn("check", "-k", "test_add and not cases", cwd=learner)
    assert ran.code == 1, ran.out
    assert "`course check --pdb test_add`" in ran.out and "it read from the terminal" in ran.out, ran.out
    assert "-s`" not in ran.out and "Consider using" not in ran.out, "pytest's advice names an option check lacks"


def test_s_needs_exactly_one_test(syn, content: Path, learner: Path) -> None:
    _syn_with(content, learner, "")
    many = syn("check", "-s", "-k", "add_cases or total", cwd=learner)
    assert many.code == 2 and "matches 2 (test_add_cases, test_total_of_the_fixture)" in many.err, many.err
    exact = syn("check", "-s", "-k", "test_add", cwd=learner)  # a name that is also part of another's
    assert exact.code == 0 and "test_add alone" in exact.err, exact.out + exact.err
    nothing = syn("check", "-s", cwd=learner)
    assert nothing.code == 2 and "name it with -k" in nothing.err, nothing.err
    assert syn("check", "--pdb", "test_add", "--json", "r.json", cwd=learner).code == 2
    unknown = syn("check", "--pdb", "test_nope", cwd=learner)
    assert unknown.code == 2 and "has no test 'test_nope'" in unknown.err, unknown.err


@needs_go
def test_go_runs_the_test_alone_and_prints_how_to_debug_it(course, learner: Path, tmp_path: Path) -> None:
    root = tiny_go_chapter(tmp_path / "content", tests=GO_SUM_TEST, reference=GO_REFERENCE)
    env = {"COURSE_CONTENT": str(root)}
    assert course("start", CHAPTER, "--language", "go", cwd=learner, env=env).code == 0
    (learner / "go" / "calc" / "calc.go").write_text(GO_REFERENCE.replace("return a + b", 'println("adding")\n\treturn a + b'))
    ran = course("check", "-s", "-k", "sum", cwd=learner, env=env, timeout=600)
    assert ran.code == 0, ran.out + ran.err
    assert "=== RUN   TestSum" in ran.out and "--- PASS: TestSum" in ran.out and "adding" in ran.out + ran.err, ran.out

    shown = course("check", "--pdb", "TestSum", cwd=learner, env=env, timeout=600)
    assert shown.code == 0, shown.out + shown.err
    dlv = next(line for line in shown.out.splitlines() if "dlv test" in line)
    assert "dlv test ./calc" in dlv and "-test.run '^TestSum$'" in dlv and "COURSE_FIXTURES=" in dlv, dlv
    overlay = Path(re.search(r"-overlay=(\S+?)'?\s", dlv).group(1))
    replaced = json.loads(overlay.read_text())["Replace"]
    assert any(path.endswith("calc/calc_test.go") for path in replaced), replaced
    assert "go test -count=1 -v -overlay" in shown.out, shown.out

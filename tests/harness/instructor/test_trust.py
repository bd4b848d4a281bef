"""Verify's trust checks on a tiny chapter: the shuffled run, the coverage gate, `check --coverage`."""

from __future__ import annotations

from pathlib import Path

import yaml

from tiny import CHAPTER, tiny_chapter

from course.languages.python.worker import shuffled_rank

# Two tests where the second passes only after the first has run: the order-dependence the
# shuffled run exists to catch.
ORDER_DEPENDENT = """\
seen = []


def test_first():
    seen.append(calc.add(1, 2))
    assert seen == [3], f"seen: {seen}"


def test_second():
    assert seen == [3], f"test_second relies on test_first having run: seen {seen}"
"""

REFERENCE = """\
def add(a, b):
    return a + b
"""


def seed_where(first: str, then: str) -> int:
    """A seed whose shuffled order runs test `first` before test `then`."""
    node = "test_tiny.py::test_{}"
    return next(seed for seed in range(100)
                if shuffled_rank(seed, node.format(first)) < shuffled_rank(seed, node.format(then)))


def test_the_shuffled_run_catches_a_test_that_needs_an_earlier_one(course, tmp_path: Path) -> None:
    root = tiny_chapter(tmp_path / "content", tests=ORDER_DEPENDENT, reference=REFERENCE)
    env = {"COURSE_CONTENT": str(root)}
    bad = seed_where("second", "first")
    ran = course("verify", CHAPTER, "--seed", str(bad), cwd=tmp_path, env=env)
    assert ran.code == 1, ran.out + ran.err
    assert "ok   reference 2 of 2 tests pass" in ran.out, ran.out
    line = next((l for l in ran.out.splitlines() if "shuffled" in l), "")
    assert "FAIL" in line and "these fail only in this order: second" in line, ran.out
    assert f"seed {bad}" in line and f"course verify {CHAPTER} --seed {bad}" in line, line

    good = seed_where("first", "second")
    ran = course("verify", CHAPTER, "--seed", str(good), cwd=tmp_path, env=env)
    line = next((l for l in ran.out.splitlines() if "shuffled" in l), "")
    assert "ok" in line and "2 of 2 tests pass in a shuffled order" in line, ran.out

    # without --seed the seed comes from the catalog's files: printed, and the same run after run
    first = course("verify", CHAPTER, cwd=tmp_path, env=env).out
    again = course("verify", CHAPTER, cwd=tmp_path, env=env).out
    shuffled = [l for l in first.splitlines() if "shuffled" in l]
    assert shuffled and "seed " in shuffled[0], first
    assert shuffled == [l for l in again.splitlines() if "shuffled" in l], (first, again)


BRANCHY = """\
def add(a, b):
    if a < 0:
        a = -a
        b = b
    return a + b


def unused():
    return 1
"""


def test_check_coverage_names_the_lines_no_test_ran(course, learner: Path, tmp_path: Path) -> None:
    tests = "def test_adds():\n    assert calc.add(1, 2) == 3, 'add(1, 2)'\n"
    root = tiny_chapter(tmp_path / "content", tests=tests, reference=REFERENCE)
    env = {"COURSE_CONTENT": str(root)}
    assert course("start", CHAPTER, cwd=learner, env=env).code == 0
    (learner / "calc.py").write_text(BRANCHY)

    plain = course("check", cwd=learner, env=env)
    assert plain.code == 0, plain.out + plain.err
    assert "coverage:" not in plain.out, plain.out

    ran = course("check", "--coverage", cwd=learner, env=env)
    assert ran.code == 0, ran.out + ran.err
    lines = ran.out.splitlines()
    assert any(l.startswith("coverage: lines of your files that the catalog never ran") for l in lines), ran.out
    assert "  calc.py: 3-4, 9" in lines, ran.out

    (learner / "calc.py").write_text(REFERENCE)
    ran = course("check", "--coverage", cwd=learner, env=env)
    assert "coverage: the catalog ran every line and branch of your files" in ran.out, ran.out


ADDS = "def test_adds():\n    assert calc.add(1, 2) == 3, 'add(1, 2)'\n"


def finding(out: str, step: str) -> list[str]:
    """verify's line for one step, with the lines that continue it."""
    lines = out.splitlines()
    start = next((i for i, l in enumerate(lines) if l[7:].startswith(step)), None)
    if start is None:
        return []
    rest = [l for l in lines[start + 1:]]
    more = next((i for i, l in enumerate(rest) if not l.startswith(" " * 17)), len(rest))
    return [lines[start]] + [l.strip() for l in rest[:more]]


def test_the_coverage_gate_fails_a_reference_with_an_untested_branch(course, tmp_path: Path) -> None:
    root = tiny_chapter(tmp_path / "content", tests=ADDS, reference=BRANCHY)
    ran = course("verify", CHAPTER, cwd=tmp_path, env={"COURSE_CONTENT": str(root)})
    assert ran.code == 1, ran.out + ran.err
    step = finding(ran.out, "coverage")
    assert step and "FAIL" in step[0], ran.out
    assert "branch coverage of the reference by its catalog: " in step[0], step
    assert "55.6% (1 of 2 branches, 4 of 7 lines)" in step[0], step
    assert step[1:] == ["calc.py: 3-4, 9"], step

    # a track short of 100% may record its floor: verify holds it there, and still lists the gaps
    manifest = root / "chapters" / CHAPTER / "chapter.yaml"
    data = yaml.safe_load(manifest.read_text())
    data["tracks"]["python"]["coverage_floor"] = 55
    manifest.write_text(yaml.safe_dump(data, sort_keys=False))
    ran = course("verify", CHAPTER, cwd=tmp_path, env={"COURSE_CONTENT": str(root)})
    step = finding(ran.out, "coverage")
    assert ran.code == 0 and "ok" in step[0] and "(this track's floor: 55%" in step[0], ran.out
    assert step[1:] == ["calc.py: 3-4, 9"], step
    data["tracks"]["python"]["coverage_floor"] = 60
    manifest.write_text(yaml.safe_dump(data, sort_keys=False))
    ran = course("verify", CHAPTER, cwd=tmp_path, env={"COURSE_CONTENT": str(root)})
    step = finding(ran.out, "coverage")
    assert ran.code == 1 and "FAIL" in step[0] and "(below this track's floor of 60%)" in step[0], ran.out

    # the same gaps, each excluded with a reason, pass; an exclusion without one is named
    explained = BRANCHY.replace("    if a < 0:", "    if a < 0:  # pragma: no branch - negative input is the caller's bug") \
        .replace("        a = -a", "        a = -a  # pragma: no cover - kept for the demonstration only") \
        .replace("        b = b", "        b = b  # pragma: no cover - kept for the demonstration only") \
        .replace("def unused():", "def unused():  # pragma: no cover")
    root = tiny_chapter(tmp_path / "content", tests=ADDS, reference=explained)
    ran = course("verify", CHAPTER, cwd=tmp_path, env={"COURSE_CONTENT": str(root)})
    step = finding(ran.out, "coverage")
    assert "FAIL" in step[0] and "100%" in step[0], step
    assert step[1:] == ["calc.py:8: `# pragma: no cover` without a reason (say on the same line why no test runs it)"], step

    root = tiny_chapter(tmp_path / "content", tests=ADDS,
                        reference=explained.replace("def unused():  # pragma: no cover",
                                                    "def unused():  # pragma: no cover - an example of dead code"))
    ran = course("verify", CHAPTER, cwd=tmp_path, env={"COURSE_CONTENT": str(root)})
    assert ran.code == 0, ran.out + ran.err
    assert "ok   coverage  branch coverage of the reference by its catalog: 100%" in ran.out, ran.out


def test_verify_names_a_stated_in_that_points_nowhere(course, tmp_path: Path) -> None:
    places = [{"section": "Rules"}, {"section": "No such heading"}, {"docstring": "calc.py::add"},
              {"docstring": "calc.py::subtract"}, {"docstring": "calc.py"}, {"docstring": "other.py::add"}]
    starter = '"""Adding numbers."""\n\n\ndef add(a, b):\n    raise NotImplementedError("add")\n\n\ndef subtract(a, b):\n    """The difference."""\n'
    root = tiny_chapter(tmp_path / "content", tests=ADDS, reference=REFERENCE, starter=starter, stated_in=places)
    ran = course("verify", CHAPTER, cwd=tmp_path, env={"COURSE_CONTENT": str(root)})
    assert ran.code == 1, ran.out + ran.err
    step = finding(ran.out, "manifest")
    assert "FAIL" in step[0], ran.out
    got = [step[0].split("manifest", 1)[1].strip()] + step[1:]
    assert got == [
        "tiny test_adds: stated_in section 'No such heading' is not a section of the python track's text (text.md)",
        "tiny test_adds: stated_in docstring 'calc.py::add': add has no docstring in the starter's calc.py",
        "tiny test_adds: stated_in docstring 'other.py::add': other.py is not a file of the chapter",
    ], got

    # a heading inside a fenced code block is not a heading; an entry without stated_in is named too
    text = "# tiny\n\n```\n# Rules\n```\n"
    root = tiny_chapter(tmp_path / "content", tests=ADDS, reference=REFERENCE, text=text, stated_in=[])
    ran = course("verify", CHAPTER, cwd=tmp_path, env={"COURSE_CONTENT": str(root)})
    step = finding(ran.out, "manifest")
    assert "tiny test_adds: no stated_in (the section or docstring that states its rule)" in step[0], step


TWO_FAILING_CASES = """\
import pytest


@pytest.mark.parametrize("a", [1, 2])
def test_sums(a):
    assert calc.add(a, 1) == a + 1, f"add({a}, 1)"


def test_later():
    assert calc.double(2) == 4, "double(2)"
"""


def test_failing_cases_are_reported_and_the_run_goes_on(course, tmp_path: Path) -> None:
    wrong_add = "def add(a, b):\n    return a - b\n\n\ndef double(a):\n    return 2 * a\n"
    root = tiny_chapter(tmp_path / "content", tests=TWO_FAILING_CASES, reference=wrong_add)
    ran = course("check", CHAPTER, "--reference", cwd=tmp_path, env={"COURSE_CONTENT": str(root)})
    assert ran.code == 1, ran.out + ran.err
    rows = [line.split()[:2] for line in ran.out.splitlines() if line.startswith("  ") and line.split()[:1] in (["PASS"], ["FAIL"], ["ERROR"])]
    assert rows == [["FAIL", "test_sums"], ["PASS", "test_later"]], ran.out
    assert "add(1, 1)" in ran.out and "Traceback" not in ran.err, ran.out + ran.err

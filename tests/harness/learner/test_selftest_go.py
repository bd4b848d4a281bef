"""`course selftest` on the Go track: the learner's own _test.go files, in their module beside the
code, judged against the reference and the pitfall mutants (on the tiny chapter's Go track, so a
growing catalog cannot slow these down), and the ag00 and ag01 examples that `course start` writes."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tiny import CHAPTER, GO_REFERENCE, GO_SUM_TEST, tiny_go_chapter

pytestmark = pytest.mark.skipif(shutil.which("go") is None, reason="the Go track needs Go on PATH")

REFERENCE = GO_REFERENCE
CATALOG = GO_SUM_TEST
MUTANTS = [
    {"id": "m1", "pitfall": 1, "description": "subtracts", "file": "go/calc/calc.go", "find": "return a + b",
     "replace": "return a - b", "caught_by": ["sum"]},
    {"id": "m2", "pitfall": 2, "description": "loses the sign", "file": "go/calc/calc.go", "find": "return a + b",
     "replace": "return max(a+b, -(a+b))", "caught_by": ["sum"]},
    {"id": "m3", "pitfall": 1, "description": "zero when a is zero", "file": "go/calc/calc.go", "find": "return a + b",
     "replace": "if a == 0 {\n\t\treturn 0\n\t}\n\treturn a + b", "caught_by": ["sum"]},
]
PITFALLS = [{"id": 1, "title": "a wrong sum"}, {"id": 2, "title": "negative sums made positive"}]
HEAD = 'package calc_test\n\nimport (\n\t"testing"\n\n\t"tiny/calc"\n)\n'
EXAMPLE = HEAD + """
func TestExample(t *testing.T) {
	if got := calc.Add(2, 3); got != 5 {
		t.Errorf("Add(2, 3) = %d, want 5", got)
	}
}
"""


def go_test(name: str, a: int, b: int, want: int, why: str) -> str:
    return (f"\nfunc Test{name}(t *testing.T) {{\n\tif got := calc.Add({a}, {b}); got != {want} {{\n"
            f"\t\tt.Errorf(\"{why}: got %d\", got)\n\t}}\n}}\n")


def _setup(course, tmp_path: Path, learner: Path) -> tuple[dict[str, str], Path]:
    root = tiny_go_chapter(tmp_path / "content", tests=CATALOG, reference=REFERENCE, mutants=MUTANTS,
                           pitfalls=PITFALLS, selftest=EXAMPLE)
    env = {"COURSE_CONTENT": str(root)}
    ran = course("start", CHAPTER, "--language", "go", cwd=learner, env=env)
    assert ran.code == 0 and "wrote  go/calc/mine_test.go" in ran.out, ran.out + ran.err
    return env, learner / "go" / "calc" / "mine_test.go"


def test_go_selftest_counts_the_mutants_the_learners_tests_catch(course, tmp_path: Path, learner: Path) -> None:
    env, mine = _setup(course, tmp_path, learner)
    mine.write_text(EXAMPLE + go_test("ZeroFirst", 0, 4, 4, "Add(0, 4)"))
    ran = course("selftest", cwd=learner, env=env, timeout=600)
    assert ran.code == 1, "a mutant not caught: exit 1\n" + ran.out + ran.err
    assert "your tests in go/" in ran.out, ran.out
    assert "on the reference: 2 of 2 of your tests pass" in ran.out, ran.out
    assert "your tests catch 2 of 3" in ran.out, ran.out
    assert "not caught: pitfall 2 (negative sums made positive): m2" in ran.out, ran.out
    assert "pitfall 1" not in ran.out.split("your tests catch")[1], "pitfall 1's mutants are both caught"

    # a second file of the learner's, in the same package: every _test.go of the module counts
    (mine.parent / "negative_test.go").write_text(HEAD + go_test("Negative", -2, -3, -5, "Add(-2, -3)"))
    ran = course("selftest", cwd=learner, env=env, timeout=600)
    assert ran.code == 0, ran.out + ran.err
    assert "on the reference: 3 of 3 of your tests pass" in ran.out, ran.out
    assert "your tests catch 3 of 3" in ran.out and "every pitfall mutant is caught" in ran.out, ran.out


def test_go_wrong_expectation_and_tests_that_do_not_compile(course, tmp_path: Path, learner: Path) -> None:
    env, mine = _setup(course, tmp_path, learner)
    mine.write_text(EXAMPLE + go_test("Wrong", 1, 1, 3, "one and one make three"))
    ran = course("selftest", cwd=learner, env=env, timeout=600)
    assert ran.code == 1, ran.out + ran.err
    assert "on the reference: 1 of 2 of your tests pass" in ran.out, ran.out
    assert "WRONG  TestWrong" in ran.out and "one and one make three: got 2" in ran.out, ran.out
    assert "TestExample" not in ran.out, "a test that passes is not listed"
    assert "return a + b" not in ran.out + ran.err, "the reference's source is never shown"
    assert "your tests catch" not in ran.out, "mutants are judged only once every test passes on the reference"

    mine.write_text(EXAMPLE + "\nfunc TestMissing(t *testing.T) {\n\tcalc.Subtract(1, 2)\n}\n")
    line = mine.read_text().splitlines().index("\tcalc.Subtract(1, 2)") + 1
    ran = course("selftest", cwd=learner, env=env, timeout=600)
    assert ran.code == 1 and "your tests do not compile" in ran.out, ran.out + ran.err
    assert f"go/calc/mine_test.go:{line}: undefined: calc.Subtract" in ran.out, ran.out
    assert "WRONG" not in ran.out and "Traceback" not in ran.err, "nothing ran: no test is judged"
    # course check leaves the learner's tests out: the catalog's verdict, whatever theirs say
    (learner / "go" / "calc" / "calc.go").write_text(REFERENCE)
    ran = course("check", cwd=learner, env=env, timeout=600)
    assert ran.code == 0 and "1 passed" in ran.out, ran.out + ran.err
    assert "Missing" not in ran.out and "Example" not in ran.out, ran.out
    # and go test runs them on the learner's code, as any Go test
    mine.write_text(EXAMPLE)
    go = subprocess.run(["go", "test", "./..."], cwd=learner / "go", capture_output=True, text=True, timeout=600)
    assert go.returncode == 0 and "ok" in go.stdout, go.stdout + go.stderr


def test_go_selftest_with_a_hang_or_no_tests(course, tmp_path: Path, learner: Path) -> None:
    env, mine = _setup(course, tmp_path, learner)
    mine.write_text(HEAD + "\nfunc TestHangs(t *testing.T) {\n\tfor calc.Add(1, 1) == 2 {\n\t}\n}\n")
    ran = course("selftest", "--timeout", "1", cwd=learner, env=env, timeout=600)
    assert ran.code == 1 and "WRONG  TestHangs" in ran.out, ran.out + ran.err
    assert "longer than 1 s" in ran.out and "use --timeout" in ran.out, "check's timeout verdict\n" + ran.out
    mine.write_text("package calc_test\n")
    ran = course("selftest", cwd=learner, env=env, timeout=600)
    assert ran.code == 2 and "no tests of yours in" in ran.err and "Traceback" not in ran.err, ran.err


def test_the_ag01_example_passes_on_the_reference_and_catches_a_documented_mutant(course, learner: Path) -> None:
    """What `course start ag01 --language go` gives a learner is a test that is right on the reference
    and already catches a pitfall (two mutants of the real chapter, so the run stays short)."""
    from dataclasses import replace

    from course import chapters
    from course.selftest import run_selftest

    ran = course("start", "ag01", "--language", "go", cwd=learner)
    assert ran.code == 0 and "wrote  go/agent/provider/mine_test.go" in ran.out, ran.out + ran.err
    track = chapters.get("ag01").track("go")
    two = tuple(m for m in track.mutants if m.id in ("s01", "s29"))  # lines joined wrong; Retry-After unbounded
    result = run_selftest(chapters.get("ag01"), replace(track, mutants=two), learner, timeout=30, jobs=1)
    assert result.tests == ["TestTwoEventsReadOneByteAtATime"], result.tests
    assert result.on_reference.ok, result.on_reference.problem or result.wrong_expectations
    assert [m.mutant.id for m in result.caught] == ["s01"] and [m.id for m in result.missed] == ["s29"], (
        [(m.mutant.id, m.status) for m in result.mutants])


def test_the_ag00_example_passes_on_the_reference_and_catches_a_documented_mutant(course, learner: Path) -> None:
    """The same for ag00: its example refuses another customer's order of the same shop."""
    from dataclasses import replace

    from course import chapters
    from course.selftest import run_selftest

    ran = course("start", "ag00", "--language", "go", cwd=learner)
    assert ran.code == 0 and "wrote  go/agent/contract/mine_test.go" in ran.out, ran.out + ran.err
    track = chapters.get("ag00").track("go")
    two = tuple(m for m in track.mutants if m.id in ("g20", "g21"))  # ownership by the tenant only; by the user only
    assert [m.description for m in two] == ["ownership checks the tenant only",
                                            "ownership checks the user only: the same user id in another shop passes"], two
    result = run_selftest(chapters.get("ag00"), replace(track, mutants=two), learner, timeout=30, jobs=1)
    assert result.tests == ["TestAnotherCustomerOfTheSameShopIsRefused"], result.tests
    assert result.on_reference.ok, result.on_reference.problem or result.wrong_expectations
    assert [m.mutant.id for m in result.caught] == ["g20"] and [m.id for m in result.missed] == ["g21"], (
        [(m.mutant.id, m.status) for m in result.mutants])


def test_selftest_takes_the_tests_of_its_own_chapter_from_a_module_that_holds_two(course, learner: Path) -> None:
    """ag00 and ag01 share the learner's module: each chapter's selftest runs the tests of its own
    packages, never those of the other chapter's code, which its reference does not have."""
    from dataclasses import replace

    from course import chapters
    from course.selftest import run_selftest

    for chapter in ("ag00", "ag01"):
        assert course("start", chapter, "--language", "go", cwd=learner).code == 0
    for chapter, example in (("ag01", "TestTwoEventsReadOneByteAtATime"), ("ag00", "TestAnotherCustomerOfTheSameShopIsRefused")):
        track = chapters.get(chapter).track("go")
        result = run_selftest(chapters.get(chapter), replace(track, mutants=track.mutants[:1]), learner, timeout=30, jobs=1)
        assert result.tests == [example], (chapter, result.tests)
        assert result.on_reference.ok, result.on_reference.problem or result.wrong_expectations

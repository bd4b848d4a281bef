"""`course selftest` on the TypeScript track: the learner's own tests (the .test.ts files of their
package's test/ folder) judged against the reference and the pitfall mutants, on the tiny chapter's
TypeScript track (so a growing catalog cannot slow these down), and the ag01 example `course start`
writes."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tiny import CHAPTER, TS_REFERENCE, TS_SUM_TEST, tiny_ts_chapter

pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="the TypeScript track needs Node.js on PATH")

MUTANTS = [
    {"id": "m1", "pitfall": 1, "description": "subtracts", "file": "ts/calc.ts", "find": "return a + b;",
     "replace": "return a - b;", "caught_by": ["sum"]},
    {"id": "m2", "pitfall": 2, "description": "loses the sign", "file": "ts/calc.ts", "find": "return a + b;",
     "replace": "return Math.abs(a + b);", "caught_by": ["sum"]},
    {"id": "m3", "pitfall": 1, "description": "zero when a is zero", "file": "ts/calc.ts", "find": "return a + b;",
     "replace": "return a === 0 ? 0 : a + b;", "caught_by": ["sum"]},
]
PITFALLS = [{"id": 1, "title": "a wrong sum"}, {"id": 2, "title": "negative sums made positive"}]
HEAD = 'import assert from "node:assert/strict";\nimport { test } from "node:test";\n\nimport { add } from "../calc.js";\n'
EXAMPLE = HEAD + '\ntest("example", () => {\n  assert.equal(add(2, 3), 5, "add(2, 3)");\n});\n'


def ts_test(name: str, a: int, b: int, want: int) -> str:
    return f'\ntest("{name}", () => {{\n  assert.equal(add({a}, {b}), {want}, "add({a}, {b})");\n}});\n'


def _setup(course, tmp_path: Path, learner: Path) -> tuple[dict[str, str], Path]:
    root = tiny_ts_chapter(tmp_path / "content", tests=TS_SUM_TEST, reference=TS_REFERENCE, mutants=MUTANTS,
                           pitfalls=PITFALLS, selftest=EXAMPLE)
    env = {"COURSE_CONTENT": str(root)}
    ran = course("start", CHAPTER, "--language", "typescript", cwd=learner, env=env)
    assert ran.code == 0 and "wrote  ts/test/mine.test.ts" in ran.out, ran.out + ran.err
    return env, learner / "ts" / "test" / "mine.test.ts"


def test_typescript_selftest_counts_the_mutants_the_learners_tests_catch(course, tmp_path: Path, learner: Path) -> None:
    env, mine = _setup(course, tmp_path, learner)
    mine.write_text(EXAMPLE + ts_test("zero first", 0, 4, 4))
    ran = course("selftest", cwd=learner, env=env, timeout=600)
    assert ran.code == 1, "a mutant not caught: exit 1\n" + ran.out + ran.err
    assert "your tests in ts/test/" in ran.out, ran.out
    assert "on the reference: 2 of 2 of your tests pass" in ran.out, ran.out
    assert "your tests catch 2 of 3" in ran.out, ran.out
    assert "not caught: pitfall 2 (negative sums made positive): m2" in ran.out, ran.out

    # a second file of the learner's, with a helper module beside it: every .test.ts of test/ counts
    (mine.parent / "numbers.ts").write_text("export const MINUS_TWO = -2;\n")
    (mine.parent / "negative.test.ts").write_text(
        HEAD + 'import { MINUS_TWO } from "./numbers.js";\n\ntest("negative", () => {\n'
        '  assert.equal(add(MINUS_TWO, -3), -5, "add(-2, -3)");\n});\n')
    ran = course("selftest", cwd=learner, env=env, timeout=600)
    assert ran.code == 0, ran.out + ran.err
    assert "on the reference: 3 of 3 of your tests pass" in ran.out, ran.out
    assert "your tests catch 3 of 3" in ran.out and "every pitfall mutant is caught" in ran.out, ran.out

    # the learner's own tests stay out of the catalog's run
    checked = course("check", cwd=learner, env=env, timeout=600)
    assert "negative" not in checked.out and "example" not in checked.out, checked.out


def test_typescript_wrong_expectation_and_tests_that_do_not_compile(course, tmp_path: Path, learner: Path) -> None:
    env, mine = _setup(course, tmp_path, learner)
    mine.write_text(EXAMPLE + ts_test("one and one", 1, 1, 3))
    ran = course("selftest", cwd=learner, env=env, timeout=600)
    assert ran.code == 1, ran.out + ran.err
    assert "on the reference: 1 of 2 of your tests pass" in ran.out, ran.out
    assert "WRONG  one and one" in ran.out and "add(1, 1): got 2, want 3" in ran.out, ran.out
    assert "return a + b" not in ran.out + ran.err, "the reference's source is never shown"
    # the test that passes judges the mutants meanwhile: one wrong expectation hides nothing else
    assert "judged by the tests of yours that pass there (1 of 2)" in ran.out and "your tests catch 1 of 3" in ran.out, ran.out

    mine.write_text(HEAD + '\ntest("a name the chapter lacks", () => {\n  assert.equal(add(1, 2, 3), 6);\n});\n')
    ran = course("selftest", cwd=learner, env=env, timeout=600)
    assert ran.code == 1 and "your tests do not compile against the chapter's interface" in ran.out, ran.out + ran.err
    assert "ts/test/mine.test.ts:" in ran.out and "TS2554" in ran.out, f"at the learner's file:line: {ran.out}"


def test_ag01_typescript_example_runs_on_the_reference(course, learner: Path) -> None:
    """The example `course start ag01 --language typescript` writes passes on the reference, and
    catches some of the chapter's mutants (not all: it is a start)."""
    assert course("start", "ag01", "--language", "typescript", cwd=learner).code == 0
    ran = course("selftest", cwd=learner, timeout=1800)
    assert "on the reference: 1 of 1 of your tests pass" in ran.out, ran.out + ran.err
    caught = int(ran.out.split("your tests catch ")[1].split(" of ")[0])
    assert 0 < caught < 54, ran.out

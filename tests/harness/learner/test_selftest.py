"""`course selftest`: the learner's own tests judged against the reference and the pitfall mutants."""

from __future__ import annotations

from pathlib import Path

from tiny import CHAPTER, tiny_chapter

REFERENCE = "def add(a, b):\n    return a + b\n"
CATALOG = "def test_sum():\n    assert calc.add(2, 3) == 5, 'add(2, 3)'\n"
MUTANTS = [
    {"id": "m1", "pitfall": 1, "description": "subtracts", "file": "calc.py", "find": "return a + b",
     "replace": "return a - b", "caught_by": ["sum"]},
    {"id": "m2", "pitfall": 2, "description": "loses the sign", "file": "calc.py", "find": "return a + b",
     "replace": "return abs(a + b)", "caught_by": ["sum"]},
    {"id": "m3", "pitfall": 1, "description": "zero when a is zero", "file": "calc.py", "find": "return a + b",
     "replace": "return a + b if a else 0", "caught_by": ["sum"]},
]
PITFALLS = [{"id": 1, "title": "a wrong sum"}, {"id": 2, "title": "negative sums made positive"}]
EXAMPLE = "import calc\n\n\ndef test_example():\n    assert calc.add(2, 3) == 5, 'add(2, 3)'\n"


def _setup(course, tmp_path: Path, learner: Path) -> dict[str, str]:
    root = tiny_chapter(tmp_path / "content", tests=CATALOG, reference=REFERENCE, mutants=MUTANTS,
                        pitfalls=PITFALLS, selftest=EXAMPLE)
    env = {"COURSE_CONTENT": str(root)}
    ran = course("start", CHAPTER, cwd=learner, env=env)
    assert ran.code == 0 and "wrote  tests_mine/tiny/test_mine.py" in ran.out, ran.out + ran.err
    return env


def test_selftest_counts_the_mutants_the_learners_tests_catch(course, tmp_path: Path, learner: Path) -> None:
    env = _setup(course, tmp_path, learner)
    mine = learner / "tests_mine" / CHAPTER / "test_mine.py"
    mine.write_text(EXAMPLE + "\n\ndef test_zero_first():\n    assert calc.add(0, 4) == 4, 'add(0, 4)'\n")
    ran = course("selftest", cwd=learner, env=env)
    assert ran.code == 1, "a mutant not caught: exit 1\n" + ran.out + ran.err
    assert "on the reference: 2 of 2 of your tests pass" in ran.out, ran.out
    assert "your tests catch 2 of 3" in ran.out, ran.out
    assert "not caught: pitfall 2 (negative sums made positive): m2" in ran.out, ran.out
    assert "pitfall 1" not in ran.out.split("your tests catch")[1], "pitfall 1's mutants are both caught"

    mine.write_text(mine.read_text() + "\n\ndef test_negative():\n    assert calc.add(-2, -3) == -5, 'add(-2, -3)'\n")
    ran = course("selftest", cwd=learner, env=env)
    assert ran.code == 0, ran.out + ran.err
    assert "your tests catch 3 of 3" in ran.out and "every pitfall mutant is caught" in ran.out, ran.out


def test_a_test_that_fails_on_the_reference_is_a_wrong_expectation(course, tmp_path: Path, learner: Path) -> None:
    env = _setup(course, tmp_path, learner)
    mine = learner / "tests_mine" / CHAPTER / "test_mine.py"
    mine.write_text(EXAMPLE + "\n\ndef test_wrong():\n    assert calc.add(1, 1) == 3, 'one and one make three'\n")
    ran = course("selftest", cwd=learner, env=env)
    assert ran.code == 1, ran.out + ran.err
    assert "on the reference: 1 of 2 of your tests pass" in ran.out, ran.out
    assert "WRONG  test_wrong" in ran.out and "one and one make three" in ran.out, ran.out
    assert "return a + b" not in ran.out + ran.err, "the reference's source is never shown"
    assert "your tests catch" not in ran.out, "mutants are judged only once every test passes on the reference"


def test_selftest_without_tests_or_with_a_hang(course, tmp_path: Path, learner: Path) -> None:
    env = _setup(course, tmp_path, learner)
    mine = learner / "tests_mine" / CHAPTER / "test_mine.py"
    mine.write_text("import calc\n\n\ndef test_hangs():\n    while True:\n        pass\n")
    ran = course("selftest", "--timeout", "1", cwd=learner, env=env, timeout=120)
    assert ran.code == 1 and "WRONG  test_hangs" in ran.out and "longer than 1 s" in ran.out, ran.out + ran.err
    mine.write_text("# nothing yet\n")
    ran = course("selftest", cwd=learner, env=env)
    assert ran.code == 2 and "no tests of yours in" in ran.err and "Traceback" not in ran.err, ran.err


def test_a_learners_unittest_classes_run(course, tmp_path: Path, learner: Path) -> None:
    """Catalog runs turn pytest's unittest plugin off (no catalog needs it); a learner's own tests keep it."""
    env = _setup(course, tmp_path, learner)
    mine = learner / "tests_mine" / CHAPTER / "test_mine.py"
    mine.write_text(EXAMPLE + "\n\nimport unittest\n\n\nclass TestSigns(unittest.TestCase):\n"
                    "    def test_negative(self):\n        self.assertEqual(calc.add(-2, -3), -5)\n")
    ran = course("selftest", cwd=learner, env=env)
    assert "on the reference: 2 of 2 of your tests pass" in ran.out, ran.out + ran.err
    assert "your tests catch 2 of 3" in ran.out, ran.out

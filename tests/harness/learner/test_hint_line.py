"""The `hint:` line of `course check` names the place the failures come from, in the learner's own file:
here a crash inside one function of theirs (an exception of the language's own, a panic), with no
recording needed, in every track; and a place the learner's code does not have is never named."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.harness.tiny import CHAPTER, GO_REFERENCE, TS_SUM_TEST, tiny_chapter, tiny_go_chapter, tiny_ts_chapter

CATALOG = '''\
def test_small():
    assert calc.add(1, 2) == 3, "1 + 2"


def test_big():
    assert calc.add(10, 20) == 30, "10 + 20"
'''

REFERENCE = '''\
"""Adding numbers."""


def add(a, b):
    """The sum of a and b."""
    return _sum(a, b)


def _sum(a, b):
    return a + b
'''

# a helper that crashes for some inputs: test_big fails with a KeyError raised inside _sum
LEARNER = REFERENCE.replace("    return a + b\n", "    small = {0: 0, 1: 1, 2: 2}\n    return small[a] + b\n")


def test_a_crash_in_one_function_is_named_with_its_line(course, tmp_path: Path, learner: Path) -> None:
    root = tiny_chapter(tmp_path / "content", tests=CATALOG, reference=REFERENCE)
    env = {"COURSE_CONTENT": str(root)}
    assert course("start", CHAPTER, "--dir", str(learner), cwd=learner, env=env).code == 0
    (learner / "calc.py").write_text(LEARNER, encoding="utf-8")
    ran = course("check", cwd=learner, env=env)
    assert ran.code == 1, ran.out
    line = LEARNER.splitlines().index("def _sum(a, b):") + 1
    assert f"hint: the failures come from `_sum` (calc.py:{line})" in ran.out, ran.out
    assert "pitfall" not in ran.out.split("hint:")[1], "no recording, so no pitfall can be named"


GO_CATALOG = """\
package calc_test

import (
	"testing"

	"tiny/calc"
)

func TestSmall(t *testing.T) {
	if got := calc.Add(1, 2); got != 3 {
		t.Errorf("Add(1, 2) = %d, want 3", got)
	}
}

func TestBig(t *testing.T) {
	if got := calc.Add(10, 20); got != 30 {
		t.Errorf("Add(10, 20) = %d, want 30", got)
	}
}
"""

GO_HELPER_REFERENCE = GO_REFERENCE.replace("\treturn a + b\n", "\treturn sum(a, b)\n") + \
    "\nfunc sum(a, b int) int {\n\treturn a + b\n}\n"
GO_LEARNER = GO_HELPER_REFERENCE.replace("func sum(a, b int) int {\n\treturn a + b\n}",
                                         "func sum(a, b int) int {\n\tsmall := []int{0, 1, 2}\n\treturn small[a] + b\n}")


@pytest.mark.skipif(shutil.which("go") is None, reason="the Go track needs Go on PATH")
def test_a_panic_in_one_function_is_named_with_its_line(course, tmp_path: Path, learner: Path) -> None:
    root = tiny_go_chapter(tmp_path / "content", tests=GO_CATALOG, reference=GO_HELPER_REFERENCE)
    env = {"COURSE_CONTENT": str(root)}
    assert course("start", CHAPTER, "--language", "go", "--dir", str(learner), cwd=learner, env=env).code == 0
    (learner / "go" / "calc" / "calc.go").write_text(GO_LEARNER, encoding="utf-8")
    ran = course("check", cwd=learner, env=env, timeout=300)
    assert ran.code == 1, ran.out
    line = GO_LEARNER.splitlines().index("func sum(a, b int) int {") + 1
    assert f"hint: the failures come from `sum` (go/calc/calc.go:{line})" in ran.out, ran.out


TS_CATALOG = TS_SUM_TEST + """
test("big", () => {
  assert.equal(add(10, 20), 30, "add(10, 20)");
});
"""
TS_HELPER_REFERENCE = """\
/** Adding numbers. */

/** The sum of a and b. */
export function add(a: number, b: number): number {
  return sum(a, b);
}

const sum = (a: number, b: number): number => {
  return a + b;
};
"""
# the helper reads past the end of its table for a large a: a TypeError thrown inside `sum`
TS_LEARNER = TS_HELPER_REFERENCE.replace("  return a + b;\n", "  const small = [0, 1, 2, 3];\n  return small[a].valueOf() + b;\n")


@pytest.mark.skipif(shutil.which("node") is None, reason="the TypeScript track needs node on PATH")
def test_a_typescript_error_in_one_function_is_named_with_its_line(course, tmp_path: Path, learner: Path) -> None:
    root = tiny_ts_chapter(tmp_path / "content", tests=TS_CATALOG, reference=TS_HELPER_REFERENCE)
    env = {"COURSE_CONTENT": str(root)}
    assert course("start", CHAPTER, "--language", "typescript", "--dir", str(learner), cwd=learner, env=env).code == 0
    (learner / "ts" / "calc.ts").write_text(TS_LEARNER, encoding="utf-8")
    ran = course("check", cwd=learner, env=env, timeout=300)
    assert ran.code == 1, ran.out
    assert "Cannot read properties of undefined" in ran.out, ran.out  # V8's TypeError, thrown in sum
    line = TS_LEARNER.splitlines().index("const sum = (a: number, b: number): number => {") + 1
    assert f"hint: the failures come from `sum` (ts/calc.ts:{line})" in ran.out, ran.out
    assert "pitfall" not in ran.out.split("hint:")[1], "no recording, so no pitfall can be named"


# ag01's documented TypeScript mutant that adds a fragment to whichever call opened last, and its function
MUTANT, PLACE = "t08", "Decoder.#addFragment"


@pytest.mark.skipif(shutil.which("node") is None, reason="the TypeScript track needs node on PATH")
def test_a_documented_typescript_bug_of_ag01_gets_its_place(course, learner: Path) -> None:
    from conftest import REPO
    from course import chapters, regions
    from course.languages.typescript.outline import functions
    from course.mutant import apply

    track = chapters.get("ag01").track("typescript")
    assert course("start", "ag01", "--language", "typescript", "--dir", str(learner), cwd=learner).code == 0
    for name in track.files:
        text = (REPO / "reference" / "typescript" / "ag01" / name).read_text(encoding="utf-8")
        (learner / name).write_text(regions.strip(text, name), encoding="utf-8")
    mutant = next(m for m in track.mutants if m.id == MUTANT)
    apply(mutant, learner)
    ran = course("check", cwd=learner, timeout=600)
    assert ran.code == 1, ran.out
    mine = functions((learner / mutant.file).read_text(encoding="utf-8"))
    method = next(f.first for f in mine if f.name == PLACE)
    owner = PLACE.rpartition(".")[0]
    first_of_class = next(f.first for f in mine if f.name.startswith(owner + "."))
    # the method, or its class where the recordings of its other methods' mutants come as close
    assert (f"hint: the failures come from `{PLACE}` ({mutant.file}:{method})" in ran.out
            or f"hint: the failures come from `{owner}` ({mutant.file}:{first_of_class})" in ran.out), ran.out


def test_a_place_the_learners_code_lacks_is_never_named() -> None:
    from course import chapters
    from course.pitfall_hints import _shown_place

    track = chapters.get("ag01").track("python")
    mine = "class EventReader:\n    def __iter__(self):\n        return iter(())\n\n    def _lines(self):\n        pass\n"
    texts = {"agent/provider/sse.py": mine}
    # the recording names the reference's helper; this learner split the reader otherwise: its class
    assert _shown_place("agent/provider/sse.py::EventReader._blocks", texts, track) == \
        "`EventReader` (agent/provider/sse.py:2)"
    assert _shown_place("agent/provider/sse.py::EventReader.__iter__", texts, track) == \
        "`EventReader.__iter__` (agent/provider/sse.py:2)"
    assert _shown_place("agent/provider/sse.py::Decoder.decode", texts, track) == "", "no Decoder at all: no place"
    assert _shown_place("agent/provider/retry.py::retryable", texts, track) == "", "a file the learner lacks"

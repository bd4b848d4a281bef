"""The Go track's documented mutants: each built as a changed copy of one unmarked reference (only
the changed package recompiled, no vet, no DWARF, one thread per tool) and judged by the catalog;
a Go test past its time is stopped by its worker at the per-test time, not at the runner's grace."""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from course.chapters import Chapter
from course.results import PASS, TIMEOUT
from course.languages.go.worker import Worker
from course.languages.protocol import CaseFinished, CaseStarted
from tiny import CHAPTER, GO_REFERENCE, GO_SUM_TEST, tiny_go_chapter

pytestmark = pytest.mark.skipif(shutil.which("go") is None, reason="the Go track needs Go on PATH")

REFERENCE = GO_REFERENCE
CATALOG = GO_SUM_TEST + """
func TestZero(t *testing.T) {
	if got := calc.Add(0, 0); got != 0 {
		t.Errorf("Add(0, 0) = %d, want 0", got)
	}
}
"""
ERRORF_LINE = 11  # the line of TestSum's t.Errorf in CATALOG
MUTANTS = [
    {"id": "m1", "pitfall": 1, "description": "subtracts", "file": "go/calc/calc.go", "find": "return a + b",
     "replace": "return a - b", "caught_by": ["sum"]},
    {"id": "m2", "pitfall": 1, "description": "never returns for a = 2", "file": "go/calc/calc.go",
     "find": "return a + b", "replace": "for a == 2 {\n\t}\n\treturn a + b", "caught_by": ["sum"]},
    {"id": "m3", "pitfall": 1, "description": "panics for a = 2", "file": "go/calc/calc.go",
     "find": "return a + b", "replace": "if a == 2 {\n\t\tpanic(\"two\")\n\t}\n\treturn a + b", "caught_by": ["sum"]},
    # a declaration outside any function body: no schema holds it, it is built on its own
    {"id": "m4", "pitfall": 1, "description": "adds one, kept in a package variable", "file": "go/calc/calc.go",
     "find": "\treturn a + b\n}\n", "replace": "\treturn a + b + offset\n}\n\nvar offset = 1\n", "caught_by": ["sum"]},
]


def test_go_mutants_keep_file_line_and_a_hang_is_a_timeout_of_its_test_alone(course, tmp_path: Path, learner: Path) -> None:
    root = tiny_go_chapter(tmp_path / "content", tests=CATALOG, reference=REFERENCE, mutants=MUTANTS)
    report = tmp_path / "mutants.json"
    ran = course("mutants", CHAPTER, "--language", "go", "--json", str(report), cwd=learner,
                 env={"COURSE_CONTENT": str(root)}, timeout=900)
    assert ran.code == 0, ran.out + ran.err
    results = {m["id"]: m for m in json.loads(report.read_text())["mutants"]}
    # a mutant's build drops DWARF: the failure is still placed at the catalog's file:line
    assert results["m1"]["status"] == "killed" and results["m1"]["signature"] == [f"sum@calc_test.go:{ERRORF_LINE}"], results
    # the endless loop times out in TestSum only: TestZero, after it, still runs and passes
    assert results["m2"]["status"] == "timeout" and results["m2"]["failing"] == ["sum"], results
    assert results["m3"]["status"] == "killed" and results["m3"]["signature"] == ["sum@calc_test.go:10 panic"], results
    assert results["m4"]["status"] == "killed" and results["m4"]["failing"] == ["sum", "zero"], results
    assert all(m["killed_as_documented"] for m in results.values()), results


@contextmanager
def loaded(root: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Chapter]:
    """The tiny chapter in `root`, loaded in this process (the content root is cached: it is
    forgotten before and after, so neither this test nor the next sees the other's)."""
    from course import chapters, content

    monkeypatch.setenv("COURSE_CONTENT", str(root))
    content.root.cache_clear()
    try:
        yield chapters.get(CHAPTER)
    finally:
        monkeypatch.delenv("COURSE_CONTENT")
        content.root.cache_clear()


@pytest.fixture
def tiny_track(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):  # noqa: ANN201
    with loaded(tiny_go_chapter(tmp_path / "content", tests=CATALOG, reference=REFERENCE, mutants=MUTANTS),
                monkeypatch) as chapter:
        yield chapter, chapter.track("go")


def catalog_builds(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The catalog builds (go test -c) made from here on, as their arguments."""
    from course.languages.go import build

    builds: list[list[str]] = []
    call = build._call

    def counted(args, *, cwd, env):  # noqa: ANN001, ANN202
        if args[1:3] == ["test", "-c"]:
            builds.append(args)
        return call(args, cwd=cwd, env=env)

    monkeypatch.setattr(build, "_call", counted)
    return builds


def test_one_schema_build_serves_every_mutant_that_changes_only_function_bodies(tiny_track, monkeypatch) -> None:  # noqa: ANN001
    """The catalog is built for the reference, once for the schema of m1 and m3, and once for m4
    (which adds a declaration); both ways judge as a build of the mutant alone would."""
    from course.mutation.documented import KILLED, run_mutants

    chapter, track = tiny_track
    builds = catalog_builds(monkeypatch)
    chosen = [m for m in track.mutants if m.id != "m2"]  # no hang: the test stays short
    results = run_mutants(chapter, track, chosen, jobs=2)
    assert [(r.mutant.id, r.status, r.failing) for r in results] == [
        ("m1", KILLED, ["sum"]), ("m3", KILLED, ["sum"]), ("m4", KILLED, ["sum", "zero"])], results
    assert results[1].signature == ["sum@calc_test.go:10 panic"], results[1].signature
    assert len(builds) == 3, "\n".join(" ".join(b) for b in builds)
    assert sum("go-schema" in " ".join(b) for b in builds) == 1, builds


def test_a_schema_keeps_the_lines_of_the_original_and_of_each_mutant(tiny_track, tmp_path: Path) -> None:  # noqa: ANN001
    from course.languages.go import build, schemata
    from course.mutation.documented import reference_copy

    _, track = tiny_track
    origin = reference_copy(track, tmp_path / "scratch")
    env = build.toolchain.environment()
    tool = schemata.tool(tmp_path / "cache", lambda args, cwd: build._call(args, cwd=cwd, env=env)[0])
    schema = schemata.plan(track, origin, tmp_path / "schema", tool=tool, env=env)
    assert schema is not None and sorted(schema.mutants) == ["m1", "m2", "m3"], schema and schema.mutants
    calc = origin / "go/calc/calc.go"
    original = calc.read_text().splitlines()
    text = Path(schema.replace[str(calc)]).read_text().splitlines()
    # every line of the original where it was; the dispatch shares the opening brace's line
    assert [line for line in text[:len(original)] if "courseMutant__" not in line] == \
        [line for line in original if not line.startswith("func Add(")], text
    assert text[original.index("func Add(a, b int) int {")].startswith("func Add(a, b int) int { if courseMutant__ == \"m1\"")
    # each mutant's function follows at its own file's lines: m3's panic is on the line it has in m3
    assert text.count(f"//line {calc}:5") == 3, text
    assert text[text.index("func Add__mutant2(a, b int) int {") + 2] == '\t\tpanic("two")', text


@pytest.mark.parametrize("hang", ["exec sleep 600", "exec yes still-going"], ids=["silent", "printing"])
def test_a_go_test_past_its_time_is_stopped_by_its_worker(tmp_path: Path, hang: str) -> None:
    """A stand-in test binary reports one test passed, starts another and never ends (silent, or
    printing without end): the worker reports that test as a timeout at its per-test time (long
    before the deadline the runner gives it), stops the binary, and says nothing more."""
    binary = tmp_path / "stand-in.test"
    binary.write_text("#!/bin/sh\nprintf '=== RUN   TestQuick\\n--- PASS: TestQuick (0.00s)\\n=== RUN   TestHang\\n'\n"
                      f"{hang}\n", encoding="utf-8")
    binary.chmod(0o755)
    worker = Worker(binary, tmp_path, tmp_path, tmp_path, {"TestQuick": "quick", "TestHang": "hang"},
                    dict(os.environ), timeout=0.2, shuffle=None, cover_profile="")
    events = []
    try:
        while (event := worker.next_event(time.monotonic() + 300)) is not None:  # TimeoutError past it
            events.append(event)
    finally:
        ended = worker.close()
    started = [e.key for e in events if isinstance(e, CaseStarted)]
    finished = [e for e in events if isinstance(e, CaseFinished)]
    assert started == ["TestQuick", "TestHang"], events
    assert [(e.key, e.status) for e in finished] == [("TestQuick", PASS), ("TestHang", TIMEOUT)], events
    assert "longer than 0.2 s" in finished[1].message, finished[1].message
    assert ended.exit_code < 0, "the binary was killed"


SHAPES_REFERENCE = """\
// Package calc adds numbers.
package calc

// Named sums with an unnamed receiver.
type Named struct{}

// Sum adds xs into a named result.
func (Named) Sum(xs ...int) (total int) {
	for _, x := range xs {
		total += x
	}
	return
}

// Pick returns a when first, else b.
func Pick[T any](a, b T, first bool) T {
	if first {
		return a
	}
	return b
}

// Adder adds to a base.
type Adder struct{ base int }

// Add returns the base plus n.
func (a *Adder) Add(n int) int { return a.base + n }

// Note does nothing with its text.
func Note(_ string) {}
"""
SHAPES_CATALOG = """\
package calc_test

import (
	"testing"

	"tiny/calc"
)

func TestSum(t *testing.T) {
	if got := (calc.Named{}).Sum(1, 2, 3); got != 6 {
		t.Errorf("Sum(1, 2, 3) = %d, want 6", got)
	}
}

func TestPick(t *testing.T) {
	if got := calc.Pick("a", "b", true); got != "a" {
		t.Errorf("Pick = %q, want a", got)
	}
}

func TestAdd(t *testing.T) {
	if got := (&calc.Adder{}).Add(2); got != 2 {
		t.Errorf("Add(2) = %d, want 2", got)
	}
}

func TestNote(t *testing.T) {
	calc.Note("x")
}
"""
SHAPES_MUTANTS = [
    {"id": "sum-minus", "pitfall": 1, "description": "subtracts", "file": "go/calc/calc.go", "find": "total += x",
     "replace": "total -= x", "caught_by": ["sum"]},
    {"id": "pick.b", "pitfall": 1, "description": "picks b", "file": "go/calc/calc.go", "find": "\t\treturn a\n",
     "replace": "\t\treturn b\n", "caught_by": ["pick"]},
    {"id": "add", "pitfall": 1, "description": "adds one more", "file": "go/calc/calc.go", "find": "a.base + n",
     "replace": "a.base + n + 1", "caught_by": ["add"]},
    {"id": "note", "pitfall": 1, "description": "panics", "file": "go/calc/calc.go", "find": "func Note(_ string) {}",
     "replace": "func Note(_ string) { panic(\"note\") }", "caught_by": ["note"]},
]


def test_a_schema_hands_over_from_every_shape_of_function(tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    """An unnamed receiver, a variadic parameter with a named result, type parameters, a blank
    parameter, a function on one line, and mutant ids that are not Go names: one schema holds all
    four mutants, and each breaks its own test and no other."""
    from course.mutation.documented import KILLED, run_mutants

    root = tiny_go_chapter(tmp_path / "content", tests=SHAPES_CATALOG, reference=SHAPES_REFERENCE, mutants=SHAPES_MUTANTS)
    builds = catalog_builds(monkeypatch)
    with loaded(root, monkeypatch) as chapter:
        results = run_mutants(chapter, chapter.track("go"), list(chapter.track("go").mutants), jobs=2)
    assert [(r.mutant.id, r.status, r.failing) for r in results] == [
        ("sum-minus", KILLED, ["sum"]), ("pick.b", KILLED, ["pick"]), ("add", KILLED, ["add"]),
        ("note", KILLED, ["note"])], results
    assert len(builds) == 2 and "go-schema" in " ".join(builds[1]), builds  # the reference's, the schema's

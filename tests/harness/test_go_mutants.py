"""The Go track's documented mutants: each built as a changed copy of one unmarked reference (only
the changed package recompiled, no vet, no DWARF, one thread per tool) and judged by the catalog;
a Go test past its time is stopped by its worker at the per-test time, not at the runner's grace."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest

from course.check.results import PASS, TIMEOUT
from course.languages.go.worker import Worker
from course.languages.protocol import CaseFinished, CaseStarted
from tiny import CHAPTER, tiny_go_chapter

pytestmark = pytest.mark.skipif(shutil.which("go") is None, reason="the Go track needs Go on PATH")

REFERENCE = "// Package calc adds numbers.\npackage calc\n\n// Add returns the sum of a and b.\nfunc Add(a, b int) int {\n\treturn a + b\n}\n"
CATALOG = """\
package calc_test

import (
	"testing"

	"tiny/calc"
)

func TestSum(t *testing.T) {
	if got := calc.Add(2, 3); got != 5 {
		t.Errorf("Add(2, 3) = %d, want 5", got)
	}
}

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
    assert all(m["killed_as_documented"] for m in results.values()), results


def test_a_go_test_past_its_time_is_stopped_by_its_worker(tmp_path: Path) -> None:
    """A stand-in test binary reports one test passed, starts another and never ends: the worker
    reports that test as a timeout at its per-test time (long before the deadline the runner gives
    it), stops the binary, and says nothing more."""
    binary = tmp_path / "stand-in.test"
    binary.write_text("#!/bin/sh\nprintf '=== RUN   TestQuick\\n--- PASS: TestQuick (0.00s)\\n=== RUN   TestHang\\n'\n"
                      "exec sleep 600\n", encoding="utf-8")
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

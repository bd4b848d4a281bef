"""Grading a class: points and tasks from the manifest, the gradebook over a roster of repositories,
the gradebook from CI artifacts, and the workflow a learner's repository receives."""

from __future__ import annotations

import base64
import csv
import json
import subprocess
from pathlib import Path

import pytest
import yaml

from tiny import CHAPTER as TINY
from tiny import tiny_chapter
from course.chapters import parse
from course.results import FAIL, PASS, CaseResult, CheckResult, EntryResult
from course.errors import ManifestError
from course.grading.gradebook import row_from_results
from course.grading.scores import autograding, score

CHAPTER = "ag00"


def _manifest(**entry: object) -> dict:
    return {"id": "zz01", "title": "t", "catalog": [{"name": "a", "kind": "unit", "checks": "c", "why": "w", **entry}],
            "tracks": {"python": {"files": ["x.py"]}}}


def test_weights_and_tasks_are_read_and_checked() -> None:
    entry = parse(_manifest(weight=2.5, task=3), where="zz01").catalog[0]
    assert (entry.weight, entry.task) == (2.5, 3), entry
    assert parse(_manifest(), where="zz01").catalog[0].weight == 1.0, "an entry is worth 1 point by default"
    for bad in ({"weight": -1}, {"weight": True}, {"weight": "3"}, {"task": -2}, {"task": 1.5}):
        with pytest.raises(ManifestError, match="zz01.*'(weight|task)'"):
            parse(_manifest(**bad), where="zz01")


def test_score_counts_the_weight_of_passing_entries_only() -> None:
    chapter = parse({**_manifest(), "catalog": [
        {"name": "a", "kind": "unit", "checks": "c", "why": "w", "weight": 3, "task": 1},
        {"name": "b", "kind": "unit", "checks": "c", "why": "w", "weight": 0.5},
    ]}, where="zz01")
    a, b = chapter.catalog
    result = CheckResult(entries=[EntryResult(a, "test_a", [CaseResult("a", "", PASS)]),
                                  EntryResult(b, "test_b", [CaseResult("b", "", FAIL, "nope")])])
    assert (score(result).points, score(result).max_points) == (3, 3.5)
    doc = {"status": "fail", "tests": [{"name": "test_a", "status": "pass", "test_code": "x"},
                                       {"name": "test_b", "status": "fail", "message": "nope", "test_code": "y"}]}
    graded = autograding(doc, result)
    assert graded["version"] == 1 and graded["max_score"] == 3.5 and graded["status"] == "fail"
    assert [(t["name"], t["score"]) for t in graded["tests"]] == [("test_a", 3), ("test_b", 0)]
    assert graded["tests"][0]["task_id"] == 1 and "task_id" not in graded["tests"][1]


def test_check_writes_points_and_classroom_results(course, learner: Path, tmp_path: Path) -> None:
    env = _tiny(tmp_path)
    assert course("start", TINY, cwd=learner, env=env).code == 0
    (learner / "calc.py").write_text(TINY_REFERENCE)
    results, points = tmp_path / "results.json", tmp_path / "autograding.json"
    ran = course("check", "--json", str(results), "--autograding", str(points), cwd=learner,
                 env={**env, "COURSE_LEARNER": "org/alice"})
    assert ran.code == 0, ran.out + ran.err
    doc, graded = json.loads(results.read_text()), json.loads(points.read_text())
    total = len(doc["tests"])
    assert total == 2 and doc["course"]["chapter"] == TINY and doc["course"]["learner"] == "org/alice", doc["course"]
    assert (doc["course"]["score"], doc["course"]["max_score"]) == (total, total)
    assert graded["max_score"] == total and all(t["score"] == 1 for t in graded["tests"])
    # What the workflow hands GitHub Classroom's reporter: the file, base64-encoded, must decode back.
    assert json.loads(base64.b64decode(base64.b64encode(points.read_bytes()))) == graded


TINY_TESTS = "def test_sum():\n    assert calc.add(2, 3) == 5, 'add(2, 3)'\n\n\ndef test_zero():\n    assert calc.add(0, 0) == 0, 'add(0, 0)'\n"
TINY_REFERENCE = "def add(a, b):\n    return a + b\n"


def _tiny(tmp_path: Path) -> dict[str, str]:
    """A content folder holding the tiny chapter: a class of repositories checks in a second each."""
    return {"COURSE_CONTENT": str(tiny_chapter(tmp_path / "content", tests=TINY_TESTS, reference=TINY_REFERENCE))}


def _learner_repo(root: Path, course, env: dict[str, str], *, code: str | None) -> Path:
    """A learner repository that started the tiny chapter, with `code` as its calc.py (None: the stub)."""
    root.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    assert course("start", TINY, cwd=root, env=env).code == 0
    if code is not None:
        (root / "calc.py").write_text(code)
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    subprocess.run(["git", "-c", "user.email=l@example.org", "-c", "user.name=l", "commit", "-qm", "work"],
                   cwd=root, check=True)
    return root


def test_grade_judges_each_repository_on_a_copy_and_survives_a_hang(course, tmp_path: Path) -> None:
    env = _tiny(tmp_path)
    roster = tmp_path / "class"
    roster.mkdir()
    good = _learner_repo(roster / "alice", course, env, code=TINY_REFERENCE)
    _learner_repo(roster / "bob", course, env, code=None)
    # carol's code never returns; the per-test limit (60 s) is far away, so only the repository's
    # limit (8 s) can end her check, and it must not hold up the others
    _learner_repo(roster / "carol", course, env, code="def add(a, b):\n    while True:\n        pass\n")
    (roster / "dave").mkdir()  # not a learner repository
    before = {p: p.read_bytes() for p in good.rglob("*") if p.is_file()}

    book_csv, book_json = tmp_path / "book.csv", tmp_path / "book.json"
    ran = course("grade", str(roster), "--jobs", "2", "--timeout", "60", "--repo-timeout", "8", "--csv", str(book_csv),
                 "--json", str(book_json), cwd=tmp_path, env=env, timeout=240)
    assert ran.code == 1, "not every repository could be judged: exit 1\n" + ran.out + ran.err
    rows = {r["learner"]: r for r in csv.DictReader(book_csv.open())}
    assert sorted(rows) == ["alice", "bob", "carol", "dave"]
    assert (rows["alice"]["status"], rows["alice"]["passed"], rows["alice"]["total"]) == ("pass", "2", "2"), rows["alice"]
    assert rows["alice"]["last_commit"], "the last commit is recorded"
    assert (rows["bob"]["status"], rows["bob"]["passed"]) == ("fail", "0"), rows["bob"]
    assert "add" in rows["bob"]["reasons"], rows["bob"]
    assert rows["carol"]["status"] == "not judged" and "repository limit" in rows["carol"]["reasons"], rows["carol"]
    assert rows["dave"]["status"] == "not judged" and "not a learner repository" in rows["dave"]["reasons"]
    assert json.loads(book_json.read_text())["judged"] == 2
    assert "2 of 4 repositories judged" in ran.out
    after = {p: p.read_bytes() for p in good.rglob("*") if p.is_file()}
    assert after == before, "grading never changes a learner's repository"


def test_gradebook_from_downloaded_results(course, tmp_path: Path) -> None:
    env = _tiny(tmp_path)
    artifacts = tmp_path / "artifacts"
    for name, code in (("course-results-alice", TINY_REFERENCE), ("course-results-bob", None)):
        repo = _learner_repo(tmp_path / name.rsplit("-", 1)[1], course, env, code=code)
        (artifacts / name).mkdir(parents=True)
        course("check", "--json", str(artifacts / name / "results.json"), cwd=repo, env=env)
    (artifacts / "broken").mkdir()
    (artifacts / "broken" / "results.json").write_text("{not json")
    book = tmp_path / "book.csv"
    ran = course("grade", "--from-results", str(artifacts), "--csv", str(book), "--json", str(tmp_path / "b.json"),
                 cwd=tmp_path)
    assert ran.code == 1, ran.out + ran.err
    rows = {r["learner"]: r for r in csv.DictReader(book.open())}
    assert rows["course-results-alice"]["status"] == "pass"
    assert rows["course-results-bob"]["status"] == "fail" and rows["course-results-bob"]["chapter"] == TINY
    assert rows["broken"]["status"] == "not judged"


def test_a_document_that_is_not_results_is_not_judged() -> None:
    for doc in ({}, [], {"status": "pass"}, {"status": "weird", "tests": []}, {"status": "pass", "tests": [1]}):
        assert not row_from_results("x", doc).judged, doc


def test_grade_usage_errors(course, tmp_path: Path) -> None:
    both = course("grade", str(tmp_path), "--from-results", str(tmp_path), cwd=tmp_path)
    neither = course("grade", cwd=tmp_path)
    missing = course("grade", str(tmp_path / "nowhere"), cwd=tmp_path)
    for ran in (both, neither, missing):
        assert ran.code == 2 and "Traceback" not in ran.err and len(ran.err.strip().splitlines()) == 1, ran.err


def test_start_writes_the_ci_workflow_once(course, learner: Path) -> None:
    ran = course("start", CHAPTER, "--ci", "github", cwd=learner)
    workflow = learner / ".github" / "workflows" / "course.yml"
    assert ran.code == 0 and "wrote  .github/workflows/course.yml" in ran.out, ran.out + ran.err
    doc = yaml.safe_load(workflow.read_text())
    steps = doc["jobs"]["check"]["steps"]
    commands = " ".join(s.get("run", "") for s in steps)
    assert "course check --json results.json" in commands and "pip install" in commands
    assert any(s.get("uses", "").startswith("actions/upload-artifact") and s["with"]["path"] == "results.json"
               for s in steps)
    workflow.write_text("# mine\n")
    again = course("start", CHAPTER, "--ci", "github", cwd=learner)
    assert "kept" in again.out and workflow.read_text() == "# mine\n", "never overwrites a learner's file"

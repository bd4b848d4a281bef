"""Grading a class: points and tasks from the manifest, the gradebook over a roster of repositories,
the gradebook from CI artifacts, and the workflow a learner's repository receives."""

from __future__ import annotations

import base64
import csv
import json
import re
import shutil
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
    assert rows["alice"]["commit"] and rows["alice"]["commit_date"].startswith("20"), "the last commit is recorded"
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


def test_grade_without_bubblewrap_says_how_to_install_it(course, tmp_path: Path) -> None:
    import os
    import sys

    env = _tiny(tmp_path)
    roster = tmp_path / "class"
    roster.mkdir()
    _learner_repo(roster / "ann", course, env, code=TINY_REFERENCE)
    bare = tmp_path / "bin"  # a PATH with python and git, and no bwrap
    bare.mkdir()
    (bare / "python3").symlink_to(os.path.realpath(sys.executable))
    (bare / "git").symlink_to(shutil.which("git"))
    ran = course("grade", str(roster), "--json", str(tmp_path / "b.json"), "--csv", str(tmp_path / "b.csv"),
                 cwd=tmp_path, env={**env, "PATH": str(bare)})
    lines = ran.err.strip().splitlines()
    assert ran.code == 2 and len(lines) == 1 and "apt-get install bubblewrap" in lines[0] and "--no-sandbox" in lines[0], ran.err
    assert not (tmp_path / "b.json").exists(), "nothing graded"


def test_grade_usage_errors(course, tmp_path: Path) -> None:
    both = course("grade", str(tmp_path), "--from-results", str(tmp_path), cwd=tmp_path)
    neither = course("grade", cwd=tmp_path)
    missing = course("grade", str(tmp_path / "nowhere"), cwd=tmp_path)
    for ran in (both, neither, missing):
        assert ran.code == 2 and "Traceback" not in ran.err and len(ran.err.strip().splitlines()) == 1, ran.err


SOURCE = "git+https://example.org/teaching/course.git@v1"


def test_start_writes_the_ci_workflow_once(course, learner: Path) -> None:
    ran = course("start", CHAPTER, "--ci", "github", "--from", SOURCE, cwd=learner)
    workflow = learner / ".github" / "workflows" / "course.yml"
    assert ran.code == 0 and "wrote  .github/workflows/course.yml" in ran.out, ran.out + ran.err
    doc = yaml.safe_load(workflow.read_text())
    steps = doc["jobs"]["check"]["steps"]
    commands = " ".join(s.get("run", "") for s in steps)
    assert "course check --json results.json" in commands and "pip install" in commands
    assert any(s.get("uses", "").startswith("actions/upload-artifact") and s["with"]["path"] == "results.json"
               for s in steps)
    workflow.write_text("# mine\n")
    again = course("start", CHAPTER, "--ci", "github", "--from", SOURCE, cwd=learner)
    assert "kept" in again.out and workflow.read_text() == "# mine\n", "never overwrites a learner's file"


# --- the CI workflow: installed from the instructor's source, actions pinned ---------------------------

PINNED = re.compile(r"^[\w.-]+/[\w.-]+@[0-9a-f]{40}$")


def test_the_workflow_installs_from_the_named_source_and_pins_every_action(course, learner: Path) -> None:
    wheel = "https://example.org/dist/course-0.1.0-py3-none-any.whl#sha256=" + "ab" * 32
    assert course("start", CHAPTER, "--ci", "github", "--from", wheel, cwd=learner).code == 0
    text = (learner / ".github" / "workflows" / "course.yml").read_text()
    steps = yaml.safe_load(text)["jobs"]["check"]["steps"]
    installs = [s["run"] for s in steps if "pip install" in s.get("run", "")]
    assert installs == [f"python -m pip install 'course @ {wheel}'"], installs
    assert "COURSE_INSTALL" not in text and "'course'" not in text, "no bare name on a public index"
    for step in steps:
        if "uses" in step:
            assert PINNED.match(step["uses"]), f"not pinned to a commit: {step['uses']}"
    for line in text.splitlines():
        if "uses:" in line:
            assert re.search(r"@[0-9a-f]{40}\s+# v\d", line), f"the version is said beside the SHA: {line}"


def test_start_refuses_a_source_that_is_not_pinned(course, learner: Path) -> None:
    for source in ("course", "course==0.1.0", "git+https://example.org/course.git", "http://example.org/c-0.1-py3-none-any.whl",
                   "https://example.org/course-0.1.0-py3-none-any.whl", "git+https://example.org/${{ secrets.X }}.git@v1"):
        ran = course("start", CHAPTER, "--ci", "github", "--from", source, cwd=learner)
        assert ran.code == 2 and len(ran.err.strip().splitlines()) == 1 and "Traceback" not in ran.err, (source, ran.err)
    assert not (learner / ".github").exists()
    ran = course("start", CHAPTER, "--ci", "github", cwd=learner)  # an editable checkout has no pinned origin
    assert ran.code == 2 and "--from" in ran.err, ran.err
    ran = course("start", CHAPTER, "--from", SOURCE, cwd=learner)
    assert ran.code == 2 and "--ci" in ran.err, ran.err


def _actionlint() -> str | None:
    """actionlint on PATH, or where `go install` put it (GOPATH's bin)."""
    found = shutil.which("actionlint")
    if found or not shutil.which("go"):
        return found
    gopath = subprocess.run(["go", "env", "GOPATH"], capture_output=True, text=True, timeout=60).stdout.strip()
    installed = Path(gopath, "bin", "actionlint")
    return str(installed) if gopath and installed.is_file() else None


@pytest.mark.skipif(_actionlint() is None, reason="actionlint is not installed "
                    "(go install github.com/rhysd/actionlint/cmd/actionlint@v1.7.12)")
def test_actionlint_finds_nothing_in_the_workflow(course, learner: Path) -> None:
    assert course("start", CHAPTER, "--ci", "github", "--from", SOURCE, cwd=learner).code == 0
    done = subprocess.run([_actionlint(), str(learner / ".github" / "workflows" / "course.yml")], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_check_leaves_the_committed_state_file_as_it_was(course, learner: Path, tmp_path: Path) -> None:
    """.course.json, which learners commit for their CI, changes when a chapter or a hint does, never
    because a check ran: git shows nothing to commit after checks."""
    env = _tiny(tmp_path)
    shutil.rmtree(learner / ".git")
    subprocess.run(["git", "init", "-q"], cwd=learner, check=True)
    assert course("start", TINY, cwd=learner, env=env).code == 0
    assert (learner / ".course" / ".gitignore").is_file()
    subprocess.run(["git", "add", "-A"], cwd=learner, check=True)
    subprocess.run(["git", "-c", "user.email=l@example.org", "-c", "user.name=l", "commit", "-qm", "start"], cwd=learner,
                   check=True)
    before = (learner / ".course.json").read_bytes()
    for _ in range(2):
        course("check", cwd=learner, env=env)
    assert (learner / ".course.json").read_bytes() == before
    status = subprocess.run(["git", "status", "--porcelain"], cwd=learner, capture_output=True, text=True, check=True)
    assert status.stdout == "", f"a check left changes for git: {status.stdout}"
    progress = json.loads((learner / ".course" / "progress.json").read_text())
    assert progress["chapters"][TINY]["last_check"]["total"] == 2


# --- a grade that survives: order of completion, the book as rows finish, --resume ---------------------


def _roster(course, tmp_path: Path, env: dict[str, str], names: list[str], code: str) -> Path:
    roster = tmp_path / "class"
    roster.mkdir()
    for name in names:
        _learner_repo(roster / name, course, env, code=code)
    return roster


def _book(path: Path) -> list[dict]:
    return [{k: v for k, v in row.items() if k != "seconds"} for row in json.loads(path.read_text())["rows"]]


def test_ctrl_c_leaves_a_valid_book_that_resume_completes_as_one_run_would(course, tmp_path: Path) -> None:
    import os
    import signal
    import sys
    import time

    from conftest import REPO

    env = _tiny(tmp_path)
    names = ["ann", "ben", "cat", "dan", "eve", "fay"]
    slow = "import time\n\ntime.sleep(1.0)\n\n\n" + TINY_REFERENCE  # each check takes a second at least
    roster = _roster(course, tmp_path, env, names, slow)
    once = tmp_path / "once.json"
    assert course("grade", str(roster), "--jobs", "2", "--json", str(once), "--csv", str(tmp_path / "once.csv"),
                  cwd=tmp_path, env=env, timeout=600).code == 0

    book, sheet = tmp_path / "book.json", tmp_path / "book.csv"
    grade = subprocess.Popen([sys.executable, "-m", "course", "grade", str(roster), "--jobs", "1", "--json", str(book),
                              "--csv", str(sheet)], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, env={**os.environ, **env, "NO_COLOR": "1", "PYTHONPATH": str(REPO)})
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        try:
            if len(json.loads(book.read_text())["rows"]) >= 2:
                break
        except (OSError, ValueError, KeyError):
            pass  # not written yet: the file only ever appears whole
        time.sleep(0.05)
    grade.send_signal(signal.SIGINT)
    out, err = grade.communicate(timeout=120)
    assert grade.returncode == 130, out + err
    partial = json.loads(book.read_text())
    assert 2 <= len(partial["rows"]) < len(names) and partial["complete"] is False, partial
    assert [r["status"] for r in partial["rows"]] == ["pass"] * len(partial["rows"]), "no interrupted row is kept"
    assert len(list(csv.DictReader(sheet.open()))) == len(partial["rows"]), "the CSV holds the same rows"
    assert "--resume" in err, err

    resumed = course("grade", str(roster), "--jobs", "2", "--json", str(book), "--csv", str(sheet), "--resume",
                     cwd=tmp_path, env=env, timeout=600)
    assert resumed.code == 0, resumed.out + resumed.err
    assert f"resuming: {len(partial['rows'])} repositories already in" in resumed.err, resumed.err
    assert _book(book) == _book(once), "a grade stopped and resumed gives the book one run gives"
    assert json.loads(book.read_text())["complete"] is True


def test_rows_come_in_the_order_checks_finish(course, tmp_path: Path) -> None:
    env = _tiny(tmp_path)
    roster = tmp_path / "class"
    roster.mkdir()
    _learner_repo(roster / "a-slow", course, env, code="import time\n\ntime.sleep(4)\n\n\n" + TINY_REFERENCE)
    _learner_repo(roster / "b-quick", course, env, code=TINY_REFERENCE)
    ran = course("grade", str(roster), "--jobs", "2", "--json", str(tmp_path / "b.json"), "--csv", str(tmp_path / "b.csv"),
                 cwd=tmp_path, env=env, timeout=300)
    assert ran.code == 0, ran.out + ran.err
    progress = [line.strip() for line in ran.err.splitlines() if line.strip().endswith(": pass")]
    assert progress == ["b-quick: pass", "a-slow: pass"], ran.err
    assert [r["learner"] for r in json.loads((tmp_path / "b.json").read_text())["rows"]] == ["a-slow", "b-quick"], (
        "the book keeps the roster's order")


def test_the_class_chapter_and_what_a_roster_folder_holds_besides(course, tmp_path: Path) -> None:
    env = _tiny(tmp_path)
    roster = _roster(course, tmp_path, env, ["ann"], TINY_REFERENCE)
    (roster / "notes.txt").write_text("not a repository")
    other = roster / "ben"
    other.mkdir()
    state = {"version": 1, "current": "ag00", "chapters": {"ag00": {"started": "", "language": "python"}}}
    (other / ".course.json").write_text(json.dumps(state))
    ran = course("grade", str(roster), "--json", str(tmp_path / "b.json"), "--csv", str(tmp_path / "b.csv"),
                 cwd=tmp_path, env=env)
    assert ran.code == 2 and "different chapters" in ran.err and "--chapter" in ran.err, ran.err
    ran = course("grade", str(roster), "--chapter", TINY, "--json", str(tmp_path / "b.json"), "--csv",
                 str(tmp_path / "b.csv"), cwd=tmp_path, env=env, timeout=300)
    assert ran.code == 1, ran.out + ran.err
    assert "skipped" in ran.err and "notes.txt: not a folder" in ran.err, ran.err
    rows = {r["learner"]: r for r in json.loads((tmp_path / "b.json").read_text())["rows"]}
    assert rows["ann"]["status"] == "pass", rows["ann"]
    assert rows["ben"]["reasons"] == [f"chapter {TINY} is not started in this repository (it is on ag00)"], rows["ben"]


def test_a_timing_sensitive_failure_is_judged_again_once(course, tmp_path: Path) -> None:
    """The catalog's test_clock fails the first time it runs and passes after (a counter kept outside
    the copy, so this runs without the sandbox, whose /tmp is new each run); marked timing-sensitive, its
    failure is judged again, and the row says so. test_sum, not marked, is never run twice."""
    counter = tmp_path / "runs"
    tests = TINY_TESTS + (
        "\n\ndef test_clock():\n    import pathlib\n    path = pathlib.Path(%r)\n"
        "    runs = int(path.read_text()) + 1 if path.exists() else 1\n    path.write_text(str(runs))\n"
        "    assert runs > 1, 'the first run of this test fails, as a loaded machine might make it'\n" % str(counter))
    root = tiny_chapter(tmp_path / "content", tests=tests, reference=TINY_REFERENCE)
    manifest = root / "chapters" / TINY / "chapter.yaml"
    doc = yaml.safe_load(manifest.read_text())
    for entry in doc["catalog"]:
        entry["timing_sensitive"] = entry["name"] == "clock"
        entry["weight"] = 2 if entry["name"] == "clock" else 1
    manifest.write_text(yaml.safe_dump(doc, sort_keys=False))
    env = {"COURSE_CONTENT": str(root)}
    roster = _roster(course, tmp_path, env, ["ann"], TINY_REFERENCE)
    ran = course("grade", str(roster), "--no-sandbox", "--json", str(tmp_path / "b.json"), "--csv", str(tmp_path / "b.csv"),
                 cwd=tmp_path, env=env, timeout=300)
    assert ran.code == 0, ran.out + ran.err
    row = json.loads((tmp_path / "b.json").read_text())["rows"][0]
    assert (row["status"], row["passed"], row["score"], row["max_score"]) == ("pass", 3, 4, 4), row
    assert row["rejudged"] == ["test_clock: failed, then passed when judged again"], row
    assert counter.read_text() == "2", "judged again once, and only it"
    sheet = list(csv.DictReader((tmp_path / "b.csv").open()))[0]
    assert sheet["rejudged"] == "test_clock: failed, then passed when judged again"


def test_csv_cells_hold_one_reason_a_line_and_the_commit_apart(tmp_path: Path) -> None:
    from course.grading.gradebook import Row, write_csv

    row = Row("ann", status="fail", commit="abc1234", commit_date="2026-11-30T10:00:00+00:00",
              reasons=["test_a: got 'x; y', want 'z'", "test_b: failed; twice"])
    write_csv(tmp_path / "b.csv", [row])
    read = list(csv.DictReader((tmp_path / "b.csv").open()))[0]
    assert read["reasons"].split("\n") == row.reasons
    assert (read["commit"], read["commit_date"]) == ("abc1234", "2026-11-30T10:00:00+00:00")


# --- from CI's results: zips, what was skipped, the roster's missing learners ---------------------------


def test_from_results_names_the_missing_reads_zips_and_says_what_it_skipped(course, tmp_path: Path) -> None:
    import zipfile

    env = _tiny(tmp_path)
    artifacts = tmp_path / "artifacts"
    for name, code in (("alice", TINY_REFERENCE), ("bob", None), ("eve", TINY_REFERENCE)):
        repo = _learner_repo(tmp_path / name, course, env, code=code)
        out = tmp_path / f"{name}.json"
        course("check", "--json", str(out), cwd=repo, env={**env, "COURSE_LEARNER": f"school/ag-{name}"})
        if name == "bob":  # downloaded from the web page: a zip
            artifacts.mkdir(exist_ok=True)
            with zipfile.ZipFile(artifacts / "course-results-ag-bob.zip", "w") as archive:
                archive.write(out, "results.json")
        else:
            (artifacts / f"course-results-ag-{name}").mkdir(parents=True, exist_ok=True)
            (out).rename(artifacts / f"course-results-ag-{name}" / "results.json")
    (artifacts / "notes.txt").write_text("a note")
    (artifacts / "course-results-ag-carol").mkdir()  # an artifact folder with nothing in it
    roster = tmp_path / "roster.csv"  # GitHub Classroom's export
    roster.write_text('"identifier","github_username","github_id","name"\n"a1","alice","1","A"\n"b1","bob","2","B"\n'
                      '"c1","carol","3","C"\n"d1","dave","4","D"\n')
    ran = course("grade", "--from-results", str(artifacts), "--roster", str(roster), "--chapter", TINY,
                 "--json", str(tmp_path / "b.json"), "--csv", str(tmp_path / "b.csv"), cwd=tmp_path, env=env)
    assert ran.code == 1, ran.out + ran.err
    rows = json.loads((tmp_path / "b.json").read_text())["rows"]
    assert [r["learner"] for r in rows] == ["school/ag-alice", "school/ag-bob", "carol", "dave", "school/ag-eve"], rows
    by = {r["learner"]: r for r in rows}
    assert by["school/ag-alice"]["status"] == "pass" and by["school/ag-bob"]["status"] == "fail"
    for missing in ("carol", "dave"):
        assert by[missing]["status"] == "not judged" and by[missing]["reasons"][0].startswith("no result"), by[missing]
    assert by["school/ag-eve"]["reasons"] == ["not on the roster"], by["school/ag-eve"]
    assert "skipped notes.txt: not a results.json nor a zip holding one" in ran.err, ran.err
    assert "skipped course-results-ag-carol/: no results.json in it" in ran.err, ran.err

    plain = tmp_path / "names.txt"
    plain.write_text("# the class\nalice\ncarol\n")
    ran = course("grade", "--from-results", str(artifacts), "--roster", str(plain), "--json", str(tmp_path / "c.json"),
                 "--csv", str(tmp_path / "c.csv"), cwd=tmp_path)
    rows = json.loads((tmp_path / "c.json").read_text())["rows"]
    assert [r["learner"] for r in rows][:2] == ["school/ag-alice", "carol"], rows


def test_the_html_report_is_written_beside_the_book(course, tmp_path: Path) -> None:
    env = _tiny(tmp_path)
    roster = _roster(course, tmp_path, env, ["ann"], TINY_REFERENCE)
    page = tmp_path / "report.html"
    ran = course("grade", str(roster), "--html", str(page), "--json", str(tmp_path / "b.json"), "--csv",
                 str(tmp_path / "b.csv"), cwd=tmp_path, env=env, timeout=300)
    assert ran.code == 0 and page.is_file(), ran.out + ran.err
    assert 'data-count="pass"><b>1</b>' in page.read_text()


# --- classroom limits: the autograding payload of every chapter and track ------------------------------


def test_the_classroom_payload_fits_its_limits_for_every_chapter() -> None:
    """Every test failing with a 100 KB message, each test's own code beside it: the payload the
    workflow hands GitHub Classroom's reporter still fits a step output (1 MB) and, base64-encoded,
    one environment string (128 KiB, the variable's name included)."""
    from course import chapters, languages
    from course.check.report import results_json
    from course.grading.scores import ENVIRONMENT_STRING_LIMIT, STEP_OUTPUT_LIMIT, payload_size

    huge = "x" * 100_000
    for chapter in chapters.load_all():
        for track in chapter.tracks.values():
            seen = chapter.for_track(track)
            adapter = languages.get(track.language)
            result = CheckResult(entries=[EntryResult(e, adapter.test_name(e.name), [CaseResult("c", "", FAIL, huge)])
                                          for e in seen.catalog])
            doc = results_json(result, adapter.test_sources(track))
            graded = autograding(doc, result)
            text = json.dumps(graded, indent=2) + "\n"
            assert len(text.encode()) == payload_size(graded)
            encoded = base64.b64encode(text.encode())
            assert len(b"COURSE_RESULTS=") + len(encoded) + 1 <= ENVIRONMENT_STRING_LIMIT, (chapter.id, track.language, len(encoded))
            assert len(b"result=") + len(encoded) + 1 <= STEP_OUTPUT_LIMIT
            assert all(t["status"] == "fail" and "more characters cut" in t["message"] for t in graded["tests"]), (
                "every message is cut, with a note")
            assert len(graded["tests"]) == len(seen.catalog)

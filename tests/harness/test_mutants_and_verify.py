"""Instructor commands: documented mutants, verify, the manifest's errors, and the pitfall hint."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import yaml

from conftest import REPO, copy_reference, tree_digest

CHAPTER = "ag01"


def content_copy(tmp_path: Path) -> Path:
    """A copy of the course content to damage safely (COURSE_CONTENT points the harness at it)."""
    root = tmp_path / "content"
    for folder in ("chapters", "starter", "reference", "fixtures", "tests/python"):
        shutil.copytree(REPO / folder, root / folder, ignore=shutil.ignore_patterns("__pycache__"))
    return root


def manifest(root: Path, chapter: str = CHAPTER) -> dict:
    return yaml.safe_load((root / "chapters" / chapter / "chapter.yaml").read_text())


def save_manifest(root: Path, data: dict, chapter: str = CHAPTER) -> None:
    (root / "chapters" / chapter / "chapter.yaml").write_text(yaml.safe_dump(data, sort_keys=False))


def test_every_documented_mutant_is_killed_as_documented(course, tmp_path: Path) -> None:
    out = tmp_path / "mutants.json"
    ran = course("mutants", CHAPTER, "--json", str(out), cwd=tmp_path, timeout=600)
    assert ran.code == 0, ran.out + ran.err
    results = json.loads(out.read_text())["mutants"]
    assert len(results) == len(manifest(REPO)["tracks"]["python"]["mutants"])
    assert all(r["killed_as_documented"] for r in results), [r for r in results if not r["killed_as_documented"]]


def test_removing_the_assertion_that_catches_a_mutant_fails_the_run(course, tmp_path: Path) -> None:
    root = content_copy(tmp_path)
    data = manifest(root)
    mutant = next(m for m in data["tracks"]["python"]["mutants"] if m["id"] == "s23")
    # s23: a missing call context reads as untainted. Only the assertions that compare the default
    # context with CallContext(tainted=True) catch it; make exactly those compare it with itself.
    tests = root / "tests" / "python" / CHAPTER / "test_ag01.py"
    text = tests.read_text()
    count = text.count("types.CallContext(tainted=True)")
    assert count >= 1, "the catalog's assertions on the default call context were not found"
    tests.write_text(text.replace("types.CallContext(tainted=True)", "types.current_call_context()"))
    ran = course("mutants", CHAPTER, "--only", "s23", cwd=tmp_path, env={"COURSE_CONTENT": str(root)}, timeout=300)
    assert ran.code == 1, ran.out + ran.err
    assert "s23" in ran.out and "survived" in ran.out, ran.out
    assert mutant["caught_by"][0] in ran.out


def test_a_stale_mutant_names_its_file_and_text(course, tmp_path: Path) -> None:
    root = content_copy(tmp_path)
    data = manifest(root)
    data["tracks"]["python"]["mutants"][0]["find"] = "this text is nowhere in the file"
    save_manifest(root, data)
    first = data["tracks"]["python"]["mutants"][0]
    ran = course("mutants", CHAPTER, "--only", first["id"], cwd=tmp_path, env={"COURSE_CONTENT": str(root)})
    assert ran.code == 1
    assert "stale" in ran.out and first["file"] in ran.out and "this text is nowhere in the file" in ran.out


def test_a_malformed_manifest_is_one_error_naming_chapter_entry_and_field(course, tmp_path: Path) -> None:
    root = content_copy(tmp_path)
    data = manifest(root)
    del data["catalog"][2]["kind"]
    save_manifest(root, data)
    ran = course("tests", CHAPTER, cwd=tmp_path, env={"COURSE_CONTENT": str(root)})
    assert ran.code == 2
    assert ran.err.strip() == f"course: chapter {CHAPTER}, catalog entry #3: missing field 'kind'", ran.err


def test_an_interrupted_run_leaves_the_reference_byte_identical(tmp_path: Path) -> None:
    reference = REPO / "reference"
    before = tree_digest(reference)
    private = tmp_path / "tmp"  # its own temporary folder: other runs on the machine use /tmp too
    private.mkdir()
    env = {**os.environ, "PYTHONPATH": str(REPO), "NO_COLOR": "1", "TMPDIR": str(private)}
    process = subprocess.Popen([sys.executable, "-m", "course", "mutants", CHAPTER], cwd=tmp_path, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    first = process.stderr.readline()  # the first mutant is judged, others are in flight
    assert re.match(r"\s+s\d+: ", first), first
    process.send_signal(signal.SIGINT)  # what Ctrl-C sends
    out, err = process.communicate(timeout=60)
    assert process.returncode != 0, out
    assert "Traceback" not in err, err
    assert tree_digest(reference) == before, "the reference changed"
    leftovers = list(private.iterdir())
    assert not leftovers, f"temporary copies left behind: {leftovers}"


def test_verify_fails_when_a_catalog_test_passes_on_the_stubs(course, tmp_path: Path) -> None:
    root = content_copy(tmp_path)
    tests = root / "tests" / "python" / CHAPTER / "test_ag01.py"
    tests.write_text(tests.read_text() + "\n\ndef test_always_passes():\n    assert True, 'always'\n")
    data = manifest(root)
    data["catalog"].append({"name": "always_passes", "kind": "unit", "checks": "nothing", "why": "none"})
    data["tracks"]["python"]["mutants"] = []
    save_manifest(root, data)
    ran = course("verify", CHAPTER, cwd=tmp_path, env={"COURSE_CONTENT": str(root)}, timeout=300)
    assert ran.code == 1
    assert "test_always_passes" in ran.out and "check nothing" in ran.out, ran.out


def test_one_documented_bug_gets_its_pitfall_named(course, learner: Path) -> None:
    from course.chapters import load_folder
    from course.mutation.apply import apply

    chapter = load_folder(REPO / "chapters" / CHAPTER)
    track = chapter.track("python")
    assert chapter.signatures_path.is_file(), "run `course verify` to record the kill signatures"
    assert course("start", CHAPTER, cwd=learner).code == 0
    copy_reference(CHAPTER, learner)
    mutant = next(m for m in track.mutants if m.id == "s05")
    apply(mutant, learner)
    ran = course("check", cwd=learner)
    assert ran.code == 1
    pitfall = chapter.pitfall(mutant.pitfall)
    assert f"hint: this pattern of failures matches pitfall {pitfall.id}: {pitfall.title}" in ran.out, ran.out


def test_verify_flags_an_assert_without_a_message(course, tmp_path: Path) -> None:
    root = content_copy(tmp_path)
    tests = root / "tests" / "python" / CHAPTER / "test_ag01.py"
    lines = tests.read_text().splitlines()
    tests.write_text("\n".join(lines) + "\n\n\ndef helper_without_message():\n    assert 1 + 1 == 2\n")
    ran = course("verify", CHAPTER, cwd=tmp_path, env={"COURSE_CONTENT": str(root)})
    assert ran.code == 1
    assert f"test_ag01.py:{len(lines) + 4}: assert without a message" in ran.out, ran.out

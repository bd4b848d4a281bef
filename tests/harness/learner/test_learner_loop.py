"""The learner's whole loop, end to end, in a temporary repository: start, check, diff, start again."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import yaml

from conftest import REPO, copy_reference

CHAPTER = "ag01"
MANIFEST = yaml.safe_load((REPO / "chapters" / CHAPTER / "chapter.yaml").read_text())
FILES = MANIFEST["tracks"]["python"]["files"]
# the Python track's tests: the entries its `catalog` names, or every entry when it names none
_PYTHON = MANIFEST["tracks"]["python"].get("catalog")
CATALOG = [f"test_{e['name']}" for e in MANIFEST["catalog"] if not _PYTHON or e["name"] in _PYTHON]


def verdict_lines(out: str) -> list[tuple[str, str]]:
    """(status, test name) for each catalog line of `course check` output, in order."""
    rows = []
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0] in {"PASS", "FAIL", "ERROR", "TIMEOUT"} and line.startswith("  "):
            rows.append((parts[0], parts[1]))
    return rows


def test_start_writes_every_stub_and_records_the_chapter(course, learner: Path) -> None:
    ran = course("start", CHAPTER, cwd=learner)
    assert ran.code == 0, ran.err
    for name in FILES:
        assert (learner / name).is_file(), f"{name} was not written"
        assert f"wrote  {name}" in ran.out
    state = json.loads((learner / ".course.json").read_text())
    assert state["current"] == CHAPTER and CHAPTER in state["chapters"]
    stub = (learner / "agent" / "types.py").read_text()
    assert "NotImplementedError" in stub and "{{" not in stub and "{%" not in stub


def test_stubs_fail_every_test_then_the_reference_passes_and_diff_is_empty(course, learner: Path, tmp_path: Path) -> None:
    assert course("start", CHAPTER, cwd=learner).code == 0
    sub = learner / "agent" / "provider"  # check works from any subfolder of the learner's repository

    on_stubs = course("check", cwd=sub, timeout=300)
    assert on_stubs.code == 1, on_stubs.out + on_stubs.err
    section = MANIFEST["catalog"][0]["stated_in"][0]["section"].split()[0].rstrip(".")  # "3. A worked..." -> "3"
    assert f"0 of {len(CATALOG)} passing: start with {CATALOG[0]} (section {section})" in on_stubs.out, on_stubs.out
    rows = verdict_lines(on_stubs.out)
    assert rows == [("FAIL", CATALOG[0])], f"fresh stubs: a summary and the first failure only, got {rows}"
    assert "not implemented yet" in on_stubs.out
    assert "Traceback" not in on_stubs.out + on_stubs.err
    assert f"0 passed, {len(CATALOG)} failed" in on_stubs.out

    every = course("check", "-v", cwd=sub, timeout=300)
    rows = verdict_lines(every.out)
    assert [name for _, name in rows] == CATALOG, "with -v, one line per catalog test, in catalog order"
    assert all(status != "PASS" for status, _ in rows), rows

    refused = course("diff", cwd=learner)
    assert refused.code == 1 and "has not passed yet" in refused.err

    copy_reference(CHAPTER, learner)
    results, junit = tmp_path / "results.json", tmp_path / "junit.xml"
    passing = course("check", CHAPTER, "--json", str(results), "--junit-xml", str(junit), cwd=learner, timeout=300)
    assert passing.code == 0, passing.out + passing.err
    assert [s for s, _ in verdict_lines(passing.out)] == ["PASS"] * len(CATALOG)
    doc = json.loads(results.read_text())
    assert doc["version"] == 3 and doc["status"] == "pass"
    assert [t["name"] for t in doc["tests"]] == CATALOG
    assert all(t["status"] == "pass" and t["test_code"].startswith("def test_") for t in doc["tests"])
    suite = ET.parse(junit).getroot()
    assert suite.get("tests") == str(len(CATALOG)) and suite.get("failures") == "0" and suite.get("errors") == "0"

    same = course("diff", cwd=learner)
    assert same.code == 0 and "no differences" in same.out, same.out + same.err

    (learner / "agent" / "types.py").write_text((learner / "agent" / "types.py").read_text() + "\n# my note\n")
    changed = course("diff", cwd=learner)
    assert changed.code == 1 and "not the ones that passed" in changed.err
    forced = course("diff", "--force", cwd=learner)
    assert forced.code == 0 and "-# my note" not in forced.out and "comments or docstrings only" in forced.out, forced.out
    everything = course("diff", "--force", "--all", cwd=learner)
    assert everything.code == 0 and "-# my note" in everything.out, everything.out

    listed = course("list", cwd=learner)
    assert "passed before, changed since" in listed.out, listed.out


def test_start_again_leaves_the_learners_files_alone(course, learner: Path) -> None:
    assert course("start", CHAPTER, cwd=learner).code == 0
    mine = learner / "agent" / "types.py"
    mine.write_text("# my work in progress\n")
    (learner / "agent" / "provider" / "sse.py").unlink()

    again = course("start", "AG-01", cwd=learner)
    assert again.code == 0, again.err
    assert mine.read_text() == "# my work in progress\n", "start overwrote a learner's file"
    assert "kept   agent/types.py" in again.out
    assert "wrote  agent/provider/sse.py" in again.out
    assert (learner / "agent" / "provider" / "sse.py").is_file()


def test_chapter_ids_are_forgiving(course, learner: Path) -> None:
    for spelling in ("ag.01", "AG-01", "Ag01"):
        ran = course("tests", spelling, cwd=learner)
        assert ran.code == 0 and "test_hand_example" in ran.out, (spelling, ran.err)


def test_show_prints_the_chapter_text(course, learner: Path) -> None:
    ran = course("show", CHAPTER, cwd=learner)
    assert ran.code == 0 and "Pitfalls" in ran.out

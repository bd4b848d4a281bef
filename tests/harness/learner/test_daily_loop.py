"""The hours a learner spends in the loop: hints, reset, fast and readable failures, honest
progress, a read-only repository, a bounded `course run`."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, copy_reference, syn_reference
from test_learner_loop import CATALOG, CHAPTER, MANIFEST, verdict_lines


def state(learner: Path) -> dict:
    """The learner's state as the course reads it: .course.json, each chapter's progress from
    .course/progress.json merged in."""
    kept = json.loads((learner / ".course.json").read_text())
    progress = learner / ".course" / "progress.json"
    if progress.is_file():
        for chapter, fields in json.loads(progress.read_text())["chapters"].items():
            kept["chapters"].setdefault(chapter, {}).update(fields)
    return kept


def started(course, learner: Path, chapter: str = CHAPTER) -> None:
    ran = course("start", chapter, cwd=learner)
    assert ran.code == 0, ran.err


# -- hints -------------------------------------------------------------------------------------------

def test_hint_reveals_one_level_per_call_for_the_first_failing_test_and_records_it(course, learner: Path) -> None:
    started(course, learner)
    hints = MANIFEST["catalog"][0]["hints"]
    assert course("check", cwd=learner).code == 1
    for level in (1, 2, 3):
        ran = course("hint", cwd=learner)
        assert ran.code == 0, ran.err
        assert f"{CATALOG[0]} ({CHAPTER}, section" in ran.out and f"hint {level} of 3" in ran.out, ran.out
        for shown in hints[:level]:
            assert shown in ran.out, f"level {level} must show {shown!r}"
        for hidden in hints[level:]:
            assert hidden not in ran.out, f"level {level} must not yet show {hidden!r}"
        assert state(learner)["chapters"][CHAPTER]["hints"] == {MANIFEST["catalog"][0]["name"]: level}
    again = course("hint", cwd=learner)
    assert "hint 3 of 3" in again.out and "last hint" in again.out
    assert state(learner)["chapters"][CHAPTER]["hints"][MANIFEST["catalog"][0]["name"]] == 3


def test_hint_for_a_named_test_and_an_unknown_one(course, learner: Path) -> None:
    started(course, learner)
    entry = MANIFEST["catalog"][3]
    ran = course("hint", f"test_{entry['name']}", cwd=learner)
    assert ran.code == 0 and entry["hints"][0] in ran.out and entry["hints"][1] not in ran.out, ran.out
    ran = course("hint", entry["name"], cwd=learner)
    assert entry["hints"][1] in ran.out
    unknown = course("hint", "no_such_test", cwd=learner)
    assert unknown.code == 2 and "no test 'no_such_test'" in unknown.err and "Traceback" not in unknown.err


def test_verify_fails_a_catalog_test_without_its_hint_levels(syn, content: Path, tmp_path: Path) -> None:
    from conftest import SYN, SYN_CATALOG
    from test_mutants_and_verify import manifest, save_manifest

    data = manifest(content)
    data["catalog"][1]["hints"] = data["catalog"][1]["hints"][:2]
    del data["catalog"][2]["hints"]
    data["tracks"]["python"]["mutants"] = []
    save_manifest(content, data)
    ran = syn("verify", SYN, cwd=tmp_path)
    assert ran.code == 1, ran.out
    line = next(l for l in ran.out.splitlines() if " hints " in l)
    assert "FAIL" in line and SYN_CATALOG[1].removeprefix("test_") in line and SYN_CATALOG[2].removeprefix("test_") in line, line


# -- reset ------------------------------------------------------------------------------------------

def test_reset_moves_the_learners_file_to_a_backup_and_restores_the_stub(course, learner: Path) -> None:
    started(course, learner)
    types = learner / "agent" / "types.py"
    stub = types.read_text()
    types.write_text("# an hour of my work\n")
    # from another folder of the repository (not agent/ itself: `python -m` would put its types.py
    # before the standard library's; the installed `course` command has no such problem)
    ran = course("reset", "../types.py", cwd=learner / "agent" / "provider")
    assert ran.code == 0, ran.err
    assert types.read_text() == stub
    backups = list((learner / ".course" / "backup").rglob("types.py"))
    assert [b.read_text() for b in backups] == ["# an hour of my work\n"], backups
    assert str(backups[0].parent.parent) in ran.out, "reset must say where the learner's version went"
    ignored = (learner / ".course" / "backup" / ".gitignore").read_text().splitlines()
    assert "*" in ignored, "backups stay out of the learner's commits"

    same = course("reset", "agent/types.py", cwd=learner)
    assert same.code == 0 and "already the stub" in same.out
    assert len(list((learner / ".course" / "backup").rglob("types.py"))) == 1


def test_a_failing_check_names_given_files_that_are_not_the_courses(syn, started: Path, content: Path) -> None:
    given = started / "pkg" / "__init__.py"
    note = "note: pkg/__init__.py is given by the course, and yours is not this version's"
    stubs = syn("check", cwd=started)
    assert stubs.code == 1 and note not in stubs.out, "a given file as the course gives it is not mentioned"
    given.write_text(given.read_text() + "# an older version of the course's file\n")
    ran = syn("check", cwd=started)
    assert ran.code == 1 and note in ran.out and "`course reset pkg/__init__.py`" in ran.out, ran.out + ran.err
    syn_reference(content, started)
    given.write_text(given.read_text() + "# mine\n")
    passing = syn("check", cwd=started)
    assert passing.code == 0 and "note:" not in passing.out, "a check that passes has nothing to explain"


def test_reset_all_and_bad_names(course, learner: Path) -> None:
    started(course, learner)
    copy_reference(CHAPTER, learner)
    ran = course("reset", "--all", cwd=learner)
    assert ran.code == 0, ran.err
    kept = {p.relative_to(p.parents[len(Path(p.name).parts) + 1]) for p in (learner / ".course" / "backup").rglob("*.py")}
    assert kept, "the reference copies were moved to the backup"
    assert course("check", cwd=learner).code == 1, "every file is a stub again"
    for args in (("nope.py",), ()):
        bad = course("reset", *args, cwd=learner)
        assert bad.code == 2 and "Traceback" not in bad.err, bad.err


# -- failing fast and readable ---------------------------------------------------------------------

def test_k_matches_catalog_names_not_case_ids_and_case_selects_cases(course, learner: Path) -> None:
    started(course, learner)
    ran = course("check", "-k", "request", "-v", cwd=learner)  # -v: every failing line, not the fresh-stubs summary
    names = [n for _, n in verdict_lines(ran.out)]
    assert names == [n for n in CATALOG if "request" in n], f"-k request ran {names}"
    assert "not recorded as progress" in ran.out
    ran = course("check", "-k", "retry and not capped", "-v", cwd=learner)
    names = [n for _, n in verdict_lines(ran.out)]
    assert names == [n for n in CATALOG if "retry" in n and "capped" not in n], names
    bad = course("check", "-k", "(retry or", cwd=learner)
    assert bad.code == 2 and "not a valid test selection" in bad.err
    cases = course("check", "-k", "sse_spec", "--case", "bom", cwd=learner)
    assert [n for _, n in verdict_lines(cases.out)] == ["test_sse_spec_edges"], cases.out
    assert "(1 of 1 cases)" not in cases.out and "leading_bom" in cases.out, cases.out
    bad_case = course("check", "--case", "(bom or", cwd=learner)
    assert bad_case.code == 2 and "--case '(bom or' is not a valid case selection" in bad_case.err, bad_case.err
    assert "-k" not in bad_case.err, "the message names the option it was given to"
    bad_case = course("check", "--case", "bom$", cwd=learner)
    assert bad_case.code == 2 and bad_case.err.startswith("course: --case 'bom$'"), bad_case.err
    assert "-k EXPR" in course("check", "--help", cwd=learner).out


def test_exitfirst_stops_at_the_first_failure_and_last_failed_reruns_only_failures(course, learner: Path) -> None:
    started(course, learner)
    copy_reference(CHAPTER, learner)
    retry = learner / "agent" / "provider" / "retry.py"
    retry.write_text(retry.read_text() + "\n\ndef retryable(error):\n    raise NotImplementedError('mine')\n")
    full = course("check", cwd=learner)
    failing = [n for s, n in verdict_lines(full.out) if s != "PASS"]
    assert failing and len(failing) < len(CATALOG), full.out

    first = course("check", "-x", "-v", cwd=learner)
    rows = verdict_lines(first.out)
    assert rows[-1] == ("FAIL", failing[0]) and all(s == "PASS" for s, _ in rows[:-1]), rows
    assert "stopped at the first failure (-x)" in first.out
    assert f"{len(CATALOG) - len(rows)} skipped" in first.out

    last = course("check", "--lf", "-v", cwd=learner)
    assert [n for _, n in verdict_lines(last.out)] == failing, last.out
    copy_reference(CHAPTER, learner)
    fixed = course("check", "--lf", cwd=learner)
    assert fixed.code == 0 and "not recorded as progress" in fixed.out, fixed.out
    assert state(learner)["chapters"][CHAPTER]["last_check"]["failing"] == []


LOOP_IN_READER = "\n\ndef _spin(*args, **kwargs):\n    while True:\n        pass\n\nEventReader.__iter__ = _spin\n"


def test_an_endless_loop_in_a_parametrized_test_costs_one_timeout(course, learner: Path) -> None:
    started(course, learner)
    copy_reference(CHAPTER, learner)
    sse = learner / "agent" / "provider" / "sse.py"
    sse.write_text(sse.read_text() + LOOP_IN_READER)
    ran = course("check", "-k", "sse_spec_edges", "--timeout", "0.5", cwd=learner)
    assert ran.code == 1
    assert verdict_lines(ran.out) == [("TIMEOUT", "test_sse_spec_edges")], ran.out
    assert "(1 of " in ran.out, "exactly one case timed out"
    assert "more cases not run: case " in ran.out and "of this test timed out" in ran.out, ran.out


def test_the_whole_check_has_a_budget(course, learner: Path) -> None:
    started(course, learner)
    copy_reference(CHAPTER, learner)
    sse = learner / "agent" / "provider" / "sse.py"
    sse.write_text(sse.read_text() + LOOP_IN_READER)
    ran = course("check", "--timeout", "1", "--budget", "1.5", cwd=learner)
    assert ran.code == 1
    assert "the whole check took longer than 1.5 s" in ran.out, ran.out
    assert "skipped" in ran.out.splitlines()[-1] or "skipped" in ran.out


def test_failure_reasons_are_bounded_and_captured_output_is_counted(course, learner: Path) -> None:
    started(course, learner)
    copy_reference(CHAPTER, learner)
    types = learner / "agent" / "types.py"
    types.write_text(types.read_text() + "\n\n_collect = collect\n\ndef collect(deltas):\n"
                     "    print('one')\n    print('two')\n    message, usage = _collect(deltas)\n"
                     "    return Message(role=message.role, content=message.content + 'x' * 900), usage\n")
    ran = course("check", "-k", "hand_example", cwd=learner)
    assert ran.code == 1
    reason = [line for line in ran.out.splitlines() if line.startswith(" " * 10)]
    assert reason and max(len(line) for line in reason) <= 130, ran.out
    assert "  got:  " in ran.out and "  want: " in ran.out, ran.out
    assert "captured output: 2 lines (-v shows it)" in ran.out, ran.out
    full = course("check", "-k", "hand_example", "-v", cwd=learner)
    assert "x" * 900 in full.out and "captured output:\n" in full.out and "one\n" in full.out


def test_tests_source_prints_one_tests_code(course, learner: Path) -> None:
    ran = course("tests", CHAPTER, "--source", "hand_example", cwd=learner)
    assert ran.code == 0 and ran.out.startswith("def test_hand_example("), ran.out[:200]
    bad = course("tests", CHAPTER, "--source", "nope", cwd=learner)
    assert bad.code == 2 and "no test 'nope'" in bad.err


# -- honest progress ----------------------------------------------------------------------------------

def test_list_tells_passed_from_passed_before_and_start_keeps_the_current_chapter(course, learner: Path) -> None:
    started(course, learner)
    copy_reference(CHAPTER, learner)
    assert course("check", cwd=learner).code == 0
    assert f"{CHAPTER}" in course("list", cwd=learner).out
    line = next(l for l in course("list", cwd=learner).out.splitlines() if CHAPTER in l)
    assert line.startswith("*") and "[passed]" in line, line
    types = learner / "agent" / "types.py"
    types.write_text(types.read_text() + "\n# changed\n")
    line = next(l for l in course("list", cwd=learner).out.splitlines() if CHAPTER in l)
    assert "passed before, changed since" in line, line

    other = "ag00"
    assert course("start", other, cwd=learner).code == 0
    assert state(learner)["current"] == other, "a chapter started for the first time becomes current"
    again = course("start", CHAPTER, cwd=learner)
    assert again.code == 0 and state(learner)["current"] == other, "starting a started chapter must not switch"
    assert "--switch" in again.out
    assert course("start", CHAPTER, "--switch", cwd=learner).code == 0
    assert state(learner)["current"] == CHAPTER


# -- a read-only repository -----------------------------------------------------------------------------

def _read_only(learner: Path, args: list[str]) -> subprocess.CompletedProcess:
    """Run course with the learner's folder read-only: write bits removed for an ordinary user; for
    root (whom write bits do not stop), a read-only bind mount in a private mount namespace."""
    env = {**os.environ, "NO_COLOR": "1", "PYTHONPATH": str(REPO)}
    command = [sys.executable, "-m", "course", *args]
    if os.geteuid() != 0:
        modes = {p: p.stat().st_mode for p in [learner, *learner.rglob("*")]}
        for path in modes:
            path.chmod(modes[path] & ~0o222)
        try:
            return subprocess.run(command, cwd=learner, env=env, capture_output=True, text=True, timeout=300)
        finally:
            for path, mode in modes.items():
                path.chmod(mode)
    if not shutil.which("unshare"):
        pytest.skip("running as root without unshare: no way to make a folder read-only for root")
    script = ('mount --bind "$0" "$0" && mount -o remount,ro,bind "$0" && cd "$0" && exec "$@"')
    done = subprocess.run(["unshare", "-m", "sh", "-c", script, str(learner), *command], env=env,
                          capture_output=True, text=True, timeout=300)
    if "mount:" in done.stderr or "unshare:" in done.stderr:
        pytest.skip(f"cannot make a read-only mount here: {done.stderr.strip()}")
    return done


def test_a_read_only_repository_is_checked_and_reported_and_start_refuses(course, learner: Path) -> None:
    started(course, learner)
    copy_reference(CHAPTER, learner)
    before = (learner / ".course.json").read_text()
    ran = _read_only(learner, ["check"])
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert f"{len(CATALOG)} passed, 0 failed" in ran.stdout
    assert "Traceback" not in ran.stdout + ran.stderr
    notes = [l for l in ran.stderr.splitlines() if l.strip()]
    assert len(notes) == 1 and "progress not recorded" in notes[0], ran.stderr
    assert (learner / ".course.json").read_text() == before

    types = learner / "agent" / "types.py"
    types.write_text(types.read_text() + "\n\ndef collect(deltas):\n    raise NotImplementedError\n")
    failing = _read_only(learner, ["check"])
    assert failing.returncode == 1, failing.stdout + failing.stderr

    (learner / "agent" / "provider" / "sse.py").unlink()
    refused = _read_only(learner, ["start", "ag00"])
    assert refused.returncode == 2, refused.stdout + refused.stderr
    lines = [l for l in refused.stderr.splitlines() if l.strip()]
    assert len(lines) == 1 and str(learner) in lines[0] and "read-only" in lines[0], refused.stderr


# -- course run -------------------------------------------------------------------------------------------

def test_run_reports_a_syntax_error_in_one_line_and_stops_an_endless_demonstration(course, learner: Path) -> None:
    started(course, learner, "ag00")
    copy_reference("ag00", learner)
    request = learner / "agent" / "contract" / "request.py"
    original = request.read_text()
    request.write_text(original + "\ndef broken(:\n")
    ran = course("run", cwd=learner)
    assert ran.code == 1 and "Traceback" not in ran.out + ran.err, ran.out + ran.err
    assert ran.err.strip().splitlines() == [f"course: agent/contract/request.py:{len(original.splitlines()) + 2}: syntax error: invalid syntax"] \
        or "agent/contract/request.py" in ran.err and "syntax error" in ran.err, ran.err
    request.write_text(original + "\nwhile True:\n    pass\n")
    ran = course("run", "--timeout", "1", cwd=learner)
    assert ran.code == 1 and "did not finish within 1 s" in ran.err, ran.out + ran.err


def test_failed_first_runs_those_tests_first_and_reports_in_catalog_order() -> None:
    """What watch does after a failing check: the tests that failed run first (their verdict comes
    sooner), while the result keeps the catalog's order."""
    from course import chapters
    from course.check import run_check

    chapter = chapters.get("ag00")
    track = chapter.track("python")
    names = [e.name for e in chapter.catalog]
    first = [names[-1], names[3]]
    seen: list[str] = []
    result = run_check(chapter, track, track.reference, first=first, on_entry=lambda e: seen.append(e.entry.name))
    assert result.ok, result.problem
    assert seen[:2] == [names[3], names[-1]], f"ran in the order {seen[:4]}..., want {first} first (in catalog order)"
    assert [e.entry.name for e in result.entries] == names, "the result lists the catalog's order"


def test_hint_takes_a_chapter_name_as_every_command_does(course, learner: Path) -> None:
    assert course("start", "ag01", cwd=learner).code == 0
    ran = course("hint", "AG-01", cwd=learner)
    assert ran.code == 0 and "hint 1 of 3" in ran.out, ran.out + ran.err

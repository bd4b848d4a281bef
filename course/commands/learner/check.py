"""`course check`: the chapter's catalog on the learner's code (or the reference); the exit code is the verdict."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from course.commands.shared import (
    CHAPTER,
    code_under_test,
    echo,
    language_option,
    record_check,
    timeout_options,
    writable,
)
from course.errors import UsageError


@click.command()
@click.argument("chapter", metavar="[CHAPTER]", type=CHAPTER, required=False)
@click.option("--reference", is_flag=True, help="Run the catalog on the course's reference (instructors, CI).")
@click.option("-k", "select", default="", metavar="EXPR",
              help="Run only the catalog tests whose names match EXPR: words, and/or/not, parentheses "
                   "(`-k retry`, `-k 'sse and not large'`).")
@click.option("--case", "case", default="", metavar="EXPR",
              help="Run only the cases whose ids match EXPR (the same syntax, on case ids: `--case bom`).")
@click.option("-x", "--exitfirst", "stop_first", is_flag=True, help="Stop at the first failing test.")
@click.option("--lf", "--last-failed", "last_failed", is_flag=True, help="Run only the tests that failed last time.")
@timeout_options
@click.option("--json", "json_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Write exercism test-runner v3 results.json to this file.")
@click.option("--junit-xml", "junit_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Write JUnit XML to this file (for CI).")
@click.option("--autograding", "autograding_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Write GitHub Classroom's runner result (points per test) to this file.")
@click.option("-v", "--verbose", is_flag=True, help="Every test, full failure texts and tracebacks, captured output.")
@language_option("The track, with --reference.")
@click.option("--coverage", is_flag=True, help="Also show the lines of your files that no test ran.")
def check(chapter: Any, reference: bool, select: str, case: str, stop_first: bool, last_failed: bool,
          timeout: float | None, budget: float | None, json_path: Path | None, junit_path: Path | None,
          autograding_path: Path | None, verbose: bool, language: str, coverage: bool) -> None:
    """Run the chapter's catalog on your code: exit 0 when every test passes, 1 otherwise.

    Only a full run records progress: with -k, --case, --lf or -x the verdict is shown, and
    `course list` still shows the last full check.
    """
    from course import languages
    from course.check import DEFAULT_BUDGET, DEFAULT_TIMEOUT, run_check
    from course.processes import single_run_workers
    from course.check.report import TerminalReport, junit_xml, results_json, write_json, write_junit
    from course.pitfall_hints import diagnose
    from course.learner import fingerprint

    writable(json_path, junit_path, autograding_path)
    target = code_under_test(chapter, reference, language)
    repo, chapter, track, state = target.repo, target.chapter, target.track, target.state
    code_root = target.code_root
    where = "the course's reference" if repo is None else str(repo.root)
    only = None
    if last_failed:
        failed = state.last_check.get("failing") if state else None
        if failed:
            only = set(failed)
        else:
            echo(click.style("no failures recorded: running every test", dim=True))
    files_before = fingerprint(code_root, track.files) if repo is not None else ""

    report = TerminalReport(echo, verbose=verbose)
    echo(f"{chapter.id}: {chapter.title}  ({where})")
    result = run_check(chapter, track, code_root, timeout=timeout or DEFAULT_TIMEOUT, budget=budget or DEFAULT_BUDGET,
                       select=select, cases=case, only=only, stop_first=stop_first, on_entry=report.entry,
                       coverage=coverage, workers=single_run_workers())
    partial = only is not None or bool(select) or bool(case) or stop_first
    if repo is not None:
        record_check(repo, chapter.id, result, files_before, partial=partial)
    try:
        if json_path or autograding_path:
            from course.grading.gradebook import check_record

            record = check_record(chapter, track, repo, result)
            doc = results_json(result, languages.get(track.language).test_sources(track), course=record)
        if json_path:
            write_json(json_path, doc)
        if autograding_path:
            from course.grading.scores import autograding

            write_json(autograding_path, autograding(doc, result))
        if junit_path:
            write_junit(junit_path, junit_xml(result, chapter.id))
    except OSError as exc:
        raise UsageError(f"cannot write {exc.filename}: {exc.strerror}") from None

    if result.problem:
        report.problem(result.problem, blocked=not result.not_run)
        for entry in result.entries:
            if entry.test_name not in report.shown:
                report.entry(entry)
    report.finish(result)
    if coverage:
        # a learner's own files; on the reference, every file (the given ones are the course's code too)
        mine = [name for name in track.files if repo is None or name not in track.given]
        report.coverage(result, mine, select=select or case, whose="the reference's" if repo is None else "your")
    hint = "" if partial else diagnose(chapter, track, result)
    if hint:
        echo("")
        echo(click.style("hint: ", fg="cyan", bold=True) + hint)
    report.closing(result)
    if repo is not None and partial:
        echo(click.style("(a partial run: shown, not recorded as progress)", dim=True))
    if repo is not None and result.ok and not partial:
        echo(f"\nchapter {chapter.id} passed. `course diff {chapter.id}` compares your code with the reference.")
    sys.exit(0 if result.ok else 1)

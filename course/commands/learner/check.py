"""`course check`: the chapter's catalog on the learner's code (or the reference); the exit code is the verdict."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from course.commands.shared import (
    CHAPTER,
    code_under_test,
    complete_tests,
    echo,
    language_option,
    record_check,
    timeout_options,
    writable,
    write_limit_option,
)
from course.errors import UsageError


@click.command()
@click.argument("chapter", metavar="[CHAPTER]", type=CHAPTER, required=False)
@click.option("--reference", is_flag=True, help="Run the catalog on the course's reference (instructors, CI).")
@click.option("-k", "select", default="", metavar="EXPR", shell_complete=complete_tests,
              help="Run only the catalog tests whose names match EXPR: words, and/or/not, parentheses "
                   "(`-k retry`, `-k 'sse and not large'`).")
@click.option("--case", "case", default="", metavar="EXPR",
              help="Run only the cases whose ids match EXPR (the same syntax, on case ids: `--case bom`).")
@click.option("-x", "--exitfirst", "stop_first", is_flag=True, help="Stop at the first failing test.")
@click.option("--lf", "--last-failed", "last_failed", is_flag=True, help="Run only the tests that failed last time.")
@timeout_options
@write_limit_option
@click.option("--json", "json_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Write exercism test-runner v3 results.json to this file.")
@click.option("--junit-xml", "junit_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Write JUnit XML to this file (for CI).")
@click.option("--autograding", "autograding_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Write GitHub Classroom's runner result (points per test) to this file.")
@click.option("-v", "--verbose", is_flag=True, help="Every test, full failure texts and tracebacks, captured output.")
@language_option("The track, with --reference.")
@click.option("--coverage", is_flag=True, help="Also show the lines of your files that no test ran.")
@click.option("-s", "foreground", is_flag=True,
              help="Run one test (the one -k names, else the first that failed last time) with your terminal "
                   "attached: its prints as they happen, input() and breakpoint() work, no time limit.")
@click.option("--pdb", "pdb_test", metavar="TEST", shell_complete=complete_tests,
              help="Run TEST alone with your terminal attached, in the debugger where it fails (Python); "
                   "in Go, the commands that debug it with Delve.")
@click.option("--sandbox/--no-sandbox", "sandboxed", default=None,
              help="Run the check in a sandbox (bubblewrap), on a copy of your repository "
                   "[default: no, unless COURSE_SANDBOX=1].")
def check(chapter: Any, reference: bool, select: str, case: str, stop_first: bool, last_failed: bool,
          timeout: float | None, budget: float | None, max_file_mb: float | None, json_path: Path | None,
          junit_path: Path | None, autograding_path: Path | None, verbose: bool, language: str, coverage: bool,
          foreground: bool, pdb_test: str | None, sandboxed: bool | None) -> None:
    """Run the chapter's catalog on your code: exit 0 when every test passes, 1 otherwise.

    Only a full run records progress: with -k, --case, --lf or -x the verdict is shown, and
    `course list` still shows the last full check.
    """
    from course.commands.learner import sandboxed as sandbox

    if sandbox.wanted(sandboxed):
        if foreground or pdb_test:
            raise UsageError("-s and --pdb give a test your terminal: they do not run in the sandbox (--no-sandbox)")
        writable(json_path, junit_path, autograding_path)
        options = [*([chapter.id] if chapter is not None else []), *(["--reference", "--language", language]
                   if reference else []), *(["-k", select] if select else []), *(["--case", case] if case else []),
                   *(["-x"] if stop_first else []), *(["--lf"] if last_failed else []),
                   *(["--timeout", f"{timeout:g}"] if timeout else []), *(["--budget", f"{budget:g}"] if budget else []),
                   *(["--max-file-size", f"{max_file_mb:g}"] if max_file_mb else []),
                   *(["-v"] if verbose else []), *(["--coverage"] if coverage else [])]
        sandbox.run(code_under_test(chapter, reference, language),
                    outputs={"--json": json_path, "--junit-xml": junit_path, "--autograding": autograding_path},
                    options=options)
    from course import languages
    from course.check import DEFAULT_BUDGET, DEFAULT_MAX_FILE_MB, DEFAULT_TIMEOUT, run_check
    from course.processes import single_run_workers
    from course.check.report import TerminalReport, junit_xml, results_json, write_json, write_junit
    from course.pitfall_hints import diagnose
    from course.learner import fingerprint

    writable(json_path, junit_path, autograding_path)
    target = code_under_test(chapter, reference, language)
    repo, chapter, track, state = target.repo, target.chapter, target.track, target.state
    code_root = target.code_root
    if foreground or pdb_test:
        if json_path or junit_path or autograding_path or stop_first or last_failed or case or coverage:
            raise UsageError("-s and --pdb run one test in your terminal: they take -k (or TEST) and --reference, "
                             "and no report option")
        sys.exit(_in_the_foreground(target, select, pdb_test))
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
                       coverage=coverage, workers=single_run_workers(), max_file_mb=max_file_mb or DEFAULT_MAX_FILE_MB)
    partial = only is not None or bool(select) or bool(case) or stop_first
    if repo is not None:
        record_check(repo, chapter.id, result, files_before, partial=partial)
    try:
        if json_path or autograding_path:
            from course.grading.gradebook import check_record

            record = check_record(chapter, track, repo, result, code_root)
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
    report.closing(result)
    first = report.first_failure(result)
    if coverage:
        # a learner's own files; on the reference, every file (the given ones are the course's code too)
        mine = [name for name in track.files if repo is None or name not in track.given]
        report.coverage(result, mine, select=select or case, whose="the reference's" if repo is None else "your")
    hint = "" if partial else diagnose(chapter, track, result, code_root)
    if hint:
        echo("")
        echo(click.style("hint: ", fg="cyan", bold=True) + hint)
    report.summary(result)
    if repo is not None and not result.ok:
        _given_changed(chapter, track, code_root)
    report.next_step(result, first, chapter.id)
    if repo is not None and partial:
        echo(click.style("(a partial run: shown, not recorded as progress)", dim=True))
    if repo is not None and result.ok and not partial:
        echo(f"\nchapter {chapter.id} passed. `course diff {chapter.id}` compares your code with the reference.")
    sys.exit(0 if result.ok else 1)


def _given_changed(chapter, track, code_root: Path) -> None:  # noqa: ANN001
    """A failure may be the given code's: say which given files are not the course's, and how to take them."""
    from course.scaffold import changed_given

    for name in changed_given(chapter, track, code_root):
        echo(click.style(f"note: {name} is given by the course, and yours is not this version's (edited, or an "
                         f"older copy): `course reset {name}` takes the course's, yours kept in a backup", fg="yellow"))


def _in_the_foreground(target, select: str, pdb_test: str | None) -> int:  # noqa: ANN001
    """check -s / --pdb: the one test, its process on the terminal (Foreground); its exit code."""
    from course import languages, selection, services
    from course.commands.shared import catalog_entry
    from course.languages.protocol import Foreground

    chapter, track, state = target.chapter, target.track, target.state
    adapter = languages.get(track.language)
    attached = languages.capability(adapter, Foreground)
    if attached is None:
        raise UsageError(f"the {track.language} track cannot run a test in the foreground yet")
    if pdb_test:
        entry = catalog_entry(chapter, adapter, pdb_test)
    elif select:
        names = {e.name: (e.name, adapter.test_name(e.name)) for e in chapter.catalog}
        exact = [name for name, spellings in names.items() if select.strip() in spellings]
        chosen = exact or selection.select(select, names)
        if len(chosen) != 1:
            found = ", ".join(adapter.test_name(n) for n in chosen) or "none"
            raise UsageError(f"-s runs one test: -k {select!r} matches {len(chosen)} ({found}); name one")
        entry = next(e for e in chapter.catalog if e.name == chosen[0])
    else:
        failing = set(state.last_check.get("failing", []) if state else [])
        entry = next((e for e in chapter.catalog if e.name in failing), None)  # the first in catalog order
        if entry is None:
            raise UsageError("-s runs one test: name it with -k (no test failed in your last check)")
    how = "in the debugger where it fails" if pdb_test else "its prints as they happen"
    echo(click.style(f"{chapter.id}: {adapter.test_name(entry.name)} alone, with your terminal attached ({how}; "
                     "no time limit; not recorded as progress)", dim=True), err=True)
    with services.environment(track) as env:
        code = attached.run_foreground(track, target.code_root, entry.name, env, debugger=bool(pdb_test))
    return code if code >= 0 else 128 - code

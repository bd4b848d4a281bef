"""`course grade`: a class's gradebook, from checks of each repository or from CI's results files."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import click

from course.commands.shared import CHAPTER, Progress, echo, writable
from course.errors import UsageError

MiB = 2**20


@click.command()
@click.argument("roster", type=click.Path(path_type=Path), required=False)
@click.option("--chapter", type=CHAPTER, default=None, metavar="CHAPTER",
              help="The chapter to grade [default: the one the roster's repositories are on].")
@click.option("--from-results", "results_dir", type=click.Path(path_type=Path), default=None,
              help="Build the gradebook from downloaded results.json files (or artifact zips) instead of running checks.")
@click.option("--roster", "names_path", type=click.Path(path_type=Path), default=None,
              help="With --from-results: who should have a result (a file of names, GitHub Classroom's roster CSV, "
                   "or a folder of repositories); each learner without one gets a 'no result' row.")
@click.option("--csv", "csv_path", type=click.Path(dir_okay=False, path_type=Path), default=Path("gradebook.csv"),
              show_default=True, help="Write the gradebook as CSV here.")
@click.option("--json", "json_path", type=click.Path(dir_okay=False, path_type=Path), default=Path("gradebook.json"),
              show_default=True, help="Write the gradebook as JSON here (what --resume reads).")
@click.option("--html", "html_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Also write the class report, a page to open in a browser, here.")
@click.option("--resume", is_flag=True, help="Continue the gradebook at --json: check only the repositories it lacks.")
@click.option("--jobs", type=click.IntRange(min=1), default=None, help="Repositories checked at once [default: the cores].")
@click.option("--timeout", type=click.FloatRange(min=0.1), default=5.0, show_default=True, help="Seconds per test.")
@click.option("--repo-timeout", type=click.FloatRange(min=1), default=300.0, show_default=True,
              help="Seconds for one whole repository.")
@click.option("--no-sandbox", is_flag=True,
              help="Run learner code without the sandbox, with your permissions (only the time and file-size limits hold).")
@click.option("--disk", type=click.IntRange(min=16), default=None, metavar="MIB",
              help="The sandbox's disk: all a check may write, its copy included [default: 512].")
@click.option("--memory", type=click.IntRange(min=64), default=None, metavar="MIB",
              help="The memory each process of a check may write [default: 2048].")
@click.option("--processes", type=click.IntRange(min=16), default=None, metavar="N",
              help="Processes and threads a check may run at once [default: 256].")
def grade(roster: Path | None, chapter: Any, results_dir: Path | None, names_path: Path | None, csv_path: Path,
          json_path: Path, html_path: Path | None, resume: bool, jobs: int | None, timeout: float,
          repo_timeout: float, no_sandbox: bool, disk: int | None, memory: int | None, processes: int | None) -> None:
    """Grade a class: ROSTER is a folder of learner repositories, or a file listing their paths.

    Each repository is checked on a fresh copy inside a sandbox (bubblewrap: the copy is the only
    place it can write, within limits of disk, memory, processes and CPU, and it has no network),
    several at once. The gradebook (CSV and JSON) is written as each repository finishes, so an
    interrupted grade leaves a valid partial book that --resume continues. Exit 0 when every
    repository could be judged (whatever its verdict), 1 when some could not, 130 when interrupted.
    """
    if roster is None and results_dir is None:
        raise UsageError("give a ROSTER (a folder of learner repositories, or a file listing them), or --from-results DIR")
    if roster is not None and results_dir is not None:
        raise UsageError("give a ROSTER to check or --from-results DIR, not both")
    if names_path is not None and results_dir is None:
        raise UsageError("--roster names who should have a result with --from-results; to check repositories, "
                         "give the roster as ROSTER")
    if resume and results_dir is not None:
        raise UsageError("--resume continues a grade that checks repositories; --from-results reads every result anew")
    writable(csv_path, json_path, html_path)
    if results_dir is not None:
        rows = _from_results(results_dir, names_path, chapter.id if chapter is not None else None, csv_path, json_path)
    else:
        rows = _check_all(roster, chapter.id if chapter is not None else None, csv_path, json_path, resume, jobs,
                          timeout, repo_timeout, no_sandbox, disk, memory, processes)
    _finish(rows, csv_path, json_path, html_path)


def _from_results(results_dir: Path, names_path: Path | None, chapter: str | None, csv_path: Path,
                  json_path: Path) -> list:
    from course.grading import gradebook
    from course.grading import roster as rosters
    from course.grading.from_results import gradebook as from_results

    names = rosters.names(names_path.resolve()) if names_path is not None else None
    found = from_results(results_dir, names, chapter)
    for line in found.skipped:
        echo(click.style(f"skipped {line}", fg="yellow"), err=True)
    _write(lambda: (gradebook.write_csv(csv_path, found.rows),
                    gradebook.write_json(json_path, found.rows, {"from_results": str(results_dir.resolve())})))
    return found.rows


def _check_all(roster: Path, chapter: str | None, csv_path: Path, json_path: Path, resume: bool, jobs: int | None,
               timeout: float, repo_timeout: float, no_sandbox: bool, disk: int | None, memory: int | None,
               processes: int | None) -> list:
    from dataclasses import replace

    from course import sandbox
    from course.errors import ToolMissing
    from course.grading import gradebook
    from course.grading import roster as rosters
    from course.grading.grade import Grader, Limits, class_chapter

    read = rosters.read(roster.resolve())
    for line in read.skipped:
        echo(click.style(f"skipped {line}", fg="yellow"), err=True)
    members = read.members
    chapter_id = class_chapter(members, chapter)
    about = {"chapter": chapter_id, "roster": str(roster.resolve())}
    book = gradebook.Book(csv_path, json_path, [m.learner for m in members], about)
    if resume:
        members = _resume(book, json_path, members, chapter_id)
    sandboxed = not no_sandbox
    if sandboxed:
        why = sandbox.unusable()
        if why:
            raise ToolMissing(f"{why}; or grade with --no-sandbox, which runs learner code with your permissions")
        if sandbox.process_limit():
            echo(click.style(f"note: {sandbox.process_limit()}", fg="yellow"), err=True)
    else:
        echo(click.style("note: --no-sandbox: learner code runs with your permissions; only the time and "
                         "file-size limits hold", fg="yellow"), err=True)
    box = sandbox.Limits()
    box = replace(box, disk=(disk or box.disk // MiB) * MiB, memory=(memory or box.memory // MiB) * MiB,
                  processes=processes or box.processes)
    # the other learners' work is out of sight of each check: the roster's folder(s) are hidden
    hide = (roster.resolve(),) if roster.is_dir() else tuple(sorted({m.path.parent for m in members}))
    grader = Grader(chapter_id, Limits(test_timeout=timeout, repo_timeout=repo_timeout, sandbox=box),
                    jobs or os.cpu_count() or 1, sandboxed=sandboxed, hide=hide)
    _write(book.write)
    if sandboxed and members:
        grader.warm(grader.languages(members))
    progress = Progress(len(members), label="repositories", line=lambda row: f"  {row.learner}: {row.status}")

    def finished(row: gradebook.Row) -> None:
        _write(lambda: book.add(row))
        progress.step(row)

    try:
        grader.run(members, on_row=finished)
    except KeyboardInterrupt:
        progress.close()
        _write(book.write)
        done = len(book.rows)
        echo(f"interrupted: the gradebook holds {done} of {len(book.order)} repositories; "
             f"`course grade {roster} --resume` (with the same --json) continues it", err=True)
        sys.exit(130)
    progress.close()
    _write(book.write)
    return book.sorted_rows()


def _resume(book, json_path: Path, members: list, chapter_id: str) -> list:  # noqa: ANN001
    from course.grading import gradebook

    if not json_path.is_file():
        raise UsageError(f"--resume continues the gradebook at {json_path}, and there is none")
    try:
        about, rows = gradebook.read_json(json_path)
    except ValueError as exc:
        raise UsageError(f"--resume cannot read {json_path}: {exc}") from None
    if about.get("chapter") and about["chapter"] != chapter_id:
        raise UsageError(f"{json_path} grades chapter {about['chapter']}, not {chapter_id}; "
                         f"give --chapter {about['chapter']} to continue it")
    names = {m.learner for m in members}
    for row in rows:
        if row.learner in names:
            book.add(row, write=False)
    left = [m for m in members if m.learner not in book.rows]
    echo(f"resuming: {len(book.rows)} repositories already in {json_path}, {len(left)} to check", err=True)
    return left


def _write(action) -> None:  # noqa: ANN001
    try:
        action()
    except OSError as exc:
        raise UsageError(f"cannot write {exc.filename}: {exc.strerror}") from None


def _finish(rows: list, csv_path: Path, json_path: Path, html_path: Path | None) -> None:
    from course.grading import gradebook

    if html_path is not None:
        from course.grading import report

        _write(lambda: report.write(html_path, rows))
    for line in gradebook.table(rows):
        echo(line)
    judged = sum(r.judged for r in rows)
    also = f" and {html_path}" if html_path is not None else ""
    echo(f"\n{judged} of {len(rows)} repositories judged; gradebook in {csv_path} and {json_path}{also}")
    sys.exit(0 if judged == len(rows) else 1)

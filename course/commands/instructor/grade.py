"""`course grade`: a class's gradebook, from checks of each repository or from CI's results files."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import click

from course.commands.shared import CHAPTER, Progress, echo, writable
from course.errors import UsageError


@click.command()
@click.argument("roster", type=click.Path(path_type=Path), required=False)
@click.option("--chapter", type=CHAPTER, default=None, metavar="CHAPTER",
              help="The chapter to grade [default: each repository's current chapter].")
@click.option("--from-results", "results_dir", type=click.Path(path_type=Path), default=None,
              help="Build the gradebook from downloaded results.json files instead of running checks.")
@click.option("--csv", "csv_path", type=click.Path(dir_okay=False, path_type=Path), default=Path("gradebook.csv"),
              show_default=True, help="Write the gradebook as CSV here.")
@click.option("--json", "json_path", type=click.Path(dir_okay=False, path_type=Path), default=Path("gradebook.json"),
              show_default=True, help="Write the gradebook as JSON here.")
@click.option("--jobs", type=click.IntRange(min=1), default=None, help="Repositories checked at once [default: the cores].")
@click.option("--timeout", type=click.FloatRange(min=0.1), default=5.0, show_default=True, help="Seconds per test.")
@click.option("--repo-timeout", type=click.FloatRange(min=1), default=300.0, show_default=True,
              help="Seconds for one whole repository.")
def grade(roster: Path | None, chapter: Any, results_dir: Path | None, csv_path: Path, json_path: Path,
          jobs: int | None, timeout: float, repo_timeout: float) -> None:
    """Grade a class: ROSTER is a folder of learner repositories, or a file listing their paths.

    Each repository is checked on a fresh temporary copy (never in place), several at once, each
    within its own time and file-size limits. Writes a gradebook (CSV and JSON) and prints a table.
    Exit 0 when every repository could be judged (whatever its verdict), 1 when some could not.
    """
    from course.grading import gradebook

    if roster is None and results_dir is None:
        raise UsageError("give a ROSTER (a folder of learner repositories, or a file listing them), or --from-results DIR")
    if roster is not None and results_dir is not None:
        raise UsageError("give a ROSTER to check or --from-results DIR, not both")
    writable(csv_path, json_path)
    if results_dir is not None:
        from course.grading.from_results import gradebook as from_results

        rows = from_results(results_dir)
    else:
        from course.grading import roster as rosters
        from course.grading.grade import Grader, Limits

        chapter_id = chapter.id if chapter is not None else None
        members = rosters.read(roster.resolve())
        grader = Grader(chapter_id, Limits(test_timeout=timeout, repo_timeout=repo_timeout), jobs or os.cpu_count() or 1)
        progress = Progress(len(members), label="repositories", line=lambda row: f"  {row.learner}: {row.status}")
        try:
            rows = grader.run(members, on_row=progress.step)
        finally:
            progress.close()
    try:
        gradebook.write_csv(csv_path, rows)
        gradebook.write_json(json_path, rows)
    except OSError as exc:
        raise UsageError(f"cannot write {exc.filename}: {exc.strerror}") from None
    for line in gradebook.table(rows):
        echo(line)
    judged = sum(r.judged for r in rows)
    echo(f"\n{judged} of {len(rows)} repositories judged; gradebook in {csv_path} and {json_path}")
    sys.exit(0 if judged == len(rows) else 1)

"""`course selftest`: the learner's own tests, judged against the reference and the pitfall mutants."""

from __future__ import annotations

import sys
from typing import Any

import click

from course.commands.shared import CHAPTER, Progress, echo, learner_chapter


@click.command()
@click.argument("chapter", metavar="[CHAPTER]", type=CHAPTER, required=False)
@click.option("--timeout", type=click.FloatRange(min=0.1), default=5.0, show_default=True,
              help="Seconds each of your tests may take.")
@click.option("--jobs", type=click.IntRange(min=1), default=None, help="Mutants run at once [default: twice the cores].")
def selftest(chapter: Any, timeout: float, jobs: int | None) -> None:
    """Judge your own tests: they must pass on the reference and catch each pitfall mutant.

    Your tests live where `course start` wrote an example: tests_mine/CHAPTER/ in Python, any
    _test.go file of your module in Go. Exit 0 when every one of them passes on the reference and
    every documented mutant fails at least one.
    """
    from course.selftest import run_selftest, tests_folder

    target = learner_chapter(chapter)
    repo, chapter, track = target.repo, target.chapter, target.track
    folder = tests_folder(track, repo.root)
    echo(f"{chapter.id}: your tests in {folder.relative_to(repo.root)}/, judged against the reference and "
         f"{len(track.mutants)} pitfall mutants")
    # a bar on a terminal; piped, the report below says everything (mutants finish in any order)
    progress = Progress(len(track.mutants), label="mutants", line=lambda r: None)
    try:
        result = run_selftest(chapter, track, repo.root, timeout=timeout, jobs=jobs, on_mutant=progress.step)
    finally:
        progress.close()
    wrong = result.wrong_expectations
    if result.on_reference.problem:  # nothing ran: the problem says why, at the tests' lines
        echo(click.style("your tests could not run on the reference:", fg="red", bold=True))
        for line in result.on_reference.problem.splitlines():
            echo("  " + line)
        echo("\nfix this first: your tests are judged only once they run")
        sys.exit(1)
    echo(f"on the reference: {len(result.tests) - len(wrong)} of {len(result.tests)} of your tests pass")
    for name, message in wrong:
        first = message.splitlines()[0] if message else "failed"
        echo(f"  {click.style('WRONG', fg='red', bold=True)}  {name}: expects something the reference does not do: {first}")
    if wrong:
        echo("fix the expectations above: the mutants are judged only by tests that pass on the reference")
        if not result.mutants:
            sys.exit(1)
        echo(f"meanwhile, the mutants are judged by the tests of yours that pass there ({len(result.judged_by)} of "
             f"{len(result.tests)}):")
    caught, missed = result.caught, result.missed
    echo(f"on the pitfall mutants: your tests catch {len(caught)} of {len(result.mutants)}")
    by_pitfall: dict[int | None, list[str]] = {}
    for mutant in missed:
        by_pitfall.setdefault(mutant.pitfall, []).append(mutant.id)
    for number, ids in sorted(by_pitfall.items(), key=lambda item: (item[0] is None, item[0] or 0)):
        pitfall = chapter.pitfall(number) if number is not None else None
        title = f" ({pitfall.title})" if pitfall else ""
        what = f"pitfall {number}{title}" if number is not None else "bugs of no pitfall"
        echo(f"  not caught: {what}: {', '.join(ids)}")
    if not missed:
        echo(click.style("every pitfall mutant is caught by at least one of your tests", fg="green", bold=True))
    else:
        echo("each mutant is one plausible bug: write a test that fails on it and passes on the reference")
    sys.exit(0 if result.ok else 1)

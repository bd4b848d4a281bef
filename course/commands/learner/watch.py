"""`course watch`: check again at every save, on a screen that keeps only what matters now."""

from __future__ import annotations

import contextlib
import sys
import time
from typing import Any

import click

from course.commands.shared import CHAPTER, echo, learner_chapter, record_check, timeout_options


@click.command()
@click.argument("chapter", metavar="[CHAPTER]", type=CHAPTER, required=False)
@timeout_options
@click.option("--poll", is_flag=True, help="Look at the files a few times a second instead of OS notifications.")
def watch(chapter: Any, timeout: float | None, budget: float | None, poll: bool) -> None:
    """Check again each time you save a chapter file; q (or Ctrl-C) leaves.

    The screen shows how many tests pass, the first failing test with its reason, and the hint line.
    The tests that failed last run first.
    """
    from course import chapters, languages, watch as watching
    from course.check import DEFAULT_BUDGET, DEFAULT_TIMEOUT, run_check
    from course.processes import single_run_workers
    from course.check.report import TerminalReport
    from course.results import PASS
    from course.pitfall_hints import diagnose
    from course.learner import fingerprint

    target = learner_chapter(chapter)
    repo, chapter, track, state = target.repo, target.chapter, target.track, target.state
    adapter = languages.get(track.language)
    later = [c for c in chapters.load_all() if c.order > chapter.order]
    failed_first = list(state.last_check.get("failing", ()))
    keys = watching.Keys()
    saves = watching.watcher(repo.root, track.files, poll=poll)
    with keys, contextlib.closing(saves), watching.screen(sys.stdout.isatty()) as wipe, _stopped_by_ctrl_c(), \
            adapter.standby():
        while True:
            files_before = fingerprint(repo.root, track.files)
            result = run_check(chapter, track, repo.root, timeout=timeout or DEFAULT_TIMEOUT,
                               budget=budget or DEFAULT_BUDGET, first=failed_first, workers=single_run_workers())
            failed_first = [e.entry.name for e in result.entries if e.status != PASS]
            wipe()
            echo(f"{chapter.id}: {chapter.title}  " + click.style(
                f"(watching {len(track.files)} files by {saves.how}; q quits)", dim=True))
            colour = "green" if result.ok else "red" if not result.passed else "yellow"
            echo(click.style(f"{time.strftime('%H:%M:%S')}  {result.passed} of {result.total} passing", fg=colour,
                             bold=True) + click.style(f"  ({result.duration:.2f} s)", dim=True))
            echo("")
            report = TerminalReport(echo)
            if result.problem:
                report.problem(result.problem)
            elif result.ok:
                echo(click.style(f"every test passes: chapter {chapter.id} is done.", fg="green", bold=True))
                echo("next: `course diff` compares your code with the reference"
                     + (f"; `course start {later[0].id}` begins the next chapter." if later else "."))
            else:
                first = next(e for e in result.entries if e.status != PASS)
                report.show(first)
                hint = diagnose(chapter, track, result)
                echo("")
                echo(click.style("hint: ", fg="cyan", bold=True)
                     + (hint or f"`course hint` for {first.test_name}, `course check -v` for every failure"))
            record_check(repo, chapter.id, result, files_before, partial=False)
            if not saves.wait(keys):
                echo(click.style("\nstopped watching.", dim=True))
                return


@contextlib.contextmanager
def _stopped_by_ctrl_c():  # noqa: ANN202
    """Ctrl-C ends a long-lived command as q does: its children stopped, exit 0."""
    try:
        yield
    except (KeyboardInterrupt, click.exceptions.Abort):
        from course import processes

        processes.kill_all()
        echo(click.style("\nstopped watching.", dim=True))

"""`course watch`: check again at every save, on a screen that keeps only what matters now."""

from __future__ import annotations

import contextlib
import sys
import time
from pathlib import Path
from typing import Any

import click

from course.commands.shared import CHAPTER, echo, learner_chapter, record_check, timeout_options, write_limit_option


@click.command()
@click.argument("chapter", metavar="[CHAPTER]", type=CHAPTER, required=False)
@timeout_options
@write_limit_option
@click.option("--poll", is_flag=True, help="Look at the files a few times a second instead of OS notifications.")
def watch(chapter: Any, timeout: float | None, budget: float | None, max_file_mb: float | None, poll: bool) -> None:
    """Check again each time you save a file of the chapter; q (or Ctrl-C) leaves.

    It watches the chapter's packages (new modules included) and your own tests. The screen shows
    how many tests pass, the first failing test with its reason, and the hint line; while a run
    goes on it says so, and a save during a run starts it again on the files as saved.
    The tests that failed last run first.
    """
    from course import chapters, languages, watch as watching
    from course.check import DEFAULT_BUDGET, DEFAULT_MAX_FILE_MB, DEFAULT_TIMEOUT, run_check
    from course.learner import fingerprint
    from course.processes import single_run_workers
    from course.runner import Abandoned

    target = learner_chapter(chapter)
    repo, chapter, track, state = target.repo, target.chapter, target.track, target.state
    adapter = languages.get(track.language)
    later = [c for c in chapters.load_all() if c.order > chapter.order]
    failed_first = list(state.last_check.get("failing", ()))
    keys = watching.Keys()
    scope = watching.Scope(repo.root, track.files, _own_tests(adapter, track, repo.root))
    saves = watching.watcher(scope, poll=poll)
    with keys, contextlib.closing(saves), watching.screen(sys.stdout.isatty()) as wipe, _stopped_by_ctrl_c(), \
            adapter.standby():

        def running(changed: list[str]) -> None:
            """The screen the moment a save is noticed: what runs now, and no verdict of files gone."""
            wipe()
            _header(chapter, scope, saves)
            echo(click.style(f"{time.strftime('%H:%M:%S')}  running {len(chapter.catalog)} tests on "
                             f"{_what(changed)} ...", fg="cyan", bold=True))

        asked = _Asked(keys, saves, running)
        running([])
        while True:
            saves.refresh()  # a folder made since (a new subpackage) is watched from now on
            files_before = fingerprint(repo.root, track.files)
            try:
                result = run_check(chapter, track, repo.root, timeout=timeout or DEFAULT_TIMEOUT,
                                   budget=budget or DEFAULT_BUDGET, first=failed_first,
                                   workers=single_run_workers(), stop=asked,
                                   max_file_mb=max_file_mb or DEFAULT_MAX_FILE_MB)
            except Abandoned:  # saved again during the run (the screen says so already): start over
                if asked.quit:
                    echo(click.style("\nstopped watching.", dim=True))
                    return
                continue
            failed_first = [e.entry.name for e in result.entries if e.status != "pass"]
            wipe()
            _header(chapter, scope, saves)
            _verdict(chapter, track, result, later, repo.root)
            record_check(repo, chapter.id, result, files_before, partial=False)
            if not saves.wait(keys):
                echo(click.style("\nstopped watching.", dim=True))
                return
            running(saves.last)


class _Asked:
    """The question a run under watch is asked while it goes on: give up? Yes once the learner
    saved again (the screen then says at once what runs next, before the run is stopped), or
    pressed q (then `quit`)."""

    def __init__(self, keys: Any, saves: Any, running: Any) -> None:
        self.keys, self.saves, self.running, self.quit = keys, saves, running, False

    def __call__(self) -> bool:
        if self.keys.quit_pressed():
            self.quit = True
            return True
        if self.saves.pending():
            self.running(self.saves.last)
            return True
        return False


def _own_tests(adapter: Any, track: Any, root: Any) -> tuple[str, ...]:
    """The learner's own tests folder, relative to the root, where the track has one (selftest)."""
    from course import languages
    from course.languages.protocol import LearnerTests

    own = languages.capability(adapter, LearnerTests)
    if own is None or not track.selftest:
        return ()
    try:
        return (own.learner_tests_folder(track, root).relative_to(root).as_posix(),)
    except ValueError:
        return ()


def _what(changed: list[str]) -> str:
    if not changed:
        return "your files"
    shown = ", ".join(changed[:3]) + (f" and {len(changed) - 3} more" if len(changed) > 3 else "")
    return f"your files as saved ({shown})"


def _header(chapter: Any, scope: Any, saves: Any) -> None:
    echo(f"{chapter.id}: {chapter.title}  " + click.style(
        f"(watching {scope.describe()} by {saves.how}; q quits)", dim=True))


def _verdict(chapter: Any, track: Any, result: Any, later: list, code_root: Path) -> None:
    from course.check.report import TerminalReport
    from course.pitfall_hints import diagnose
    from course.results import PASS

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
        hint = diagnose(chapter, track, result, code_root)
        echo("")
        echo(click.style("hint: ", fg="cyan", bold=True)
             + (hint or f"`course hint` for {first.test_name}, `course check -v` for every failure"))


@contextlib.contextmanager
def _stopped_by_ctrl_c():  # noqa: ANN202
    """Ctrl-C ends a long-lived command as q does: its children stopped, exit 0."""
    try:
        yield
    except (KeyboardInterrupt, click.exceptions.Abort):
        from course import processes

        processes.kill_all()
        echo(click.style("\nstopped watching.", dim=True))

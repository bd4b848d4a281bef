"""What the commands share: how they print, the chapter and language they act on, their common options
and progress bars. Below every command module: commands import it, never each other."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from course.errors import UsageError
from course.languages.registry import ADAPTERS, DEFAULT_LANGUAGE


def color() -> bool:
    return sys.stdout.isatty() and not os.environ.get("NO_COLOR")


def echo(message: str = "", *, err: bool = False) -> None:
    try:
        click.echo(message, err=err, color=color() if not err else None)
    except BrokenPipeError:
        # `course check | head`: the reader left. The command still finishes its work (the check
        # records its result) and ends with its own exit code; what it would print goes nowhere.
        os.dup2(os.open(os.devnull, os.O_WRONLY), (sys.stderr if err else sys.stdout).fileno())


def paged(text: str, *, pager: bool = True) -> None:
    """Long text: through the learner's pager ($PAGER, else less) when output is a terminal and the
    text does not fit on one screen; printed as it is otherwise."""
    import shutil

    lines = text.count("\n") + 1
    if pager and sys.stdout.isatty() and sys.stdin.isatty() and lines > shutil.get_terminal_size((80, 24)).lines - 1:
        click.echo_via_pager(text + "\n", color=color())
        return
    echo(text)


class ChapterParam(click.ParamType):
    """A chapter id, in any forgiving spelling ('ag01', 'AG-01', 'ag.01'), loaded as its Chapter.
    An unknown id is the harness's own UnknownChapter: one line that lists the chapters, exit 2."""

    name = "chapter"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        from course import chapters

        return value if not isinstance(value, str) else chapters.get(value)

    def shell_complete(self, ctx: click.Context, param: click.Parameter, incomplete: str) -> list:
        """The chapters' ids (shell completion: `eval "$(_COURSE_COMPLETE=bash_source course)"`)."""
        from click.shell_completion import CompletionItem

        from course import chapters

        try:
            known = chapters.load_all()
        except Exception:  # noqa: BLE001 - completion offers what it can, and never fails
            return []
        return [CompletionItem(c.id, help=c.title) for c in known if c.id.startswith(incomplete.lower())]


def _is_chapter(word: str) -> bool:
    from course import chapters
    from course.errors import UnknownChapter

    try:
        chapters.get(word)
    except UnknownChapter:
        return False
    return True


def complete_tests(ctx: click.Context, param: click.Parameter, incomplete: str) -> list:
    """Shell completion of a test's name (-k, --pdb, hint): the catalog of the chapter named on the
    command line, else of the current one, in its track's language."""
    from click.shell_completion import CompletionItem

    try:
        from course import languages

        named = ctx.params.get("chapter")
        if named is None:  # an option waiting for its value leaves the words before it unparsed
            named = next((word for word in ctx.args if _is_chapter(word)), None)
        chapter = any_chapter(CHAPTER.convert(named, None, ctx) if named else None)
        language = ctx.params.get("language") if ctx.params.get("reference") else None
        language = track_language(chapter, language)
        adapter = languages.get(language)
        if language in chapter.tracks:
            chapter = chapter.for_track(chapter.track(language))
        names = [adapter.test_name(e.name) for e in chapter.catalog]
    except Exception:  # noqa: BLE001 - completion offers what it can, and never fails
        return []
    return [CompletionItem(name) for name in names if name.startswith(incomplete)]


CHAPTER = ChapterParam()


def language_option(help: str = "The language track.", default: str | None = DEFAULT_LANGUAGE) -> Any:  # noqa: A002
    """The one --language option, its choices the languages that have an adapter."""
    return click.option("--language", type=click.Choice(sorted(ADAPTERS)), default=default,
                        show_default=default is not None, help=help)


@dataclass
class Target:
    """The code a command acts on: a learner's chapter, or (repo None) the course's reference."""

    repo: Any  # LearnerRepo | None
    chapter: Any  # Chapter
    track: Any  # Track
    state: Any = None  # ChapterState | None

    @property
    def code_root(self) -> Path:
        return self.track.reference if self.repo is None else self.repo.root


def learner_chapter(given: Any) -> Target:
    from course import chapters
    from course.learner import LearnerRepo

    repo = LearnerRepo.find()
    chapter = given if given is not None else chapters.get(repo.resolve_chapter(None))
    state = repo.state(chapter.id)
    track = chapter.track(state.language)
    return Target(repo, chapter.for_track(track), track, state)


def any_chapter(given: Any) -> Any:
    """The chapter named, else the learner's current one (commands that need no started chapter)."""
    from course import chapters
    from course.learner import LearnerRepo

    if given is not None:
        return given
    return chapters.get(LearnerRepo.find().resolve_chapter(None))


def code_under_test(given: Any, reference: bool, language: str) -> Target:
    """The learner's chapter, or with --reference the course's reference (no repo, no state)."""
    if reference:
        chapter = any_chapter(given)
        return Target(None, chapter, chapter.track(language))
    return learner_chapter(given)


def track_language(chapter: Any, language: str | None) -> str:
    """The language asked for, else the one the learner started the chapter in, else the default one."""
    if language:
        return language
    from course.learner import LearnerRepo, find_root

    root = find_root()
    state = LearnerRepo.open(root).chapters.get(chapter.id) if root else None
    return state.language if state else DEFAULT_LANGUAGE


def reading_language(chapter: Any, language: str | None) -> str:
    """The track `course show` and `course tests` read: the one asked for (a chapter without it is a
    usage error), else the learner's, else the default one, else the chapter's first track."""
    if language:
        chapter.track(language)  # UnknownLanguage: one line, exit 2
        return language
    chosen = track_language(chapter, None)
    return chosen if chosen in chapter.tracks else next(iter(chapter.tracks))


def catalog_entry(chapter, adapter, name: str):  # noqa: ANN001, ANN202
    """The catalog entry a learner names, in its catalog form or its language's form."""
    for entry in chapter.catalog:
        if name in (entry.name, adapter.test_name(entry.name)):
            return entry
    names = ", ".join(e.name for e in chapter.catalog)
    raise UsageError(f"chapter {chapter.id} has no test {name!r}; its tests are: {names}")


def writable(*paths: Path | None) -> None:
    """Refuse an output file in a folder that does not exist before any work, not after."""
    for path in paths:
        if path is not None and not path.resolve().parent.is_dir():
            raise UsageError(f"cannot write {path}: no folder {path.resolve().parent}")


def timeout_options(command):  # noqa: ANN001, ANN202
    command = click.option("--budget", type=click.FloatRange(min=1), default=None,
                           help="Seconds the whole check may take [default: 120].")(command)
    return click.option("--timeout", type=click.FloatRange(min=0.1), default=None,
                        help="Seconds each test may take; once a case times out, the test's other "
                             "cases are not run [default: 5].")(command)


def write_limit_option(command):  # noqa: ANN001, ANN202
    return click.option("--max-file-size", "max_file_mb", type=click.FloatRange(min=0.001), default=None, metavar="MB",
                        help="No file the tests (and your code under them) write may grow past this; a write "
                             "past it fails its test [default: 64].")(command)


def record_check(repo, chapter_id: str, result, files_before: str, *, partial: bool) -> None:  # noqa: ANN001
    """Record the check in the learner's state. A partial run only updates which tests fail (so
    that --lf and hint follow it); a read-only repository gets a one-line note, and the verdict
    stands."""
    from course.learner import LearnerRepo, now

    try:
        fresh = LearnerRepo.open(repo.root)  # read again: another command may have saved since
        state = fresh.chapters.setdefault(chapter_id, repo.chapters[chapter_id])
        failing = set(state.last_check.get("failing", ())) if partial else set()
        for entry in result.entries:
            (failing.add if entry.status != "pass" else failing.discard)(entry.entry.name)
        if partial:
            if state.last_check:
                state.last_check["failing"] = sorted(failing)
        else:
            state.last_check = {"passed": result.passed, "total": result.total, "at": now(),
                                "failing": [e.entry.name for e in result.entries if e.entry.name in failing],
                                "fingerprint": files_before}
            if result.ok:
                state.passed_fingerprint = files_before
        fresh.current = chapter_id
        fresh.save()
    except OSError as exc:
        echo(click.style(f"note: progress not recorded: cannot write in {repo.root} ({exc.strerror})", fg="yellow"),
             err=True)


class Progress:
    """A progress bar on a terminal; one plain line per finished item when piped."""

    def __init__(self, total: int, label: str = "mutants", line=None) -> None:  # noqa: ANN001
        self.bar = click.progressbar(length=total, label=label, file=sys.stderr) if sys.stderr.isatty() else None
        self.line = line or (lambda result: f"  {result.mutant.id}: {result.status}")
        if self.bar:
            self.bar.__enter__()

    def step(self, result) -> None:  # noqa: ANN001
        if self.bar:
            self.bar.update(1)
        elif (line := self.line(result)) is not None:
            echo(line, err=True)

    def close(self) -> None:
        if self.bar:
            self.bar.__exit__(None, None, None)

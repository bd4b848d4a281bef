"""The `course` command line: small commands, one job each, all chapter logic in the chapters' data.

Exit codes: 0 success; 1 a verdict against the code (a test failed, diff before passing, an unsound
chapter); 2 a usage error (unknown chapter, not in a learner repository, chapter not started).
Heavy modules are imported inside the commands so that `course --help` stays fast.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import click

from course import __version__
from course.errors import CourseError, UsageError
from course.languages.registry import DEFAULT_LANGUAGE

RUN_TIMEOUT = 60.0  # seconds for `course run`: a demonstration is offline and quick


def _color() -> bool:
    return sys.stdout.isatty() and not os.environ.get("NO_COLOR")


def echo(message: str = "", *, err: bool = False) -> None:
    try:
        click.echo(message, err=err, color=_color() if not err else None)
    except BrokenPipeError:
        # `course check | head`: the reader left. The command still finishes its work (the check
        # records its result) and ends with its own exit code; what it would print goes nowhere.
        os.dup2(os.open(os.devnull, os.O_WRONLY), (sys.stderr if err else sys.stdout).fileno())


class ChapterCommandGroup(click.Group):
    """Lists commands in the order a learner meets them, not alphabetically."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(self.commands)


@click.group(cls=ChapterCommandGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="course")
def cli() -> None:
    """An exercise harness for a course on talking to LLM providers reliably.

    \b
    A learner's loop:
      course list              the chapters and where you are
      course start CHAPTER     write the chapter's stubs into your repository
      course show              read the chapter
      course tests             read its test catalog
      course check             run the catalog on your code (exit code is the verdict)
      course watch             check again at every save
      course hint              a hint for the first failing test, one level more each time
      course diff              after passing: your code against the reference

    With no chapter named, a command acts on the chapter you worked on last.
    Exit codes: 0 success, 1 tests failed or refused, 2 usage error.
    """


class ChapterParam(click.ParamType):
    """A chapter id, in any forgiving spelling ('ag01', 'AG-01', 'ag.01'), loaded as its Chapter.
    An unknown id is the harness's own UnknownChapter: one line that lists the chapters, exit 2."""

    name = "chapter"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        from course import chapters

        return value if not isinstance(value, str) else chapters.get(value)


CHAPTER = ChapterParam()


def language_option(help: str = "The language track.", default: str | None = DEFAULT_LANGUAGE) -> Any:  # noqa: A002
    """The one --language option, its choices the languages that have an adapter."""
    from course.languages import ADAPTERS

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


def _learner_chapter(given: Any) -> Target:
    from course import chapters
    from course.learner import LearnerRepo

    repo = LearnerRepo.find()
    chapter = given if given is not None else chapters.get(repo.resolve_chapter(None))
    state = repo.state(chapter.id)
    track = chapter.track(state.language)
    return Target(repo, chapter.for_track(track), track, state)


@cli.command("list")
def list_cmd() -> None:
    """The chapters, with your progress in this repository."""
    from course import chapters
    from course.learner import LearnerRepo, find_root

    root = find_root()
    repo = LearnerRepo.open(root) if root else None
    for chapter in chapters.load_all():
        state = repo.chapters.get(chapter.id) if repo else None
        mark = "*" if repo and repo.current == chapter.id else " "
        progress = _progress(repo, chapter, state) if repo and state else click.style("not started", dim=True)
        language = click.style(f"  {state.language}", dim=True) if repo and state else ""
        echo(f"{mark} {chapter.id:<6} {chapter.title}  [{progress}]{language}")
    if repo is None:
        echo(click.style("\n(not in a learner repository: `course start CHAPTER` makes one)", dim=True))


def _progress(repo, chapter, state) -> str:  # noqa: ANN001
    """What the record says, checked against the files as they are now."""
    from course.learner import fingerprint

    if state.language not in chapter.tracks:
        return click.style("started", fg="yellow")
    now = fingerprint(repo.root, chapter.track(state.language).files)
    check = state.last_check
    if state.passed and now == state.passed_fingerprint:
        return click.style("passed", fg="green", bold=True)
    if state.passed:
        text = "passed before, changed since"
        if check and check.get("fingerprint") == now and check["passed"] < check["total"]:
            text += f": {check['passed']} of {check['total']} passing"
        return click.style(text + " (`course check` again)", fg="yellow")
    if check:
        text = f"{check['passed']} of {check['total']} passing"
        if check.get("fingerprint") and check["fingerprint"] != now:
            text += ", changed since"
        return click.style(text, fg="yellow")
    return click.style("started", fg="yellow")


@cli.command()
@click.argument("chapter", metavar="CHAPTER", type=CHAPTER)
@click.option("--dir", "directory", type=click.Path(file_okay=False, path_type=Path),
              help="The learner repository (default: the one you are in, or the enclosing git repository).")
@language_option("The track to start.")
@click.option("--switch", is_flag=True, help="Make CHAPTER the current chapter even if it was started before.")
@click.option("--ci", type=click.Choice(["github"]), default=None,
              help="Also write a CI workflow that checks every push and uploads results.json.")
def start(chapter: Any, directory: Path | None, language: str, switch: bool, ci: str | None) -> None:
    """Write CHAPTER's stubs into your repository; never overwrites a file.

    A chapter started for the first time becomes the current one (what commands act on when no
    chapter is named); starting a chapter again only writes its missing files, unless --switch.
    """
    from course.learner import ChapterState, LearnerRepo, default_start_root, find_root, now
    from course.scaffold import scaffold

    track = chapter.track(language)
    root = directory.resolve() if directory else default_start_root()
    if root.exists() and not root.is_dir():
        raise UsageError(f"{root} is not a folder")
    outer = find_root(root.parent)
    if directory and outer and not (root / ".course.json").is_file():
        echo(click.style(f"note: {root} is inside the learner repository {outer}; "
                         "it becomes a learner repository of its own", fg="yellow"), err=True)
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"cannot make the folder {root}: {exc.strerror}") from None
    if not _can_write(root):
        raise UsageError(f"cannot start {chapter.id} in {root}: the folder is read-only")
    repo = LearnerRepo.open(root)
    existing = repo.chapters.get(chapter.id)
    if existing is not None and existing.language != track.language:
        # the state records one track per chapter: a second track here would inherit the first's progress
        raise UsageError(f"chapter {chapter.id} is started here in its {existing.language} track; start the "
                         f"{track.language} track in a repository of its own "
                         f"(`course start {chapter.id} --language {track.language} --dir OTHER`)")
    result = scaffold(chapter, track, root)
    if ci:
        from course.grading import workflow
        from course.scaffold import write_new

        write_new(root, str(workflow.target(ci)), workflow.text(ci), result)
    again = chapter.id in repo.chapters
    state = repo.chapters.setdefault(chapter.id, ChapterState(started=now(), language=language))
    state.language = language
    previous = repo.current
    if switch or not again or not previous:
        repo.current = chapter.id
    repo.save()

    echo(f"{chapter.id}: {chapter.title}")
    echo(f"in {root}")
    for name in result.written:
        echo(f"  {click.style('wrote', fg='green')}  {name}")
    for name in result.kept:
        echo(f"  {click.style('kept', fg='yellow')}   {name} (already there; left as it is)")
    for name, why in result.failed.items():
        echo(f"  {click.style('FAILED', fg='red', bold=True)} {name}: {why}")
    if result.failed:
        raise UsageError(f"{len(result.failed)} of the chapter's files could not be written; see above")
    if repo.current != chapter.id:
        echo(f"\nthe current chapter stays {previous} (`course start {chapter.id} --switch` makes it {chapter.id})")
        return
    echo(f"\nnext: `course show {chapter.id}` to read the chapter, `course tests {chapter.id}` for the catalog, "
         f"`course check {chapter.id}` for a verdict.")


@cli.command()
@click.argument("chapter", metavar="[CHAPTER]", type=CHAPTER, required=False)
@language_option("The track whose text is shown (default: the one you started, else python).", default=None)
def show(chapter: Any, language: str | None) -> None:
    """Print the chapter's text."""
    chapter = _any_chapter(chapter)
    echo(chapter.text(_track_language(chapter, language)).rstrip())


def _track_language(chapter: Any, language: str | None) -> str:
    """The language asked for, else the one the learner started the chapter in, else python."""
    if language:
        return language
    from course.learner import LearnerRepo, find_root

    root = find_root()
    state = LearnerRepo.open(root).chapters.get(chapter.id) if root else None
    return state.language if state else DEFAULT_LANGUAGE


@cli.command()
@click.argument("chapter", metavar="[CHAPTER]", type=CHAPTER, required=False)
@language_option("The track whose test names are shown (default: the one you started, else python).", default=None)
@click.option("--source", "source", metavar="TEST", help="Print the source of one catalog test.")
def tests(chapter: Any, language: str | None, source: str | None) -> None:
    """The chapter's test catalog: each test, its kind, what it checks and why it matters."""
    import textwrap

    from course import languages

    chapter = _any_chapter(chapter)
    language = _track_language(chapter, language)
    adapter = languages.get(language)
    if language in chapter.tracks:
        chapter = chapter.for_track(chapter.track(language))
    if source:
        entry = _catalog_entry(chapter, adapter, source)
        code = adapter.test_sources(chapter.track(language)).get(adapter.test_name(entry.name), "")
        if not code:
            raise UsageError(f"no source found for {adapter.test_name(entry.name)} in {chapter.track(language).tests}")
        echo(code)
        return
    echo(f"{chapter.id}: {chapter.title}")
    if chapter.summary:
        echo(chapter.summary)
    echo(f"{len(chapter.catalog)} tests, run in this order by `course check`\n")
    for i, entry in enumerate(chapter.catalog, 1):
        echo(f"{i:>2}. {click.style(adapter.test_name(entry.name), bold=True)}  [{entry.kind}]")
        echo(textwrap.fill(entry.checks, 96, initial_indent="    checks: ", subsequent_indent="            "))
        echo(textwrap.fill(entry.why, 96, initial_indent="    why:    ", subsequent_indent="            "))
    echo(click.style(f"\n`course tests {chapter.id} --source TEST` prints a test's code; "
                     "`course hint TEST` gives a hint.", dim=True))


def _catalog_entry(chapter, adapter, name: str):  # noqa: ANN001, ANN202
    """The catalog entry a learner names, in its catalog form or its language's form."""
    for entry in chapter.catalog:
        if name in (entry.name, adapter.test_name(entry.name)):
            return entry
    names = ", ".join(e.name for e in chapter.catalog)
    raise UsageError(f"chapter {chapter.id} has no test {name!r}; its tests are: {names}")


def _can_write(folder: Path) -> bool:
    """Whether files can be created in the folder (tried, not guessed from permission bits: root
    ignores them, and a read-only mount ignores them the other way)."""
    import tempfile

    try:
        with tempfile.NamedTemporaryFile(prefix=".course-probe-", dir=folder):
            return True
    except OSError:
        return False


def _code_under_test(given: Any, reference: bool, language: str) -> Target:
    """The learner's chapter, or with --reference the course's reference (no repo, no state)."""
    if reference:
        chapter = _any_chapter(given)
        return Target(None, chapter, chapter.track(language))
    return _learner_chapter(given)


def _writable(*paths: Path | None) -> None:
    """Refuse an output file in a folder that does not exist before any work, not after."""
    for path in paths:
        if path is not None and not path.resolve().parent.is_dir():
            raise UsageError(f"cannot write {path}: no folder {path.resolve().parent}")


def _any_chapter(given: Any) -> Any:
    """The chapter named, else the learner's current one (commands that need no started chapter)."""
    from course import chapters
    from course.learner import LearnerRepo

    if given is not None:
        return given
    return chapters.get(LearnerRepo.find().resolve_chapter(None))


def _timeout_options(command):  # noqa: ANN001, ANN202
    command = click.option("--budget", type=click.FloatRange(min=1), default=None,
                           help="Seconds the whole check may take [default: 120].")(command)
    return click.option("--timeout", type=click.FloatRange(min=0.1), default=None,
                        help="Seconds each test may take; once a case times out, the test's other "
                             "cases are not run [default: 5].")(command)


@cli.command()
@click.argument("chapter", metavar="[CHAPTER]", type=CHAPTER, required=False)
@click.option("--reference", is_flag=True, help="Run the catalog on the course's reference (instructors, CI).")
@click.option("-k", "select", default="", metavar="EXPR",
              help="Run only the catalog tests whose names match EXPR: words, and/or/not, parentheses "
                   "(`-k retry`, `-k 'sse and not large'`).")
@click.option("--case", "case", default="", metavar="EXPR",
              help="Run only the cases whose ids match EXPR (the same syntax, on case ids: `--case bom`).")
@click.option("-x", "--exitfirst", "stop_first", is_flag=True, help="Stop at the first failing test.")
@click.option("--lf", "--last-failed", "last_failed", is_flag=True, help="Run only the tests that failed last time.")
@_timeout_options
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

    _writable(json_path, junit_path, autograding_path)
    target = _code_under_test(chapter, reference, language)
    repo, chapter, track, state = target.repo, target.chapter, target.track, target.state
    adapter = languages.get(track.language)
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
        _record(repo, chapter.id, result, files_before, partial=partial)
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


@contextlib.contextmanager
def _stopped_by_ctrl_c():  # noqa: ANN202
    """Ctrl-C ends a long-lived command as q does: its children stopped, exit 0."""
    try:
        yield
    except (KeyboardInterrupt, click.exceptions.Abort):
        from course import processes

        processes.kill_all()
        echo(click.style("\nstopped watching.", dim=True))


def _record(repo, chapter_id: str, result, files_before: str, *, partial: bool) -> None:  # noqa: ANN001
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


@cli.command()
@click.argument("chapter", metavar="[CHAPTER]", type=CHAPTER, required=False)
@_timeout_options
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

    target = _learner_chapter(chapter)
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
                echo(f"next: `course diff` compares your code with the reference"
                     + (f"; `course start {later[0].id}` begins the next chapter." if later else "."))
            else:
                first = next(e for e in result.entries if e.status != PASS)
                report.show(first)
                hint = diagnose(chapter, track, result)
                echo("")
                echo(click.style("hint: ", fg="cyan", bold=True)
                     + (hint or f"`course hint` for {first.test_name}, `course check -v` for every failure"))
            _record(repo, chapter.id, result, files_before, partial=False)
            if not saves.wait(keys):
                echo(click.style("\nstopped watching.", dim=True))
                return


@cli.command()
@click.argument("chapter", metavar="[CHAPTER]", type=CHAPTER, required=False)
@click.option("--force", is_flag=True, help="Show the diff even before the chapter passes (instructors).")
@click.option("--all", "everything", is_flag=True, help="Also the differences in comments and docstrings only.")
def diff(chapter: Any, force: bool, everything: bool) -> None:
    """After passing: a unified diff of your code against the reference (comments and docstrings
    aside, unless --all)."""
    from course import content, languages
    from course.diffing import diff_files
    from course.errors import Refused
    from course.languages.protocol import CommentBlindDiff
    from course.learner import fingerprint

    target = _learner_chapter(chapter)
    repo, chapter, track, state = target.repo, target.chapter, target.track, target.state
    if not force:
        if not state.passed:
            raise Refused(f"the reference is shown once `course check {chapter.id}` passes; it has not passed yet")
        if fingerprint(repo.root, track.files) != state.passed_fingerprint:
            raise Refused(f"your files are not the ones that passed `course check {chapter.id}`; run it again first")
    blind = None if everything else languages.capability(languages.get(track.language), CommentBlindDiff)
    commentary = blind.commentary_lines if blind is not None else None
    summary = diff_files(repo.root, content.require(track.reference), track.files, echo=echo, color=_color(), commentary=commentary)
    if not summary.changed:
        echo(f"no differences{' in code' if summary.left_out else ''}: your {chapter.id} files match the reference.")
    if summary.left_out:
        plural = "s" if summary.left_out != 1 else ""
        echo(click.style(f"({summary.left_out} difference{plural} in comments or docstrings only left out; "
                         "--all shows them)", dim=True))


@cli.command()
@click.argument("test", required=False)
@click.option("--chapter", "chapter", metavar="CHAPTER", type=CHAPTER, help="The chapter (default: the current one).")
def hint(test: str | None, chapter: Any) -> None:
    """The next hint for TEST (default: the first test that failed in your last check).

    Each call reveals one more level: the idea, then the rule or the section of the text, then the
    shape of the code (never the code). The levels you used are recorded in .course.json.
    """
    from course import chapters as chapter_data
    from course import languages
    from course.chapters import HINT_LEVELS
    from course.errors import UnknownChapter
    from course.learner import LearnerRepo

    if test and chapter is None:  # `course hint ag01`: a chapter, named as every other command takes one
        try:
            chapter, test = chapter_data.get(test), None
        except UnknownChapter:
            pass  # a test's name
    target = _learner_chapter(chapter)
    repo, chapter, track, state = target.repo, target.chapter, target.track, target.state
    adapter = languages.get(track.language)
    if test:
        entry = _catalog_entry(chapter, adapter, test)
    else:
        failing = state.last_check.get("failing")
        if failing is None and state.last_check:
            failing = []
        if failing == [] and state.last_check:
            echo(f"every test passed in your last check; `course hint TEST` gives a hint for one test.")
            return
        failing = failing or [e.name for e in chapter.catalog]
        entry = next(e for e in chapter.catalog if e.name in failing) if any(
            e.name in failing for e in chapter.catalog) else chapter.catalog[0]
    hints = track.hints_for(entry)
    if not hints:
        raise UsageError(f"{adapter.test_name(entry.name)} has no hints yet")
    used = state.hints.get(entry.name, 0)
    level = min(used + 1, HINT_LEVELS)
    where = f", {entry.section_label}" if entry.section_label else ""
    name = adapter.test_name(entry.name)
    echo(click.style(f"{name} ({chapter.id}{where}): hint {level} of {HINT_LEVELS}", bold=True))
    for number, text in enumerate(hints[:level], 1):
        mark = click.style(f"  {number}. ", fg="cyan", bold=number == level)
        echo(mark + text)
    if level < HINT_LEVELS:
        echo(click.style(f"\n`course hint {name}` again for the next level.", dim=True))
    else:
        echo(click.style(f"\nthat was the last hint; `course tests --source {name}` shows the test itself.", dim=True))
    if level > used:
        try:
            fresh = LearnerRepo.open(repo.root)
            fresh.chapters.setdefault(chapter.id, state).hints[entry.name] = level
            fresh.save()
        except OSError as exc:
            echo(click.style(f"note: not recorded: cannot write in {repo.root} ({exc.strerror})", fg="yellow"), err=True)


@cli.command()
@click.argument("files", nargs=-1, type=click.Path(path_type=Path))
@click.option("--all", "everything", is_flag=True, help="Every file of the chapter.")
@click.option("--chapter", "chapter", metavar="CHAPTER", type=CHAPTER, help="The chapter (default: the current one).")
def reset(files: tuple[Path, ...], everything: bool, chapter: Any) -> None:
    """Put the stub of FILE back, after moving your version to a backup folder in your repository."""
    from course.learner import now
    from course.scaffold import BACKUP_DIR, restore

    target = _learner_chapter(chapter)
    repo, chapter, track = target.repo, target.chapter, target.track
    if bool(files) == everything:
        raise UsageError("name the files to reset, or --all for every file of the chapter")
    names = list(track.files) if everything else [_chapter_file(repo.root, track, f) for f in files]
    stamp = now().replace(":", "-").replace("+00-00", "Z")
    try:
        done = restore(chapter, track, repo.root, list(dict.fromkeys(names)), stamp=stamp)
    except OSError as exc:
        raise UsageError(f"cannot reset: {exc.strerror or exc}"
                         + (f" ({exc.filename})" if getattr(exc, "filename", None) else "")) from None
    for item in done:
        if item.unchanged:
            echo(f"  {click.style('same', fg='yellow')}   {item.name} (already the stub)")
        elif item.backup:
            echo(f"  {click.style('reset', fg='green')}  {item.name} (yours is now {item.backup.relative_to(repo.root)})")
        else:
            echo(f"  {click.style('wrote', fg='green')}  {item.name}")
    if any(item.backup for item in done):
        echo(click.style(f"\nyour versions are kept in {repo.root / BACKUP_DIR / stamp}", dim=True))


def _chapter_file(root: Path, track, given: Path) -> str:  # noqa: ANN001
    """A file the learner names (from wherever they are) as one of the track's files."""
    path = (Path.cwd() / given).resolve() if not given.is_absolute() else given.resolve()
    try:
        name = path.relative_to(root.resolve()).as_posix()
    except ValueError:
        name = ""
    if name not in track.files:
        raise UsageError(f"{given} is not one of chapter {track.chapter_id}'s files: {', '.join(track.files)}")
    return name


@cli.command(context_settings={"ignore_unknown_options": True})
@click.option("--reference", is_flag=True, help="Run the demonstration on the course's reference.")
@language_option("The track, with --reference.")
@click.option("--timeout", type=click.FloatRange(min=0.1), default=RUN_TIMEOUT, show_default=True,
              help="Seconds the demonstration may take before it is stopped.")
@click.argument("args", nargs=-1, type=click.UNPROCESSED, metavar="[CHAPTER] [DEMO OPTIONS]...")
def run(reference: bool, language: str, timeout: float, args: tuple[str, ...]) -> None:
    """Run the chapter's offline demonstration on your code.

    Every other option is the demonstration's own and is passed to it as it is
    (for example `course run ag02 --scenario retry`).
    """
    from course import content, languages, services
    from course.languages.protocol import Demonstration

    # The chapter is the first word that is not an option; with none, the current chapter. Any other
    # word belongs to the demonstration (click puts unknown options among the arguments, in order).
    chapter, args = (CHAPTER.convert(args[0], None, None), args[1:]) if args and not args[0].startswith("-") else (None, args)
    target = _code_under_test(chapter, reference, language)
    track = target.track
    if not track.run:
        raise UsageError(f"chapter {target.chapter.id} has no demonstration to run")
    demonstration = languages.capability(languages.get(track.language), Demonstration)
    if demonstration is None:
        raise UsageError(f"the {track.language} track cannot run demonstrations yet")
    with services.environment(track.for_demonstration) as env:
        code = demonstration.run_script(track, target.code_root, content.require(track.tests) / track.run,
                                        list(args), env, timeout=timeout)
    sys.exit(code if code >= 0 else 128 - code)  # killed by a signal: the shell's convention


@cli.command("fake-model")
@click.option("--port", type=click.IntRange(0, 65535), default=0, show_default=True,
              help="The port (0 picks a free one).")
@click.option("--host", default="127.0.0.1", show_default=True, help="A loopback address to listen on.")
@click.option("--script", "script", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="A JSON file of scripted replies to answer with first.")
@click.option("--quiet", is_flag=True, help="Do not log requests to stderr.")
def fake_model(port: int, host: str, script: Path | None, quiet: bool) -> None:
    """Serve the course fake model (OpenAI-compatible chat completions) on a loopback address."""
    from course.fake_model import serve

    try:
        serve(port=port, host=host, script=script, verbose=not quiet)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    except OSError as exc:
        raise UsageError(f"cannot serve on {host}:{port}: {exc.strerror or exc}") from None


@cli.command()
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

    target = _learner_chapter(chapter)
    repo, chapter, track = target.repo, target.chapter, target.track
    folder = tests_folder(track, repo.root)
    echo(f"{chapter.id}: your tests in {folder.relative_to(repo.root)}/, judged against the reference and "
         f"{len(track.mutants)} pitfall mutants")
    # a bar on a terminal; piped, the report below says everything (mutants finish in any order)
    progress = _Progress(len(track.mutants), label="mutants", line=lambda r: None)
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
        echo("\nfix the expectations above first: the mutants are judged only by tests that pass on the reference")
        sys.exit(1)
    caught, missed = result.caught, result.missed
    echo(f"on the pitfall mutants: your tests catch {len(caught)} of {len(result.mutants)}")
    by_pitfall: dict[int, list[str]] = {}
    for mutant in missed:
        by_pitfall.setdefault(mutant.pitfall, []).append(mutant.id)
    for number, ids in sorted(by_pitfall.items()):
        pitfall = chapter.pitfall(number)
        title = f" ({pitfall.title})" if pitfall else ""
        echo(f"  not caught: pitfall {number}{title}: {', '.join(ids)}")
    if not missed:
        echo(click.style("every pitfall mutant is caught by at least one of your tests", fg="green", bold=True))
    else:
        echo("each mutant is one plausible bug: write a test that fails on it and passes on the reference")
    sys.exit(0 if result.ok else 1)


@cli.command()
@click.argument("chapter", metavar="CHAPTER", type=CHAPTER)
@click.option("--only", default="", metavar="IDS", help="Run only these mutants, e.g. --only s05,s06.")
@click.option("--json", "json_path", type=click.Path(dir_okay=False, path_type=Path), help="Write the results as JSON.")
@click.option("--broad", is_flag=True,
              help="Run the track's general mutation tool instead (mutmut for Python, gremlins for Go: instructors' extras).")
@click.option("--jobs", type=click.IntRange(min=1), default=None, help="Mutants run at once [default: twice the cores].")
@language_option("The track whose mutants run.")
def mutants(chapter: Any, only: str, json_path: Path | None, broad: bool, jobs: int | None, language: str) -> None:
    """Prove the catalog kills each documented pitfall mutant (or, with --broad, score it with a general tool)."""
    import json

    _writable(json_path)
    track = chapter.track(language)
    if broad and (only or jobs):
        raise UsageError("--only and --jobs choose documented mutants; --broad runs its tool's own")
    if broad:
        from course import languages, services
        from course.languages.protocol import BroadMutation

        tool = languages.capability(languages.get(language), BroadMutation)
        if tool is None:
            raise UsageError(f"the {language} track has no broad mutation tool")
        with services.environment(track) as env:
            report = tool.run(chapter, track, env, echo=lambda m: echo(m, err=True))
        report.show(echo)
        if json_path:
            json_path.write_text(json.dumps(report.as_dict(), indent=2) + "\n", encoding="utf-8")
        sys.exit(0)

    from course.mutation.documented import STALE, run_mutants

    selected = list(track.mutants)
    if only:
        wanted = [w.strip() for w in only.split(",") if w.strip()]
        if not wanted:
            raise UsageError("--only takes mutant ids, e.g. --only s05,s06")
        unknown = sorted(set(wanted) - {m.id for m in selected})
        if unknown:
            raise UsageError(f"chapter {chapter.id} has no mutant {', '.join(unknown)}; "
                             f"its mutants are {', '.join(m.id for m in selected)}")
        selected = [m for m in selected if m.id in wanted]
    if not selected:
        raise UsageError(f"chapter {chapter.id} documents no {language} mutants")

    echo(f"{chapter.id}: {len(selected)} documented mutants, each on a temporary copy of the reference")
    progress = _Progress(len(selected))
    try:
        results = run_mutants(chapter, track, selected, jobs=jobs, on_result=progress.step)
    finally:
        progress.close()
    for r in results:
        mark = click.style("ok ", fg="green") if r.documented else click.style("BAD", fg="red", bold=True)
        echo(f"  {mark} {r.mutant.id:<5} {r.status:<8} pitfall {r.mutant.pitfall:<2} {r.mutant.description}")
        if r.failing:
            echo(click.style(f"            failed: {', '.join(r.failing)}", dim=True))
        if not r.documented:
            echo(f"            documented as caught by: {', '.join(r.mutant.caught_by)}")
        if r.detail:
            echo(f"            {r.detail.splitlines()[0]}")
    good = sum(r.documented for r in results)
    stale = sum(r.status == STALE for r in results)
    echo(f"\n{good} of {len(results)} mutants killed as documented" + (f", {stale} stale" if stale else ""))
    echo(f"{good} passed, {len(results) - good} failed")
    if json_path:
        json_path.write_text(json.dumps({"chapter": chapter.id, "language": language,
                                         "mutants": [r.as_dict() for r in results]}, indent=2) + "\n",
                             encoding="utf-8")
    sys.exit(0 if good == len(results) else 1)


class _Progress:
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


@cli.command()
@click.argument("chosen", metavar="[CHAPTER]...", type=CHAPTER, nargs=-1)
@click.option("--seed", type=click.IntRange(min=0), default=None,
              help="The shuffled run's seed (to repeat an order verify printed) [default: drawn from the catalog's files].")
@click.option("--record", is_flag=True,
              help="Record the mutants' kill signatures anew (for hints) instead of checking them.")
def verify(chosen: tuple[Any, ...], seed: int | None, record: bool) -> None:
    """Prove chapters sound: manifest, reference passes (in order and shuffled), stubs fail,
    documented mutants killed, recorded kill signatures up to date.

    Verify only reads the course's files; --record writes each chapter's signatures.json."""
    from course import chapters
    from course.verify import verify_track

    selected = list(chosen) or list(chapters.load_all())
    passed = failed = 0

    def say(finding) -> None:  # noqa: ANN001
        mark = click.style("ok  ", fg="green") if finding.ok else click.style("FAIL", fg="red", bold=True)
        first, *more = finding.detail.splitlines() or [""]
        echo(f"  {mark} {finding.step:<9} {first}")
        for line in more:
            echo(f"                 {line}")

    for chapter in selected:
        for track in chapter.tracks.values():
            echo(f"{chapter.id} ({track.language}): {chapter.title}")
            verdict = verify_track(chapter, track, say=say, seed=seed, record=record)
            passed += sum(f.ok for f in verdict.findings)
            failed += sum(not f.ok for f in verdict.findings)
    echo(f"\nverify: {passed} passed, {failed} failed")
    sys.exit(0 if failed == 0 else 1)


@cli.command()
def doctor() -> None:
    """Check that this machine and this install are ready: toolchains, content, hints, folders.

    One line per check: ok, warn (worth knowing; nothing you need is broken) or FAIL with what to
    do. Exit 0 when nothing fails, 1 otherwise. A language's toolchain that is missing fails only
    when a chapter started in this repository is a track of that language.
    """
    from course.doctor import FAIL, OK, needed_languages, run_checks

    colours = {OK: "green", FAIL: "red"}
    failed = 0
    for check in run_checks(needed_languages()):
        failed += check.status == FAIL
        mark = click.style(f"{check.status:<4}", fg=colours.get(check.status, "yellow"), bold=check.status == FAIL)
        echo(f"  {mark} {check.what:<18} {check.detail}")
    echo(f"\ndoctor: {'nothing to mend' if not failed else f'{failed} to mend (see FAIL above)'}")
    sys.exit(1 if failed else 0)


@cli.command()
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
    _writable(csv_path, json_path)
    if results_dir is not None:
        from course.grading.from_results import gradebook as from_results

        rows = from_results(results_dir)
    else:
        from course.grading import roster as rosters
        from course.grading.grade import Grader, Limits

        chapter_id = chapter.id if chapter is not None else None
        members = rosters.read(roster.resolve())
        grader = Grader(chapter_id, Limits(test_timeout=timeout, repo_timeout=repo_timeout), jobs or os.cpu_count() or 1)
        progress = _Progress(len(members), label="repositories", line=lambda row: f"  {row.learner}: {row.status}")
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


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt  # SIGTERM and SIGHUP clean up like Ctrl-C: no test process is left running


def main() -> None:
    """The `course` command: run it, then end the process (see _end)."""
    try:
        _command()
    except SystemExit as exc:
        _end(exc)
    _end(SystemExit(0))


def _end(ending: SystemExit) -> NoReturn:
    """End the process as `raise ending` would, without tearing the interpreter down: with pytest and
    the rest loaded that costs ~15 ms of every check, and nothing of a command's is left to do by
    then. Every atexit handler still runs (the run folder, multiprocessing's helpers, coverage's
    data), in the same order, then both streams are flushed, and the exit status is the one
    sys.exit would give. It exits the usual way while a thread other than a daemon runs (the
    interpreter waits for it before its atexit handlers) and under a profiler or a tracer (which
    may write its results after the command returns, as `python -m cProfile` does)."""
    import atexit
    import threading

    if (any(not thread.daemon for thread in threading.enumerate() if thread is not threading.main_thread())
            or sys.getprofile() is not None or sys.gettrace() is not None):
        raise ending
    if ending.code is None or isinstance(ending.code, int):
        status = ending.code or 0
    else:  # sys.exit("message"): the message goes to stderr, the status is 1
        print(ending.code, file=sys.stderr)
        status = 1
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BrokenPipeError:  # the reader of our output left: as in _command
            status = status or 141
        except (OSError, ValueError):  # a stream that cannot be written (closed): as Python's own exit
            status = status or 120
    os._exit(status)


def _command() -> None:
    import signal

    from course import rundir

    signal.signal(signal.SIGTERM, _interrupt)
    if hasattr(signal, "SIGHUP"):
        signal.signal(signal.SIGHUP, _interrupt)  # the terminal closed
    rundir.enter()
    try:
        sys.exit(cli.main(standalone_mode=False, prog_name="course") or 0)
    except click.UsageError as exc:  # one line, as every other usage error: what is wrong, where to look
        command = exc.ctx.command_path if exc.ctx else "course"
        what = "commands" if exc.ctx is None or isinstance(exc.ctx.command, click.Group) else "options"
        click.echo(f"course: {exc.format_message()} (`{command} --help` lists the {what})", err=True)
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except (click.exceptions.Abort, KeyboardInterrupt):  # click turns Ctrl-C into Abort
        from course import processes

        processes.kill_all()
        click.echo("interrupted", err=True)
        sys.exit(130)
    except BrokenPipeError:  # the reader of our output left before click's own output was done
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(141)  # 128 + SIGPIPE, as a shell reports it
    except CourseError as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except Exception as exc:  # noqa: BLE001 - a bug of the harness: say so, never "interrupted"
        from course import processes
        from course.errors import InternalError

        processes.kill_all()
        if os.environ.get("COURSE_DEBUG"):
            import traceback

            traceback.print_exc()
        InternalError(f"{type(exc).__name__}: {exc}").show()
        sys.exit(InternalError.exit_code)
    finally:
        from course import processes

        processes.kill_all()

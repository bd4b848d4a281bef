"""`course start CHAPTER`: write a chapter's stubs into the learner's repository, never over a file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from course.commands.shared import CHAPTER, echo, language_option
from course.errors import UsageError


@click.command()
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


def _can_write(folder: Path) -> bool:
    """Whether files can be created in the folder (tried, not guessed from permission bits: root
    ignores them, and a read-only mount ignores them the other way)."""
    import tempfile

    try:
        with tempfile.NamedTemporaryFile(prefix=".course-probe-", dir=folder):
            return True
    except OSError:
        return False

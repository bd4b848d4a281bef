"""`course reset`: put a stub back, the learner's version kept in a backup folder."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from course.commands.shared import CHAPTER, echo, learner_chapter
from course.errors import UsageError


@click.command()
@click.argument("files", nargs=-1, type=click.Path(path_type=Path))
@click.option("--all", "everything", is_flag=True, help="Every file of the chapter.")
@click.option("--chapter", "chapter", metavar="CHAPTER", type=CHAPTER, help="The chapter (default: the current one).")
def reset(files: tuple[Path, ...], everything: bool, chapter: Any) -> None:
    """Put the stub of FILE back, after moving your version to a backup folder in your repository."""
    from course.learner import now
    from course.scaffold import BACKUP_DIR, restore

    target = learner_chapter(chapter)
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

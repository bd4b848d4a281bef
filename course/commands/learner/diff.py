"""`course diff`: once the chapter passes, the learner's code against the reference."""

from __future__ import annotations

from typing import Any

import click

from course.commands.shared import CHAPTER, color, echo, learner_chapter


@click.command()
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

    target = learner_chapter(chapter)
    repo, chapter, track, state = target.repo, target.chapter, target.track, target.state
    if not force:
        if not state.passed:
            raise Refused(f"the reference is shown once `course check {chapter.id}` passes; it has not passed yet")
        if fingerprint(repo.root, track.files) != state.passed_fingerprint:
            raise Refused(f"your files are not the ones that passed `course check {chapter.id}`; run it again first")
    blind = None if everything else languages.capability(languages.get(track.language), CommentBlindDiff)
    commentary = blind.commentary_lines if blind is not None else None
    summary = diff_files(repo.root, content.require(track.reference), track.files, echo=echo, color=color(), commentary=commentary)
    if not summary.changed:
        echo(f"no differences{' in code' if summary.left_out else ''}: your {chapter.id} files match the reference.")
    if summary.left_out:
        plural = "s" if summary.left_out != 1 else ""
        echo(click.style(f"({summary.left_out} difference{plural} in comments or docstrings only left out; "
                         "--all shows them)", dim=True))

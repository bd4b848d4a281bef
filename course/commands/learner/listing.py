"""`course list`: the chapters, and the learner's progress in each as their files are now."""

from __future__ import annotations

import click

from course.commands.shared import echo


@click.command("list")
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

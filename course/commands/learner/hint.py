"""`course hint`: the next of a catalog test's written hints, one level more each time."""

from __future__ import annotations

from typing import Any

import click

from course.commands.shared import CHAPTER, catalog_entry, echo, learner_chapter
from course.errors import UsageError


@click.command()
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
    target = learner_chapter(chapter)
    repo, chapter, track, state = target.repo, target.chapter, target.track, target.state
    adapter = languages.get(track.language)
    if test:
        entry = catalog_entry(chapter, adapter, test)
    else:
        failing = state.last_check.get("failing")
        if failing is None and state.last_check:
            failing = []
        if failing == [] and state.last_check:
            echo("every test passed in your last check; `course hint TEST` gives a hint for one test.")
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

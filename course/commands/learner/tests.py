"""`course tests`: the chapter's test catalog, or one test's source."""

from __future__ import annotations

from typing import Any

import click

from course.commands.shared import CHAPTER, any_chapter, catalog_entry, echo, language_option, track_language
from course.errors import UsageError
from course.languages.registry import DEFAULT_LANGUAGE


@click.command()
@click.argument("chapter", metavar="[CHAPTER]", type=CHAPTER, required=False)
@language_option(f"The track whose test names are shown (default: the one you started, else {DEFAULT_LANGUAGE}).",
                 default=None)
@click.option("--source", "source", metavar="TEST", help="Print the source of one catalog test.")
def tests(chapter: Any, language: str | None, source: str | None) -> None:
    """The chapter's test catalog: each test, its kind, what it checks and why it matters."""
    import textwrap

    from course import languages

    chapter = any_chapter(chapter)
    language = track_language(chapter, language)
    adapter = languages.get(language)
    if language in chapter.tracks:
        chapter = chapter.for_track(chapter.track(language))
    if source:
        entry = catalog_entry(chapter, adapter, source)
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

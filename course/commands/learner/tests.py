"""`course tests`: the chapter's test catalog, or one test's source."""

from __future__ import annotations

from typing import Any

import click

from course.commands.shared import (CHAPTER, any_chapter, catalog_entry, complete_tests, echo, language_option, paged,
                                   reading_language)
from course.errors import UsageError
from course.languages.registry import DEFAULT_LANGUAGE


@click.command()
@click.argument("chapter", metavar="[CHAPTER]", type=CHAPTER, required=False)
@language_option(f"The track whose test names are shown (default: the one you started, else {DEFAULT_LANGUAGE}).",
                 default=None)
@click.option("--source", "source", metavar="TEST", shell_complete=complete_tests, help="Print the source of one catalog test.")
@click.option("--no-pager", is_flag=True, help="Print it all at once, even on a terminal.")
def tests(chapter: Any, language: str | None, source: str | None, no_pager: bool) -> None:
    """The chapter's test catalog: each test, its kind, what it checks and why it matters (through
    your pager on a terminal)."""
    import textwrap

    from course import languages

    chapter = any_chapter(chapter)
    language = reading_language(chapter, language)
    chapter = chapter.for_track(chapter.track(language))
    adapter = languages.get(language)
    if source:
        entry = catalog_entry(chapter, adapter, source)
        code = adapter.test_sources(chapter.track(language)).get(adapter.test_name(entry.name), "")
        if not code:
            raise UsageError(f"no source found for {adapter.test_name(entry.name)} in {chapter.track(language).tests}")
        echo(code)
        return
    from course.commands.shared import color

    style = click.style if color() else (lambda text, **_: text)
    out = [f"{chapter.id}: {chapter.title}"] + ([chapter.summary] if chapter.summary else [])
    out.append(f"{len(chapter.catalog)} tests, run in this order by `course check`\n")
    for i, entry in enumerate(chapter.catalog, 1):
        out.append(f"{i:>2}. {style(adapter.test_name(entry.name), bold=True)}  [{entry.kind}]")
        out.append(textwrap.fill(entry.checks, 96, initial_indent="    checks: ", subsequent_indent="            "))
        out.append(textwrap.fill(entry.why, 96, initial_indent="    why:    ", subsequent_indent="            "))
    out.append(style(f"\n`course tests {chapter.id} --source TEST` prints a test's code; "
                     "`course hint TEST` gives a hint.", dim=True))
    paged("\n".join(out), pager=not no_pager)

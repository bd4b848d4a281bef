"""`course show`: the chapter's text, as the learner's track reads it, whole or one section."""

from __future__ import annotations

from typing import Any

import click

from course.commands.shared import CHAPTER, any_chapter, language_option, paged, reading_language
from course.errors import CourseError, UsageError
from course.languages.registry import DEFAULT_LANGUAGE


@click.command()
@click.argument("chapter", metavar="[CHAPTER] [SECTION]", required=False,
                shell_complete=lambda ctx, param, incomplete: CHAPTER.shell_complete(ctx, param, incomplete))
@click.argument("section", required=False, metavar="", shell_complete=lambda ctx, param, incomplete: _sections(ctx, incomplete))
@language_option(f"The track whose text is shown (default: the one you started, else {DEFAULT_LANGUAGE}).", default=None)
@click.option("--no-pager", is_flag=True, help="Print it all at once, even on a terminal.")
def show(chapter: str | None, section: str | None, language: str | None, no_pager: bool) -> None:
    """Print the chapter's text, or one SECTION of it: its number (`course show ag01 2.2`; `3` is
    section 3 with its subsections) or the start of its title (`course show ag03 "fail closed"`).
    On a terminal the text goes through your pager ($PAGER, else less)."""
    from course import chapters
    from course.errors import UnknownChapter

    found: Any = None
    unknown: UnknownChapter | None = None  # the first word named no chapter: a section of the current one?
    if chapter is not None:
        try:
            found = CHAPTER.convert(chapter, None, None)
        except UnknownChapter as exc:
            if section is not None:
                raise
            section, unknown = chapter, exc  # `course show 2.2`
    try:
        found = any_chapter(found)
    except CourseError:
        if unknown is not None:  # outside a learner's repository the word was meant as a chapter
            raise unknown from None
        raise
    text = found.text(reading_language(found, language))
    if section is not None:
        part = chapters.section_of(text, section)
        if part is None and unknown is not None and not section[:1].isdigit():
            raise unknown
        if part is None:
            raise UsageError(f"chapter {found.id} has no section {section!r}; its sections are: "
                             + ", ".join(chapters.section_names(text)))
        text = part
    paged(text.rstrip(), pager=not no_pager)


def _sections(ctx: click.Context, incomplete: str) -> list:
    """Shell completion of SECTION: the numbered sections of the chapter named (or the current one)."""
    from click.shell_completion import CompletionItem

    try:
        from course import chapters

        chapter = any_chapter(CHAPTER.convert(ctx.params["chapter"], None, None) if ctx.params.get("chapter") else None)
        names = chapters.section_names(chapter.text())
    except Exception:  # noqa: BLE001 - completion offers what it can, and never fails
        return []
    return [CompletionItem(name) for name in names if name[:1].isdigit() and name.startswith(incomplete)]

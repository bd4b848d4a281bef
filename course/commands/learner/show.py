"""`course show`: the chapter's text, as the learner's track reads it."""

from __future__ import annotations

from typing import Any

import click

from course.commands.shared import CHAPTER, any_chapter, echo, language_option, track_language
from course.languages.registry import DEFAULT_LANGUAGE


@click.command()
@click.argument("chapter", metavar="[CHAPTER]", type=CHAPTER, required=False)
@language_option(f"The track whose text is shown (default: the one you started, else {DEFAULT_LANGUAGE}).", default=None)
def show(chapter: Any, language: str | None) -> None:
    """Print the chapter's text."""
    chapter = any_chapter(chapter)
    echo(chapter.text(track_language(chapter, language)).rstrip())

"""Each chapter's catalog is grouped in tasks, one per section of its text that states a rule: an
entry's `task` is the place, in the text's order, of the first section its `stated_in` names (what
exercism's task_id carries into results.json, `course check --json`)."""

from __future__ import annotations

import re

import pytest

from course import chapters

CHAPTERS = [c.id for c in chapters.load_all()]


@pytest.mark.parametrize("chapter_id", CHAPTERS)
def test_every_entry_has_the_task_of_the_section_that_states_its_rule(chapter_id: str) -> None:
    chapter = chapters.get(chapter_id)
    headings = [h.strip() for h in re.findall(r"^#{2,3} +(.*?)\s*$", chapter.text(), flags=re.M)]
    first = {e.name: next(where for kind, where in e.stated_in if kind == "section") for e in chapter.catalog}
    sections = sorted(set(first.values()), key=headings.index)
    wrong = {e.name: (e.task, sections.index(first[e.name]) + 1) for e in chapter.catalog
             if e.task != sections.index(first[e.name]) + 1}
    assert not wrong, f"task (written, want) by entry: {wrong}; tasks follow the sections in the text: {sections}"

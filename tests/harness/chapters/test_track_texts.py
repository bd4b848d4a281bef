"""Each track's text speaks its own language: `course show CH --language go` (or typescript) holds no
Python-only name, and the Python text none of Go's. A section a track does not rewrite is read as
text.md has it, so a Python sentence left in a shared section reaches Go's readers unnoticed; this
test renders every chapter for every track it has and looks for tell-tale tokens."""

from __future__ import annotations

import re

import pytest

from course import chapters

# Tokens that only a Python reader should meet. `None` is a word of English too: it counts unless it
# opens a sentence as English does ("None of them", "None is a recording").
PYTHON_ONLY = {
    "None": re.compile(r"(?<![.!?]\s)(?<!^)\bNone\b(?! (?:of|is|are)\b)", re.M),
    "dataclass": re.compile(r"\bdataclass"),
    "ValueError": re.compile(r"\bValueError\b"),
    # ag02's tools edit calculator.py (its name also streams in pieces, `lator.py"`): data, not code
    ".py": re.compile(r"\b(?!(?:calcu)?lator\.py\b)\w+\.py\b"),
    "def ": re.compile(r"\bdef \w"),
    "self.": re.compile(r"\bself\."),
    "test_...": re.compile(r"\btest_[a-z]"),
}

# Tokens that only a Go reader should meet.
GO_ONLY = {
    "nil": re.compile(r"`[^`\n]*\bnil\b[^`\n]*`|\bnil\b(?= (?:error|slice|map|pointer|Client|Verdict))"),
    "func ": re.compile(r"\bfunc [\w(]"),
    ".go": re.compile(r"\b\w+\.go\b"),
    "TestX": re.compile(r"\bTest[A-Z]\w+"),
    "in Go": re.compile(r"\bin Go\b"),
}


def _texts() -> list:
    cases = []
    for chapter in chapters.load_all():
        for language in sorted(chapter.tracks):
            cases.append(pytest.param(chapter.id, language, id=f"{chapter.id}-{language}"))
    return cases


def _found(text: str, tokens: dict[str, re.Pattern]) -> list[str]:
    hits = []
    for number, line in enumerate(text.splitlines(), start=1):
        for name, pattern in tokens.items():
            if pattern.search(line):
                hits.append(f"line {number}, {name!r}: {line.strip()[:110]}")
    return hits


@pytest.mark.parametrize("chapter_id, language", _texts())
def test_a_track_text_names_nothing_of_another_language(chapter_id: str, language: str) -> None:
    text = chapters.get(chapter_id).text(language)
    foreign = GO_ONLY if language == "python" else PYTHON_ONLY
    hits = _found(text, foreign)
    assert not hits, (
        f"`course show {chapter_id} --language {language}` names what only another track's readers know "
        f"({len(hits)} lines); rewrite those sections in text.{language}.md (or in text.md, if the name is Go's):\n"
        + "\n".join(hits[:15])
    )


def test_the_token_lists_catch_what_they_are_for() -> None:
    python_lines = ["returns `None` when absent", "a frozen dataclass", "raises `ValueError`", "see `agent/types.py`",
                    "def is_content(delta):", "self.buffer", "`test_hand_example` fails", "gives None for anything else"]
    go_lines = ["returns `nil`", "func (d *Decoder) Event", "`go/agent/types/types.go`", "`TestHandExample`", "as in Go"]
    assert all(_found(line, PYTHON_ONLY) for line in python_lines), [l for l in python_lines if not _found(l, PYTHON_ONLY)]
    assert all(_found(line, GO_ONLY) for line in go_lines), [l for l in go_lines if not _found(l, GO_ONLY)]
    english = ["None of them acted on the bytes.", "labelled as authored. None is a recording,", "the model edits `calculator.py`",
               '`lator.py", "old"`']
    assert not [l for l in english if _found(l, PYTHON_ONLY)], "English or data taken for Python"

"""Verify's checks of what a learner reads beside the code: hints that point and never hand over the
solution (course.overlap), sections named that exist in the track's text, and the counts, sizes and
pitfall numbers a text states (course.chapters.FACT placeholders). Each check fails on a manifest or
text broken on purpose, and passes on every real chapter and track."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from course import chapters
from course.overlap import LINE, RUN, Code, tokens
from course.verify import (fact_problems, hint_leak_problems, section_problems, section_references,
                           solution_lines, stated_in_problems)

TRACKS = [(c.id, language) for c in chapters.load_all() for language in c.tracks]


def _track(chapter_id: str, language: str):
    chapter = chapters.get(chapter_id)
    track = chapter.track(language)
    return chapter.for_track(track), track


def _with_hint(chapter_id: str, language: str, entry: str, level: int, text: str):
    """The chapter and track with one hint of one entry replaced, as the track shows its hints."""
    chapter, track = _track(chapter_id, language)
    found = next(e for e in chapter.catalog if e.name == entry)
    hints = list(track.hints_for(found))
    hints[level - 1] = text
    return chapter, replace(track, hints={**track.hints, entry: tuple(hints)})


# ---- the comparison itself ---------------------------------------------------------------------------

def test_names_pass_and_solution_code_fails():
    code = Code([("a.go:1", "\tif errors.Is(err, io.EOF) {"), ("a.go:2", "\tdefer body.Close()"),
                 ("a.py:3", "        except (OSError, http.client.HTTPException) as exc:  # cut mid-body")])
    for prose in ("Decoder.decode", "use errors.Is to find it", "catch http.client.HTTPException too",
                  "call `body.Close` when done", "the caller's body, cut mid-body"):
        assert code.shared(prose) is None, prose
    run = code.shared("test it with errors.Is(err, io.EOF) first")
    assert run is not None and run.prose == "errors.Is(err, io.EOF)" and run.where == "a.go:1"
    line = code.shared("then defer body.Close()")
    assert line is not None and line.where == "a.go:2", line
    assert len(tokens("errors.Is(err, io.EOF)", code=False)) >= RUN > len(tokens("http.client.HTTPException", code=False))
    assert len(tokens("defer body.Close()", code=True)) >= LINE


def test_quotes_and_comments_are_read_as_what_they_are():
    assert [t.text for t in tokens('x = "a b"  # the rest', code=True)] == ["x", "=", "\0a b"]
    assert [t.text for t in tokens("the caller's `x.y` and 'a b'", code=False)] == \
        ["the", "caller", "'", "s", "x", ".", "y", "and", "\0a b"]


# ---- hints do not repeat the solution ---------------------------------------------------------------

@pytest.mark.parametrize(("chapter_id", "language"), TRACKS)
def test_no_real_hint_repeats_its_reference(chapter_id, language):
    chapter, track = _track(chapter_id, language)
    assert hint_leak_problems(chapter, track) == []


@pytest.mark.parametrize(("chapter_id", "language"), TRACKS)
def test_a_line_of_the_solution_in_a_hint_fails(chapter_id, language):
    chapter, track = _track(chapter_id, language)
    where, line = next((w, l) for w, l in solution_lines(track) if len(tokens(l, code=True)) >= RUN)
    entry = chapter.catalog[-1].name
    bad_chapter, bad_track = _with_hint(chapter_id, language, entry, 3, f"Write exactly this: {line.strip()}")
    problems = hint_leak_problems(bad_chapter, bad_track)
    assert len(problems) == 1 and " hint 3 repeats the reference's code (" + where + ")" in problems[0], problems


def test_only_the_learners_code_counts():
    """Given files and the code outside the learner's regions are in the stub already: a hint may
    repeat them. Comments and docstrings are no code."""
    chapter, track = _track("ag01", "python")
    places = {where.partition(":")[0] for where, _ in solution_lines(track)}
    assert places and not places & set(track.given)
    assert all(not line.strip().startswith(("#", '"""')) for _, line in solution_lines(track))


# ---- sections a hint names ----------------------------------------------------------------------------

def test_how_hints_name_sections():
    assert section_references("Sections 2.6 and 7: see section 3's table") == ["2.6", "7", "3"]
    assert section_references("'Running the loop' and \"Fail closed, and say why\"") == \
        ["Running the loop", "Fail closed, and say why"]
    assert section_references("'Bookkeeping': the ids") == ["Bookkeeping"]
    assert section_references("four deltas for 'Hello'; 'HTTP 503'; 'Bearer a, Basic b'; 'Done' events") == []


@pytest.mark.parametrize(("chapter_id", "language"), TRACKS)
def test_every_section_a_real_hint_names_exists(chapter_id, language):
    chapter, track = _track(chapter_id, language)
    assert section_problems(chapter, track) == []
    assert stated_in_problems(chapter, track) == []


@pytest.mark.parametrize(("chapter_id", "language"), [("ag01", "go"), ("ag00", "python")])
def test_a_section_the_text_lacks_fails(chapter_id, language):
    chapter, _ = _track(chapter_id, language)
    entry = chapter.catalog[0].name
    bad_chapter, bad_track = _with_hint(chapter_id, language, entry, 2, "Section 9.9 and 'The missing heading': read them")
    problems = section_problems(bad_chapter, bad_track)
    assert [p.split(" names section ")[1].split(",")[0] for p in problems] == ["'9.9'", "'The missing heading'"], problems


def test_stated_in_is_read_against_the_tracks_text():
    """ag01 section 7 is 'Closing a stream in Python' in text.md and retitled in the Go text: the
    catalog's heading still names section 7 there. A number the track's text lacks fails."""
    chapter, track = _track("ag01", "go")
    entry = next(e for e in chapter.catalog if ("section", "7. Closing a stream in Python") in e.stated_in)
    assert stated_in_problems(chapter, track) == []
    wrong = replace(entry, stated_in=(("section", "7. Closing a stream in Go"),))
    bad = replace(chapter, catalog=tuple(wrong if e is entry else e for e in chapter.catalog))
    assert any("is not a heading of text.md" in p for p in stated_in_problems(bad, track))


# ---- counts, sizes and pitfall numbers --------------------------------------------------------------

@pytest.mark.parametrize(("chapter_id", "language"), TRACKS)
def test_every_real_text_states_true_facts(chapter_id, language):
    chapter, track = _track(chapter_id, language)
    assert fact_problems(chapter, track) == []
    assert not chapters.FACT.search(chapter.text(language))


def test_the_worked_example_states_its_fixtures_size():
    text = chapters.get("ag01").text("python")
    assert "1,006 bytes" in text and "it takes 144 reads" in text and "| 26 |" in text and "| 144 |" in text
    assert "{{tests}}" not in chapters.get("ag03").text("go") and f"the {len(chapters.get('ag03').catalog)} tests" \
        in chapters.get("ag03").text("go")


def _with_text(tmp_path: Path, chapter_id: str, language: str, edit) -> tuple:
    chapter, track = _track(chapter_id, language)
    folder = tmp_path / chapter_id
    shutil.copytree(chapter.folder, folder)
    text = folder / "text.md"
    text.write_text(edit(text.read_text(encoding="utf-8")), encoding="utf-8")
    return replace(chapter, folder=folder), track


def test_a_drifted_count_fails(tmp_path):
    chapter, track = _with_text(tmp_path, "ag03", "python", lambda t: t.replace("{{tests}} tests", "23 tests"))
    problems = fact_problems(chapter, track)
    assert len(problems) == 1 and "'23 tests'" in problems[0] and "{{tests}}" in problems[0], problems


def test_a_placeholder_that_cannot_be_filled_fails(tmp_path):
    chapter, track = _with_text(tmp_path, "ag01", "python", lambda t: t.replace(
        "{{reads streams.json:hand_example.body 7}}", "{{reads streams.json:no_such.body 7}}").replace(
        "{{event_read streams.json:hand_example.body 7 7}}", "{{event_read streams.json:hand_example.body 7 8}}"))
    problems = fact_problems(chapter, track)
    assert len(problems) == 2 and "has nothing at 'no_such.body'" in problems[0] and "has 7 events, not 8" in problems[1]
    assert "{{reads streams.json:no_such.body 7}}" in chapter.text("python")  # shown as written, never a crash


def test_pitfall_numbers_must_be_the_manifests(tmp_path):
    chapter, track = _with_text(tmp_path, "ag03", "python", lambda t: t.replace("\n1. **Progress read", "\n99. **Progress read"))
    problems = fact_problems(chapter, track)
    assert len(problems) == 1 and "99 no pitfall of the manifest" in problems[0] and "not 1," in problems[0], problems

"""The pitfall hints can speak in every chapter and track: their recordings match the content as it
is, and a learner with a documented pitfall's bug gets its hint from `course check`."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import REPO
from course import chapters, regions
from course import signatures as recorded
from course.mutant import apply

TRACKS = [(c.id, t.language) for c in chapters.load_all() for t in c.tracks.values() if t.mutants]


@pytest.mark.parametrize(("chapter_id", "language"), TRACKS)
def test_every_recording_matches_its_catalog_mutants_and_reference(chapter_id: str, language: str) -> None:
    chapter = chapters.get(chapter_id)
    track = chapter.track(language)
    assert recorded.staleness(chapter, track) == "", "stale: hints would be silent for this track"
    assert set(recorded.load(chapter, track)) == {m.id for m in track.mutants}


def test_a_documented_ag02_bug_gets_its_pitfall_named(course, learner: Path) -> None:
    chapter = chapters.get("ag02")
    track = chapter.track("python")
    assert course("start", "ag02", "--dir", str(learner), cwd=learner).code == 0
    for name in track.files:
        text = (REPO / "reference" / "python" / "ag02" / name).read_text(encoding="utf-8")
        (learner / name).write_text(regions.strip(text, name), encoding="utf-8")
    mutant = track.mutants[0]
    apply(mutant, learner)
    ran = course("check", cwd=learner)
    assert ran.code == 1, ran.out
    pitfall = chapter.pitfall(mutant.pitfall)
    assert f"they match pitfall {pitfall.id}: {pitfall.title}" in ran.out, ran.out

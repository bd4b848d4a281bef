"""Small pieces of the harness, tested directly."""

from __future__ import annotations

import pytest

from course.chapters import Mutant, normalize_id
from course.mutation.apply import StaleMutant, _patch


def mutant(diff: str) -> Mutant:
    return Mutant(id="x1", pitfall=1, description="d", file="f.py", caught_by=("t",), diff=diff)


def test_a_diff_mutant_applies_with_a_stripped_blank_context_line() -> None:
    got = _patch(mutant("@@ -1,4 +1,4 @@\n a\n\n-b\n+B\n c\n"), "a\n\nb\nc\n")
    assert got == "a\n\nB\nc\n", f"got {got!r}"


def test_a_diff_that_does_not_match_is_stale() -> None:
    with pytest.raises(StaleMutant, match="expected 'b'"):
        _patch(mutant("@@ -1,2 +1,2 @@\n a\n-b\n+B\n"), "a\nc\n")
    with pytest.raises(StaleMutant, match="out of order"):
        _patch(mutant("@@ -3,1 +3,1 @@\n-c\n+C\n@@ -1,1 +1,1 @@\n-a\n+A\n"), "a\nb\nc\n")


@pytest.mark.parametrize("spelling", ["ag01", "AG-01", "ag.01", "Ag_01"])
def test_chapter_ids_normalize(spelling: str) -> None:
    assert normalize_id(spelling) == "ag01", f"normalize_id({spelling!r}) = {normalize_id(spelling)!r}"

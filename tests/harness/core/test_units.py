"""Small pieces of the harness, tested directly."""

from __future__ import annotations

import pytest

from course.chapters import Mutant, normalize_id
from course.mutant import StaleMutant, _patch


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


def test_the_hint_names_a_pitfall_only_on_a_clear_match() -> None:
    from course.pitfall_hints import name_pitfall

    signatures = {
        "a1": frozenset({"sse[crlf]@t.py:10 AssertionError", "sse[cr]@t.py:10 AssertionError"}),
        "b1": frozenset({"seams@t.py:40 AssertionError", "context@t.py:50 AssertionError"}),
        "c1": frozenset({"seams@t.py:40 AssertionError", "retry@t.py:90 AssertionError"}),
        "d1": frozenset({"retry@t.py:90 AssertionError", "retry@t.py:95 AssertionError"}),
    }
    pitfall_of = {"a1": 2, "b1": 9, "c1": 6, "d1": 7}
    assert name_pitfall(signatures["a1"], signatures, pitfall_of) == 2, "an exact match names its pitfall"
    # the same broad test, at the same assert, fails for two pitfalls: about as close to both, so silent
    ambiguous = frozenset({"seams@t.py:40 AssertionError"})
    assert name_pitfall(ambiguous, signatures, pitfall_of) is None, "a tie between two pitfalls must stay silent"
    one_of_four = frozenset({"sse[crlf]@t.py:10 AssertionError", "x@t.py:1 KeyError", "y@t.py:2 KeyError"})
    assert name_pitfall(one_of_four, signatures, pitfall_of) is None, "a weak match must stay silent"
    outside = frozenset({"unknown@t.py:3 AssertionError"})
    assert name_pitfall(outside, signatures, pitfall_of) is None, "failures outside every signature: silent"
    # the same case failing at another assert is another check: it does not count as a match
    elsewhere = frozenset({"sse[crlf]@t.py:12 AssertionError", "sse[cr]@t.py:12 AssertionError"})
    assert name_pitfall(elsewhere, signatures, pitfall_of) is None, "a different failing assert is not the same bug"
    # a loaded machine turns an assert of a slow case into a timeout: the same evidence, the same hint
    loaded = frozenset({"sse[crlf]@timeout", "sse[cr]@t.py:10 AssertionError"})
    assert name_pitfall(loaded, signatures, pitfall_of) == 2, "a timeout reads as the same case's failure"


def test_timeouts_and_asserts_of_one_case_read_the_same_in_a_recording() -> None:
    from course.signatures import aligned, case_of, equivalent, stable

    assert case_of("sse[a@b]@t.py:10 AssertionError") == ("sse[a@b]", "t.py:10 AssertionError")
    assert case_of("retry@timeout") == ("retry", "timeout")
    quiet = {"sse[crlf]@t.py:10 AssertionError", "retry@t.py:90 AssertionError"}
    busy = {"sse[crlf]@timeout", "retry@t.py:90 AssertionError"}
    assert equivalent(quiet, busy) and equivalent(busy, quiet)
    assert aligned(busy, quiet) == frozenset(quiet)
    assert not equivalent(quiet, {"sse[crlf]@t.py:12 AssertionError", "retry@t.py:90 AssertionError"}), \
        "another assert of the same case is another check"
    assert not equivalent(quiet, {"sse[crlf]@timeout"}), "a case fewer is another signature"
    # a case one run breaks and the next does not (a race) is left out; a timeout takes the assert's form
    racy = {"sse[crlf]@timeout", "retry@t.py:90 AssertionError", "cancel[early]@t.py:7 AssertionError"}
    assert stable([racy, quiet]) == frozenset(quiet)
    assert stable([busy, busy]) == frozenset(busy)


# ---- the parsed-manifest cache -------------------------------------------------------------------


def _manifest(folder, text: str):  # noqa: ANN001, ANN202
    (folder / "chapter.yaml").write_text(text, encoding="utf-8")
    return folder / "chapter.yaml"


def test_a_parsed_manifest_is_kept_by_content_and_read_back(tmp_path, monkeypatch) -> None:  # noqa: ANN001
    from course.chapters import _read_manifest

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    path = _manifest(tmp_path, "id: x\nlist: [1, 2]\nmap: {a: b}\n")
    first = _read_manifest(path, "x")
    kept = list((tmp_path / "cache" / "course" / "manifests").iterdir())
    assert first == {"id": "x", "list": [1, 2], "map": {"a": "b"}} and len(kept) == 1
    kept[0].write_text('{"id": "from the cache"}', encoding="utf-8")  # proves the second read uses it
    assert _read_manifest(path, "x") == {"id": "from the cache"}
    _manifest(tmp_path, "id: y\n")  # changed bytes: parsed anew, never the old entry
    assert _read_manifest(path, "x") == {"id": "y"}


def test_a_manifest_json_cannot_say_is_parsed_every_time_and_a_broken_cache_is_ignored(tmp_path, monkeypatch) -> None:  # noqa: ANN001
    import datetime

    from course.chapters import _read_manifest

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    path = _manifest(tmp_path, "when: 2026-11-30\n1: number key\n")
    assert _read_manifest(path, "x") == {"when": datetime.date(2026, 11, 30), 1: "number key"}
    assert not (tmp_path / "cache" / "course" / "manifests").exists()
    path = _manifest(tmp_path, "id: z\n")
    _read_manifest(path, "x")
    (kept,) = (tmp_path / "cache" / "course" / "manifests").iterdir()
    kept.write_text("{not json", encoding="utf-8")
    assert _read_manifest(path, "x") == {"id": "z"}


def test_a_manifest_that_is_not_yaml_or_not_utf8_is_one_manifest_error(tmp_path, monkeypatch) -> None:  # noqa: ANN001
    from course.chapters import _read_manifest
    from course.errors import ManifestError

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    with pytest.raises(ManifestError, match="not valid YAML"):
        _read_manifest(_manifest(tmp_path, "a: [1\n"), "x")
    (tmp_path / "chapter.yaml").write_bytes(b"id: \xff\n")
    with pytest.raises(ManifestError, match="not UTF-8"):
        _read_manifest(tmp_path / "chapter.yaml", "x")


def test_an_unwritable_manifest_cache_only_costs_time(tmp_path, monkeypatch) -> None:  # noqa: ANN001
    from course.chapters import _read_manifest

    (tmp_path / "cache").write_text("a file where the cache folder would go", encoding="utf-8")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert _read_manifest(_manifest(tmp_path, "id: w\n"), "x") == {"id": "w"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cache", "chapter.yaml"]  # no temporary file left


TEXT = """# t · A chapter

Why it matters.

## 1. Rules

### 1.1 Reading

Read it in Python.

### 1.2 Writing

Write it.

## The loop

Call run_loop().

### Copies

copy.deepcopy.

```sh
## not a heading: inside fenced code
```

## Pitfalls

Neutral.
"""


def test_a_track_text_replaces_sections_by_number_or_by_title() -> None:
    from course.chapters import _with_sections

    override = "### 1.1 Reading\n\nRead it in Go.\n\n## The loop\n\nCall Loop.Run.\n\n### Copies\n\nslices.Clone.\n"
    got = _with_sections(TEXT, override)
    # a "###" replaces that subsection alone; a "##" without a number replaces the section of the
    # same title with its subsections, up to the next "##", by its own and the subsections under it;
    # the rest stays, fenced code included
    assert "Read it in Go." in got and "Read it in Python." not in got and "Write it." in got, got
    assert "## The loop\n\nCall Loop.Run.\n\n### Copies\n\nslices.Clone.\n\n## Pitfalls" in got, got
    assert "run_loop" not in got and "deepcopy" not in got, got
    assert got.endswith("## Pitfalls\n\nNeutral.\n") and got.startswith("# t · A chapter\n\nWhy it matters.\n\n## 1. Rules"), got
    # an opening replaces the one after the title line; a "##" with a number takes its subsections along
    got = _with_sections(TEXT, "Why it matters in Go.\n\n## 1. Rules\n\nAll of them.\n")
    assert got.startswith("# t · A chapter\n\nWhy it matters in Go.\n\n## 1. Rules\n\nAll of them.\n\n## The loop"), got

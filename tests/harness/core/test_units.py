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


@pytest.fixture
def small_signatures(monkeypatch: pytest.MonkeyPatch) -> None:
    """The signatures of _known are of two or three cases, where the real recordings' pitfall mutants
    have many: here a pitfall may be named from three."""
    monkeypatch.setattr("course.pitfall_hints.PITFALL_MIN_MARKS", 3)


def _known(**extra):  # noqa: ANN003, ANN202
    from course.pitfall_hints import Known

    signatures = {
        "a1": frozenset({"sse[crlf]@t.py:10 AssertionError", "sse[cr]@t.py:10 AssertionError",
                         "sse[lone]@t.py:10 AssertionError"}),
        "a2": frozenset({"sse[lf]@t.py:12 AssertionError", "sse[cr]@t.py:12 AssertionError"}),
        "b1": frozenset({"seams@t.py:40 AssertionError", "context@t.py:50 AssertionError"}),
        "c1": frozenset({"seams@t.py:40 AssertionError", "retry@t.py:90 AssertionError"}),
        "d1": frozenset({"retry@t.py:90 AssertionError", "retry@t.py:95 AssertionError"}),
        "e1": frozenset({"decode@t.py:70 AssertionError", "decode@t.py:71 AssertionError"}),
        "e2": frozenset({"decode@t.py:70 AssertionError", "decode@t.py:72 AssertionError"}),
        "f1": frozenset({"budget@t.py:30 AssertionError"}),
        "g1": frozenset({"parse@t.py:5 KeyError", "parse[b]@t.py:5 KeyError", "parse[c]@t.py:5 KeyError"}),
    }
    places = {"a1": ("sse.py::Reader._lines",), "a2": ("sse.py::Reader._fields",), "b1": ("ctx.py::current",),
              "c1": ("retry.py::Retrying.run",), "d1": ("retry.py::delay",), "e1": ("sse.py::Decoder.decode",),
              "e2": ("sse.py::Decoder._chunk",), "f1": ("loop.py::run",), "g1": ("sse.py::Reader._fields",)}
    pitfall_of = {"a1": 2, "a2": 2, "b1": 9, "c1": 6, "d1": 7, "e1": 3, "e2": 4, "f1": 5, "g1": 2}
    pitfall_places = {2: ("Reader",), 9: ("current",), 6: ("Retrying.run",), 7: ("delay",), 3: ("Decoder.decode",),
                      4: ("Decoder._chunk",), 5: ("run",)}
    return Known({**signatures, **extra}, places, pitfall_of, pitfall_places)


def test_the_hint_names_a_place_and_a_pitfall_only_on_a_clear_match(small_signatures: None) -> None:
    from course.pitfall_hints import Evidence, Hint, hint

    known = _known()
    exact = Evidence(known.signatures["a1"])
    assert hint(exact, known) == Hint("sse.py::Reader._lines", 2), "an exact match names its function and pitfall"
    # the same broad test, at the same assert, fails for two pitfalls in two functions: silent on both
    assert hint(Evidence(frozenset({"seams@t.py:40 AssertionError"})), known) == Hint(), "a tie must stay silent"
    weak = frozenset({"sse[crlf]@t.py:10 AssertionError", "x@t.py:1 KeyError", "y@t.py:2 KeyError"})
    assert hint(Evidence(weak), known) == Hint(), "a weak match must stay silent"
    assert hint(Evidence(frozenset({"unknown@t.py:3 AssertionError"})), known) == Hint(), "failures outside every signature"
    # the same case failing at another assert is another check: it does not count as a match
    elsewhere = frozenset({"sse[crlf]@t.py:11 AssertionError", "sse[cr]@t.py:11 AssertionError",
                           "sse[lone]@t.py:11 AssertionError"})
    assert hint(Evidence(elsewhere), known) == Hint(), "a different failing assert is not the same bug"
    # one failing check is where many bugs meet: a place, but no pitfall
    assert hint(Evidence(known.signatures["f1"]), known) == Hint("loop.py::run", None)
    # the same checks failing at other cases of the test: still that function
    other_cases = Evidence(frozenset({"sse[tab]@t.py:10 AssertionError", "sse[lf]@t.py:10 AssertionError"}))
    assert hint(other_cases, known).place == "sse.py::Reader._lines"
    # two methods of one class fit alike: the class is the place, and no pitfall (two of them fit)
    both = Evidence(frozenset({"decode@t.py:70 AssertionError", "decode@t.py:71 AssertionError",
                               "decode@t.py:72 AssertionError"}))
    assert hint(both, known) == Hint("sse.py::Decoder", None)


def test_two_functions_whose_mutants_fail_alike_are_named_as_one_of_two(small_signatures: None) -> None:
    from course.pitfall_hints import Evidence, Hint, Known, hint

    body = frozenset({"body@t.py:20 AssertionError", "body[b]@t.py:20 AssertionError", "body[c]@t.py:20 AssertionError"})
    base = _known()

    def known_with(**more: tuple[str, int | None, frozenset[str]]) -> Known:
        return Known({**base.signatures, **{m: s for m, (_, _, s) in more.items()}},
                     {**base.places, **{m: (p,) for m, (p, _, _) in more.items()}},
                     {**base.pitfall_of, **{m: n for m, (_, n, _) in more.items()}},
                     {**base.pitfall_places, 8: ("message_json",)})

    two = known_with(h1=("req.py::message_json", 8, body), h2=("req.py::tool_call_json", 8, body))
    assert hint(Evidence(body), two) == Hint("req.py::message_json", 8, also="req.py::tool_call_json"), \
        "an exact match: both places, and the pitfall whose text is about one of them"
    near = Evidence(body | {"body[d]@t.py:20 AssertionError"})
    assert hint(near, two) == Hint("req.py::message_json", None, also="req.py::tool_call_json"), \
        "without one place, a pitfall is named from an exact match only"
    three = known_with(h1=("req.py::message_json", 8, body), h2=("req.py::tool_call_json", 8, body),
                       h3=("req.py::tool_json", None, body))
    assert hint(Evidence(body), three) == Hint(pitfall=None), "three places alike: none (and a bug of no pitfall as close)"
    assert hint(Evidence(body), two).places == ("req.py::message_json", "req.py::tool_call_json")
    assert hint(Evidence(frozenset({"body@t.py:20 KeyError", "body[b]@t.py:20 KeyError"}),
                         {"body@t.py:20 KeyError": ("req.py::tool_call_json",),
                          "body[b]@t.py:20 KeyError": ("req.py::tool_call_json",)}), two).place == "req.py::tool_call_json", \
        "crashes choose between the two"


def test_a_pitfall_without_a_place_needs_an_exact_match(small_signatures: None) -> None:
    from course.pitfall_hints import Evidence, Hint, Known, hint

    base = _known()
    # a mutant of pitfall 2 that changes a table, outside every function: its failures tell no place
    table = frozenset(f"lines[{n}]@t.py:15 AssertionError" for n in range(10))
    known = Known({**base.signatures, "a3": table}, {**base.places, "a3": ()}, {**base.pitfall_of, "a3": 2},
                  base.pitfall_places)
    assert hint(Evidence(table), known) == Hint(pitfall=2), "the failures are a3's signature exactly"
    almost = Evidence(table | {"lines[10]@t.py:15 AssertionError"})  # 10 of 11 marks alike: 0.91
    assert hint(almost, known).places == () and hint(almost, known).pitfall is None, \
        "close enough for a pitfall beside a place, not for one alone"


def test_a_method_is_named_only_when_the_recordings_know_its_class() -> None:
    from course.languages.protocol import Function
    from course.pitfall_hints import Evidence, hint

    known = _known()
    exact = Evidence(known.signatures["a1"])
    known_methods = [Function("Reader._lines", 1, 9), Function("Reader._fields", 10, 19)]
    assert hint(exact, known, lambda path: known_methods).place == "sse.py::Reader._lines"
    # a method of some length that no documented mutant changes: the recordings cannot tell it apart
    more = known_methods + [Function("Reader._split", 20, 29)]
    assert hint(exact, known, lambda path: more).place == "sse.py::Reader"
    short = known_methods + [Function("Reader.__iter__", 20, 21)]
    assert hint(exact, known, lambda path: short).place == "sse.py::Reader._lines", "a two-line method does not count"


def test_a_documented_bug_of_no_pitfall_that_fails_alike_silences_the_pitfall_not_the_place(small_signatures: None) -> None:
    from course.pitfall_hints import Evidence, Hint, Known, closeness, hint

    known = _known()
    exact = Evidence(known.signatures["a1"])
    assert hint(exact, known) == Hint("sse.py::Reader._lines", 2)
    # another bug in the same function, of no pitfall, fails the same checks: they do not tell the pitfall
    alike = Known({**known.signatures, "n1": known.signatures["a1"]}, {**known.places, "n1": ("sse.py::Reader._lines",)},
                  {**known.pitfall_of, "n1": None}, known.pitfall_places)
    assert hint(exact, alike) == Hint("sse.py::Reader._lines", None)
    assert set(closeness(exact, alike)) == set(closeness(exact, known)), "no pitfall is not a pitfall to score"
    # one that fails elsewhere changes nothing
    apart = Known({**known.signatures, "n1": known.signatures["f1"]}, {**known.places, "n1": ("loop.py::run",)},
                  {**known.pitfall_of, "n1": None}, known.pitfall_places)
    assert hint(exact, apart) == Hint("sse.py::Reader._lines", 2)


def test_a_loaded_machine_gives_the_same_hint() -> None:
    from course.pitfall_hints import Evidence, hint

    known = _known()
    quiet = Evidence(known.signatures["a1"])
    # the first case's assert became a timeout, and the run's other cases of that test were not run
    loaded = Evidence(frozenset({"sse[crlf]@timeout"}))
    assert hint(loaded, known) == hint(quiet, known)
    half = Evidence(frozenset({"sse[crlf]@timeout", "sse[cr]@t.py:10 AssertionError", "sse[lone]@t.py:10 AssertionError"}))
    assert hint(half, known) == hint(quiet, known)


def test_crashes_point_at_a_place_and_a_pitfall_must_agree_with_it(small_signatures: None) -> None:
    from course.pitfall_hints import Evidence, Hint, hint

    known = _known()
    crashed = Evidence(frozenset({"load@t.py:6 KeyError", "load[b]@t.py:6 TypeError"}),
                       {"load@t.py:6 KeyError": ("sse.py::Decoder.decode", "sse.py::Decoder._chunk"),
                        "load[b]@t.py:6 TypeError": ("sse.py::Decoder._chunk",)})
    assert hint(crashed, known) == Hint("sse.py::Decoder._chunk", None), "every failure crashed in one function"
    asserted = Evidence(frozenset({"parse@t.py:5 AssertionError"}), {"parse@t.py:5 AssertionError": ("sse.py::Decoder._chunk",)})
    assert hint(asserted, known) == Hint(), "an assert the learner's code raised is no crash"
    # the signatures say Reader._fields, the crashes Decoder._chunk: no place
    against = Evidence(known.signatures["g1"], {m: ("sse.py::Decoder._chunk",) for m in known.signatures["g1"]})
    assert hint(against, known).place == ""
    along = Evidence(known.signatures["g1"], {m: ("sse.py::Reader._fields",) for m in known.signatures["g1"]})
    assert hint(along, known) == Hint("sse.py::Reader._fields", 2)
    # a pitfall whose places are elsewhere than the place is not named
    moved = _known()
    moved = type(moved)(moved.signatures, moved.places, moved.pitfall_of, {**moved.pitfall_places, 2: ("Decoder",)})
    assert hint(Evidence(moved.signatures["a1"]), moved) == Hint("sse.py::Reader._lines", None)


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


def test_broad_mutation_reports_score_each_tool_in_its_own_words() -> None:
    """gremlins and StrykerJS reports: one scoring (timeouts count as killed, not viable ones judge nothing),
    each tool's verdict words, survivors and untested mutants shown with their line."""
    from course.languages.common import ToolMutant
    from course.languages.go.gremlins import GremlinsReport
    from course.languages.typescript.stryker import StrykerReport

    go = GremlinsReport([ToolMutant(s, "CONDITIONALS_NEGATION", "go/a.go", i, 3, f"src {i}")
                         for i, s in enumerate(["KILLED", "LIVED", "NOT COVERED", "TIMED OUT", "NOT VIABLE", "KILLED"])])
    ts = StrykerReport([ToolMutant(s, "EqualityOperator", "ts/a.ts", i, 2, f"line {i}", "x !== y" if i == 1 else "")
                        for i, s in enumerate(["Killed", "Survived", "NoCoverage", "Timeout", "CompileError",
                                               "RuntimeError", "Killed"])])
    shown: list[str] = []
    go.show(shown.append)
    ts.show(shown.append)
    assert shown[0] == ("gremlins: 6 mutants, 2 killed, 1 timeouts, 1 survived, 1 not covered by any test, "
                        "1 not viable (they do not compile)")
    assert "\n--- survived: CONDITIONALS_NEGATION at go/a.go:1:3" in shown and "src 2" in shown
    assert shown[6].startswith("StrykerJS ") and shown[6].endswith(
        ": 7 mutants, 2 killed, 1 timeouts, 1 survived, 1 not covered by any test, 2 not viable")
    assert "\n--- survived: EqualityOperator at ts/a.ts:1:2 -> x !== y" in shown
    assert "\n--- no test: EqualityOperator at ts/a.ts:2:2" in shown
    for report, viable in ((go, 1), (ts, 2)):
        got = report.as_dict()
        assert (report.judged, report.score, got["killed"], got["timeouts"], got["not_viable"]) == (4, 0.75, 2, 1, viable)
        assert len(got["survived"]) == 1 and len(got["not_covered"]) == 1 and len(got["sources"]) == 2

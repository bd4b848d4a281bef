"""What `course check` reports, in each of its forms, says what happened and nothing else: the
terminal's lines, results.json (exercism's interface) and JUnit XML, well-formed whatever the code
under test printed or raised."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from course.chapters import CatalogEntry
from course.check.report import TerminalReport, junit_xml, results_json, write_junit
from course.results import ERROR, FAIL, PASS, CaseResult, CheckResult, EntryResult


def entry(name: str, *cases: CaseResult, task: int = 0) -> EntryResult:
    return EntryResult(entry=CatalogEntry(name=name, kind="unit", checks="", why="", task=task,
                                          stated_in=(("section", "2.2 Reading"),)),
                       test_name=f"test_{name}", cases=list(cases))


def lines_of(report_calls) -> list[str]:  # noqa: ANN001
    out: list[str] = []
    report = TerminalReport(lambda text="", **_: out.append(text))
    report_calls(report)
    return out


def test_a_long_reason_of_a_test_without_cases_has_no_stray_colon_line() -> None:
    long = "the decoder returned " + "x" * 200 + " where a delta was expected"
    failing = entry("a", CaseResult(entry="a", case="", status=FAIL, message=long))
    out = lines_of(lambda r: r.show(failing))
    assert all(line.strip() not in (":", "") for line in out), out
    named = entry("b", CaseResult(entry="b", case="crlf-1", status=FAIL, message=long))
    out = lines_of(lambda r: r.show(named))
    assert any(line.strip() == "case crlf-1:" for line in out), out


def test_a_difference_a_terminal_cannot_show_is_written_out() -> None:
    message = "first event: got '\\ufeffdata: hi', want 'data: hi'".encode().decode("unicode_escape")
    failing = entry("a", CaseResult(entry="a", case="", status=FAIL, message=message))
    out = "\n".join(lines_of(lambda r: r.show(failing)))
    assert "\\ufeff" in out and "\ufeff" not in out, out


def test_results_json_gives_task_ids_and_a_message_for_every_test_that_did_not_pass() -> None:
    passed = entry("a", CaseResult(entry="a", case="", status=PASS), task=2)
    failed = entry("b", CaseResult(entry="b", case="x", status=FAIL, message="got 1, want 2", where="calc.py:3"), task=3)
    blocked = entry("c", task=3)  # the catalog could not run: no case
    doc = results_json(CheckResult(entries=[passed, failed, blocked], problem="calc.py:1: syntax error"), {})
    tests = {t["name"]: t for t in doc["tests"]}
    assert [t.get("task_id") for t in doc["tests"]] == [2, 3, 3]
    assert "message" not in tests["test_a"]
    assert tests["test_b"]["message"] == "case x: got 1, want 2 (in your code at calc.py:3)"
    assert tests["test_c"]["status"] == "error" and tests["test_c"]["message"] == "calc.py:1: syntax error"
    long = entry("d", CaseResult(entry="d", case="", status=PASS, output="y" * 900))
    kept = results_json(CheckResult(entries=[long]), {})["tests"][0]["output"]
    assert len(kept) == 500 and kept.endswith("`course check -v` shows the rest]"), kept


def test_junit_xml_is_well_formed_whatever_was_printed_and_carries_the_output(tmp_path) -> None:  # noqa: ANN001
    nasty = "\x1b[31mred\x1b[0m and a bell \x07, a NUL \x00, form feed \x0c and \ufffe"
    failed = entry("a", CaseResult(entry="a", case="", status=FAIL, message=nasty, details="Traceback\n" + nasty,
                                   output="printed " + nasty))
    errored = entry("b", CaseResult(entry="b", case="", status=ERROR, message="boom"))
    passed = entry("c", CaseResult(entry="c", case="", status=PASS, output="fine\n"))
    path = tmp_path / "junit.xml"
    write_junit(path, junit_xml(CheckResult(entries=[failed, errored, passed]), "ag01"))
    root = ET.parse(path).getroot()  # expat refuses what is not well-formed
    cases = {c.get("name"): c for c in root.iter("testcase")}
    failure = cases["test_a"].find("failure")
    assert failure.get("message") == "red and a bell \\x07, a NUL \\x00, form feed \\x0c and \\ufffe", failure.get("message")
    assert "\x1b" not in path.read_text() and "Traceback" in failure.text
    assert cases["test_a"].find("system-out").text.startswith("printed red and a bell")
    assert cases["test_c"].find("system-out").text == "fine\n", "a passing test's output is carried too"
    assert cases["test_b"].find("error").get("message") == "boom"
    assert root.get("failures") == "1" and root.get("errors") == "1"


def test_a_diff_line_that_differs_only_in_what_a_terminal_hides_shows_the_difference(tmp_path) -> None:  # noqa: ANN001
    from course.diffing import diff_files

    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    for root in (ours, theirs):
        root.mkdir()
    (ours / "calc.py").write_text("\ufeff# calc\ndef add(a, b):  \n    return a\u00a0+ b\n", encoding="utf-8")
    (theirs / "calc.py").write_text("# calc\ndef add(a, b):\n    return a + b\n", encoding="utf-8")
    out: list[str] = []
    diff_files(ours, theirs, ("calc.py",), echo=out.append, color=False)
    changed = [line for line in out if line[:1] in "+-" and not line.startswith(("+++", "---"))]
    removed = [line[1:] for line in changed if line.startswith("-")]
    added = [line[1:] for line in changed if line.startswith("+")]
    assert removed[0] == "\\ufeff# calc" and added[0] == "# calc", changed
    assert removed[1] == "def·add(a,·b):··" and added[1] == "def·add(a,·b):", "trailing spaces drawn"
    assert removed[2] == "    return a\\xa0+ b", changed
    assert all(ours != theirs for ours, theirs in zip(removed, added)), "no pair of sides looks the same"

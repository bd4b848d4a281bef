"""The harness's vocabulary, tested in-process: learner regions, -k selection, the error tree, and the
command line's usage errors (click's CliRunner, no subprocess)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import SYN
from course import content, errors, regions, selection
from course.cli import cli

# --- learner regions ------------------------------------------------------------------------------

MARKED = """\
def add(a, b):
    # course: begin add
    return a + b
    # course: end add

func Total() int {
\t// course: begin Total
\treturn 0
\t// course: end Total
}
"""


def test_regions_are_found_in_python_and_go_comments() -> None:
    found = regions.regions(MARKED, "f")
    assert [(r.name, r.line, r.body) for r in found] == [("add", 2, "    return a + b\n"), ("Total", 7, "\treturn 0\n")]
    assert "course:" not in regions.strip(MARKED)
    assert regions.strip(MARKED).count("return") == 2


def test_a_stub_is_the_reference_with_each_region_replaced() -> None:
    stub = regions.fill(MARKED, {"add": "    raise NotImplementedError\n", "Total": "\tpanic(\"TODO\")\n"}, "f")
    assert stub == MARKED.replace("    # course: begin add\n    return a + b\n    # course: end add\n",
                                  "    raise NotImplementedError\n").replace(
        "\t// course: begin Total\n\treturn 0\n\t// course: end Total\n", "\tpanic(\"TODO\")\n")


@pytest.mark.parametrize(("text", "message"), [
    ("# course: begin a\n# course: begin b\n# course: end b\n# course: end a\n", "f:2: region 'b' begins inside region 'a'"),
    ("# course: begin a\nx\n", "f:1: region 'a' is never ended"),
    ("# course: end a\n", "f:1: `end a` does not close an open region"),
    ("# course: begin a\n# course: end a\n# course: begin a\n# course: end a\n", "f:3: region 'a' appears twice"),
    ("# course: begin 9a\n# course: end 9a\n", "f:1: a region marker needs a name"),
    ("# course: begin a\n", "f:1: region 'a' is never ended"),
])
def test_malformed_markers_are_one_error_at_their_line(text: str, message: str) -> None:
    with pytest.raises(errors.ManifestError) as raised:
        regions.split(text, "f")
    assert raised.value.message.startswith(message), raised.value.message


def test_a_region_without_a_block_is_named() -> None:
    with pytest.raises(errors.ManifestError, match="f:2: region 'add' has no block in the starter"):
        regions.fill(MARKED, {"Total": ""}, "f")


# --- -k selection ---------------------------------------------------------------------------------

TESTS = {"add": ("add", "test_add"), "add_cases": ("add_cases", "test_add_cases"),
         "total": ("total", "test_total"), "sse_large_event": ("sse_large_event", "TestSSELargeEvent")}


@pytest.mark.parametrize(("expression", "chosen"), [
    ("", ["add", "add_cases", "total", "sse_large_event"]),
    ("add", ["add", "add_cases"]),
    ("ADD and not cases", ["add"]),
    ("total or large", ["total", "sse_large_event"]),
    ("not (add or total)", ["sse_large_event"]),
    ("TestSSE", ["sse_large_event"]),
    ("nothing", []),
])
def test_k_matches_catalog_and_language_names(expression: str, chosen: list[str]) -> None:
    assert selection.select(expression, TESTS) == chosen


@pytest.mark.parametrize("expression", ["bad(((", "add and", "or add", "(add", "add)", "not", "a $ b"])
def test_a_malformed_k_is_a_usage_error(expression: str) -> None:
    with pytest.raises(errors.BadSelection, match="is not a valid test selection") as raised:
        selection.select(expression, TESTS)
    assert raised.value.exit_code == 2


# --- the error tree -------------------------------------------------------------------------------


def test_every_error_carries_its_exit_code_and_shows_itself_in_one_place() -> None:
    codes = {errors.UsageError: 2, errors.UnknownChapter: 2, errors.UnknownLanguage: 2, errors.NoLearnerRepo: 2,
             errors.ChapterNotStarted: 2, errors.BadSelection: 2, errors.ToolMissing: 2, errors.ManifestError: 2,
             errors.Refused: 1, errors.BaselineFailed: 1, errors.StaleMutant: 1, errors.Stopped: 130}
    for kind, code in codes.items():
        assert issubclass(kind, errors.CourseError) and kind("x").exit_code == code, kind
    out = io.StringIO()
    errors.UnknownChapter("unknown chapter 'zz'", detail="the chapters: a, b").show(out)
    assert out.getvalue() == "course: unknown chapter 'zz'\nthe chapters: a, b\n"


# --- usage errors, in-process ---------------------------------------------------------------------


@pytest.fixture
def synthetic_content(content: Path, monkeypatch: pytest.MonkeyPatch):  # noqa: ANN201
    monkeypatch.setenv("COURSE_CONTENT", str(content))
    content_root_cache_clear()
    yield content
    monkeypatch.delenv("COURSE_CONTENT")
    content_root_cache_clear()


def content_root_cache_clear() -> None:
    from course import chapters

    content.root.cache_clear()
    chapters.load_all.cache_clear()


def invoke(*args: str, cwd: Path):  # noqa: ANN201
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(cwd)
        return CliRunner().invoke(cli, list(args), standalone_mode=False, catch_exceptions=True)


def test_an_unknown_chapter_is_the_harness_error_not_clicks(synthetic_content: Path, tmp_path: Path) -> None:
    result = invoke("tests", "zz99", cwd=tmp_path)
    assert isinstance(result.exception, errors.UnknownChapter), result.exception
    assert result.exception.exit_code == 2 and f"the chapters are: {SYN}" in result.exception.message


@pytest.mark.parametrize("args", [
    ("check", "--timeout", "-3"), ("tests", SYN, "--language", "cobol"), ("mutants", SYN, "--jobs", "0"),
    ("start",), ("verify", SYN, "--seed", "x"),
])
def test_bad_options_are_clicks_usage_errors(synthetic_content: Path, tmp_path: Path, args: tuple[str, ...]) -> None:
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code == 2, (args, result.output)
    assert "Traceback" not in result.output


def test_the_language_option_lists_the_languages_with_an_adapter(synthetic_content: Path) -> None:
    result = CliRunner().invoke(cli, ["tests", SYN, "--language", "cobol"])
    from course.languages import ADAPTERS

    assert "'cobol' is not" in result.output and all(f"'{name}'" in result.output for name in ADAPTERS), result.output


def test_broad_with_options_that_choose_documented_mutants_is_refused(synthetic_content: Path, tmp_path: Path) -> None:
    result = invoke("mutants", SYN, "--broad", "--only", "m1", cwd=tmp_path)
    assert isinstance(result.exception, errors.UsageError) and "--only and --jobs" in result.exception.message

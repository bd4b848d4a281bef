"""The adapter contract (course.languages.protocol): every registered adapter keeps it, the contract's
own check can fail, optional capabilities are found only where declared, and a new language joins the
harness by the steps CONTRIBUTING.md gives ("Adding a language"), followed here with the scripted
adapter the package ships."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from course import languages
from course.errors import UsageError
from course.languages.protocol import (
    CAPABILITIES,
    BroadMutation,
    CaseFinished,
    Collected,
    CommentBlindDiff,
    Demonstration,
    Ended,
    Finished,
    LearnerTests,
    contract_problems,
)
from course.languages.registry import ADAPTERS
from course.languages.scripted import ScriptedAdapter
from course.results import Status
from tiny import CHAPTER, tiny_scripted_chapter


@pytest.mark.parametrize("language", sorted(ADAPTERS))
def test_every_registered_adapter_keeps_the_contract(language: str) -> None:
    adapter = languages.get(language)
    assert contract_problems(adapter) == []
    assert adapter.name == language, "an adapter is registered under its own name"
    assert set(adapter.capabilities) <= set(CAPABILITIES)


def test_the_scripted_adapter_keeps_the_contract() -> None:
    assert contract_problems(ScriptedAdapter()) == []


def test_the_contract_check_names_what_an_adapter_lacks() -> None:
    @dataclass
    class Partial(ScriptedAdapter):
        def __post_init__(self) -> None:
            # a capability that is none of the protocol's, and one whose object lacks its methods
            self.capabilities = {str: self, LearnerTests: object()}

    class Bare:
        name = "bare"

    problems = contract_problems(Partial())
    assert any(p.startswith("capabilities: <class 'str'> is not one of") for p in problems), problems
    assert "capabilities: object offers LearnerTests without learner_tests, learner_tests_folder" in problems
    bare = contract_problems(Bare())
    assert "no prepare (required of every adapter)" in bare and "no capabilities (required of every adapter)" in bare
    assert "no name (required of every adapter)" not in bare


def test_a_capability_is_found_only_where_it_is_declared() -> None:
    adapter = ScriptedAdapter()
    assert languages.capability(adapter, CommentBlindDiff) is adapter
    assert languages.capability(adapter, LearnerTests) is None
    assert languages.capability(adapter, BroadMutation) is None
    # a method of the right name is not an offer: only the declaration counts
    assert languages.capability(adapter, Demonstration) is None


# --- a new language, step by step (CONTRIBUTING.md, "Adding a language") ---------------------------


@contextlib.contextmanager
def registered(monkeypatch: pytest.MonkeyPatch, content: Path) -> Iterator[None]:
    """Step 2: the language registered (one line in ADAPTERS), the course's content in `content`."""
    from course import chapters
    from course import content as course_content

    monkeypatch.setitem(ADAPTERS, "scripted", "course.languages.scripted:ScriptedAdapter")
    monkeypatch.setattr(languages, "_loaded", {})
    monkeypatch.setenv("COURSE_CONTENT", str(content))
    course_content.root.cache_clear()
    chapters.load_all.cache_clear()
    try:
        yield
    finally:
        course_content.root.cache_clear()
        chapters.load_all.cache_clear()


def test_a_new_language_joins_by_the_documented_steps(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from course import chapters, content
    from course.check import run_check
    from course.selftest import tests_folder
    from course.verify import manifest_problems

    # 1. The adapter: every required member (course/languages/scripted.py is the template).
    assert contract_problems(ScriptedAdapter()) == []
    # 5. A chapter's track in the language: its manifest section, reference, starter and catalog.
    root = tiny_scripted_chapter(tmp_path / "content", ["adds", "totals"])
    with registered(monkeypatch, root):
        # 2. Registered, it is found by name, and a package build carries its folders.
        adapter = languages.get("scripted")
        assert isinstance(adapter, ScriptedAdapter)
        assert f"reference/scripted/{CHAPTER}/calc.txt" in content.packaged_files(root, ADAPTERS)
        chapter = chapters.get(CHAPTER)
        track = chapter.track("scripted")
        # 3. Its capabilities: what it declares is offered, the rest is refused in one line.
        assert languages.capability(adapter, CommentBlindDiff) is adapter
        with pytest.raises(UsageError):
            tests_folder(track, tmp_path)
        # 4. The track is sound as far as the manifest goes: files, catalog, stated_in.
        assert manifest_problems(chapter, track) == []
        assert sorted(adapter.test_sources(track)) == ["adds", "totals"]
        # 6. A check goes through the shared runner: every catalog test reported, in catalog order.
        passed = run_check(chapter, track, track.reference)
        assert passed.ok and [e.test_name for e in passed.entries] == ["adds", "totals"]

        def totals_fails(cases):  # noqa: ANN001, ANN202
            return [Collected(tuple(cases), starts_said=False), CaseFinished(cases[0].key, Status.PASS),
                    CaseFinished(cases[1].key, Status.FAIL, message="totals is one too high"), Finished()], Ended(0)

        adapter.scripts.append(totals_fails)
        failed = run_check(chapter, track, track.reference)
        assert failed.failing == {"totals"}
        assert failed.entries[1].failures[0].message == "totals is one too high"

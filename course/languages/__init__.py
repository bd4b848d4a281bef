"""One small adapter per language: how its tests are named, how its catalog runs, how a script runs.

Adding a language adds a module here and one line to ADAPTERS; the CLI never branches on language.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Protocol

from course.chapters import Track
from course.check.results import CaseResult, RunOutcome
from course.errors import UsageError


class Adapter(Protocol):
    name: str

    def test_name(self, entry: str) -> str:
        """The catalog entry's name in this language ('hand_example' -> 'test_hand_example')."""

    def run_catalog(
        self,
        track: Track,
        code_root: Path,
        names: list[str],
        *,
        timeout: float,
        select: str = "",
        on_case: Callable[[CaseResult], None] | None = None,
        scratch: Path | None = None,
        shuffle: int | None = None,
        coverage: bool = False,
    ) -> RunOutcome:
        """Run the named tests against the code in code_root: the cases, and what stopped the run
        before the tests, if anything. `scratch` is a folder the run may fill with build
        products (removed by the caller); without it, the adapter uses the user's cache.
        `shuffle`, a seed, runs the cases in an order drawn from it instead of the catalog's;
        `coverage` measures which lines and branches of the track's files the run executed."""

    def test_sources(self, track: Track) -> dict[str, str]:
        """Each catalog test's source, by its name in this language."""

    def catalog_problems(self, track: Track) -> list[str]:
        """What in the catalog's files would make its failures unreadable or its run unsound."""

    def has_docstring(self, source: str, symbol: str) -> bool:
        """Whether the source defines `symbol` ('EventReader.feed'; '' for the file itself) with
        documentation a learner reads."""

    def exclusion_problems(self, track: Track) -> list[str]:
        """Lines of the reference left out of its coverage without a reason written beside them."""

    def run_script(self, track: Track, code_root: Path, script: Path, args: list[str]) -> int:
        """Run one of the chapter's scripts with the code under test importable; its exit code."""


def get(language: str) -> Adapter:
    if language == "python":
        from course.languages.python import PythonAdapter

        return PythonAdapter()
    raise UsageError(f"no adapter for language {language!r}")

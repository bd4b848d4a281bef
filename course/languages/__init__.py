"""The languages: one adapter per language, each in its own package (course.languages.<language>),
the boundary they implement in course.languages.protocol, their names in course.languages.registry.

Adding a language adds a package here and one line to ADAPTERS (course.languages.registry); neither
the commands nor the harness core branch on language: they ask the adapter (`get`), and ask it for
an optional capability (`capability`) where only some languages offer one. Adapters are imported
only when used, so `course --help` stays fast.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, TypeVar

from course.errors import UnknownLanguage
from course.languages.registry import ADAPTERS, DEFAULT_LANGUAGE, EARLY

if TYPE_CHECKING:
    from course.languages.protocol import Adapter

__all__ = ["ADAPTERS", "DEFAULT_LANGUAGE", "capability", "get", "settle_early", "start_early"]

Kind = TypeVar("Kind")
_loaded: dict[str, "Adapter"] = {}
_early: dict[str, object] = {}


def get(language: str) -> "Adapter":
    if language not in _loaded:
        if language not in ADAPTERS:
            raise UnknownLanguage(f"no adapter for language {language!r}; the languages are: {', '.join(ADAPTERS)}")
        module, _, cls = ADAPTERS[language].partition(":")
        _loaded[language] = getattr(importlib.import_module(module), cls)()  # the adapter class the registry names
    return _loaded[language]


def capability(adapter: "Adapter", kind: type[Kind]) -> Kind | None:
    """The object through which `adapter` offers the optional capability `kind` (a class of
    course.languages.protocol: LearnerTests, BroadMutation, CommentBlindDiff, Demonstration), or
    None when its language does not offer it: what the adapter declares, never a guess from its attributes."""
    return adapter.capabilities.get(kind)  # type: ignore[return-value]


def start_early(workers: int) -> None:
    for language, module in EARLY.items():
        _early[language] = importlib.import_module(module)
        _early[language].start(workers)  # type: ignore[attr-defined]


def settle_early(language: str) -> None:
    """The run's language is known: stop what other languages started early."""
    for other in [name for name in _early if name != language]:
        _early.pop(other).stop()  # type: ignore[attr-defined]

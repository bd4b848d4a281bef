"""One adapter per language, each in its own module; the boundary they implement is
course.languages.protocol.

Adding a language adds a package here and one line to ADAPTERS; neither the CLI nor the harness core
branches on language. Adapters are imported only when used, so `course --help` stays fast.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from course.errors import UnknownLanguage

if TYPE_CHECKING:
    from course.languages.protocol import Adapter

# language -> "module:class" of its adapter
ADAPTERS: dict[str, str] = {
    "python": "course.languages.python.adapter:PythonAdapter",
    "go": "course.languages.go.adapter:GoAdapter",
    "typescript": "course.languages.typescript.adapter:TypeScriptAdapter",
}

_loaded: dict[str, "Adapter"] = {}

# Languages whose test processes can start getting ready before a command has read its chapter:
# module with start(workers) and stop(). A command that runs one check a person waits for starts
# them as it begins (the cost: one core's work for a fraction of a second); once the chapter's
# track is known, those of other languages are stopped.
EARLY: dict[str, str] = {"python": "course.languages.python.zygote"}
_early: dict[str, object] = {}


def get(language: str) -> "Adapter":
    if language not in _loaded:
        if language not in ADAPTERS:
            raise UnknownLanguage(f"no adapter for language {language!r}; the languages are: {', '.join(ADAPTERS)}")
        module, _, cls = ADAPTERS[language].partition(":")
        _loaded[language] = getattr(importlib.import_module(module), cls)()
    return _loaded[language]


def start_early(workers: int) -> None:
    for language, module in EARLY.items():
        _early[language] = importlib.import_module(module)
        _early[language].start(workers)  # type: ignore[attr-defined]


def settle_early(language: str) -> None:
    """The run's language is known: stop what other languages started early."""
    for other in [name for name in _early if name != language]:
        _early.pop(other).stop()  # type: ignore[attr-defined]

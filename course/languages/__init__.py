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
    "python": "course.languages.python:PythonAdapter",
    "go": "course.languages.go:GoAdapter",
}

_loaded: dict[str, "Adapter"] = {}


def get(language: str) -> "Adapter":
    if language not in _loaded:
        if language not in ADAPTERS:
            raise UnknownLanguage(f"no adapter for language {language!r}; the languages are: {', '.join(ADAPTERS)}")
        module, _, cls = ADAPTERS[language].partition(":")
        _loaded[language] = getattr(importlib.import_module(module), cls)()
    return _loaded[language]

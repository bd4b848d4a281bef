"""What the harness starts for a catalog run when a track asks for it (`services:` in its manifest
section), and the environment variables that tell the catalog where to find it.

A service is started once per run, before the first worker, and stopped after the last, so a catalog
in any language reaches it the same way: through the environment, never by importing the harness.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Callable, ContextManager, Iterator

from course.errors import UsageError
from course.languages.protocol import FAKE_MODEL_VAR


@contextmanager
def _fake_model() -> Iterator[dict[str, str]]:
    from course.fake_model import FakeModel

    with FakeModel() as model:
        yield {FAKE_MODEL_VAR: model.base_url}


SERVICES: dict[str, Callable[[], ContextManager[dict[str, str]]]] = {"fake-model": _fake_model}


def start(name: str) -> ContextManager[dict[str, str]]:
    """Start a service for the length of a `with` block; it yields the variables to set."""
    try:
        return SERVICES[name]()
    except KeyError:
        raise UsageError(f"no service {name!r}; the services are: {', '.join(SERVICES)}") from None

"""The run's environment: what the harness starts for a catalog run when a track asks for it
(`services:` in its manifest section), and the variables that tell the catalog where to find it and
its fixtures and scratch folder (course.environment names them).

A service is started once per run, before the first worker, and stopped after the last, so a catalog
in any language reaches it the same way: through the environment, never by importing the harness.
"""

from __future__ import annotations

import tempfile
from contextlib import ExitStack, contextmanager
from typing import TYPE_CHECKING, Callable, ContextManager, Iterator

from course import content
from course.environment import FAKE_MODEL_VAR, FIXTURES_VAR, SCRATCH_VAR
from course.errors import UsageError

if TYPE_CHECKING:
    from course.chapters import Track


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


@contextmanager
def environment(track: Track) -> Iterator[dict[str, str]]:
    """What a catalog (or a chapter's script) receives from the harness, for the length of a block:
    its fixtures folder, a fresh scratch folder, the services its track lists."""
    with ExitStack() as stack:
        scratch = stack.enter_context(tempfile.TemporaryDirectory(prefix="course-scratch-"))
        env = {FIXTURES_VAR: str(content.fixtures_dir(track.chapter_id)), SCRATCH_VAR: scratch}
        for name in track.services:
            env.update(stack.enter_context(start(name)))
        yield env

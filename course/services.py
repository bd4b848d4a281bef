"""The run's environment: what the harness starts for a catalog run when a track asks for it
(`services:` in its manifest section), and the variables that tell the catalog where to find it and
its fixtures and scratch folder (course.environment names them).

A service is started once per run, before the first worker, and stopped after the last, so a catalog
in any language reaches it the same way: through the environment, never by importing the harness.
A language whose workers can host a service themselves says so (the WorkerServices capability): each
of its workers then starts its own (start, below) and the run starts none; the catalog sees no
difference but speed.
"""

from __future__ import annotations

import importlib
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
# What starting a service imports: a worker that will host it imports it while it gets ready.
MODULES: dict[str, str] = {"fake-model": "course.fake_model"}


def load(name: str) -> None:
    """Import what starting service `name` needs, ahead of starting it (nothing for an unknown name:
    start says what is wrong with it)."""
    if name in MODULES:
        importlib.import_module(MODULES[name])


def start(name: str) -> ContextManager[dict[str, str]]:
    """Start a service for the length of a `with` block; it yields the variables to set."""
    try:
        return SERVICES[name]()
    except KeyError:
        raise UsageError(f"no service {name!r}; the services are: {', '.join(SERVICES)}") from None


@contextmanager
def environment(track: Track, *, in_workers: frozenset[str] = frozenset()) -> Iterator[dict[str, str]]:
    """What a catalog (or a chapter's script) receives from the harness, for the length of a block:
    its fixtures folder, a fresh scratch folder, the services its track lists (but those named in
    `in_workers`: the run's workers start their own)."""
    with ExitStack() as stack:
        scratch = stack.enter_context(tempfile.TemporaryDirectory(prefix="course-scratch-"))
        env = {FIXTURES_VAR: str(content.fixtures_dir(track.chapter_id)), SCRATCH_VAR: scratch}
        for name in track.services:
            if name not in in_workers:
                env.update(stack.enter_context(start(name)))
        yield env

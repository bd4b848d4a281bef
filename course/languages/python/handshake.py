"""The start-up handshake between a Python worker and the process that starts it (the harness, the
zygote or the fork server), kept apart so that each side imports it and neither imports the other.

Before it is forked, a worker's parent imports what every worker needs (`warm`, the modules of
PRELOAD); the worker then sets itself up as far as it can without the code under test, says WAITING
on its events pipe, and waits for its run's spec on its orders pipe, which the harness writes whole
at once (PIPE_TAKES_AT_ONCE) so that it never blocks on a worker still busy setting up.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

# Imported once by the fork server. Never the code under test: only the harness's side of a run (the
# fake model included: a worker hosts it for a track that lists it) and standard-library modules
# that chapter code commonly imports.
PRELOAD = ["course.languages.python.worker", "course.fake_model", "http.client", "json", "dataclasses",
           "enum", "contextvars", "codecs", "urllib.parse", "concurrent.futures",
           "course.languages.python.preload"]
# Said by a worker once it is set up and waits for its run's spec (not an event: the runner never sees it).
WAITING = b"waiting"
# A pipe holds 64 KiB on Linux (4 KiB is the least POSIX promises for one atomic write): a run's
# spec is a few KiB unless thousands of cases are skipped.
PIPE_TAKES_AT_ONCE = 60_000


def warm() -> None:
    """Import what every worker needs into this process, so that the workers it forks start warm."""
    import importlib

    with collector_paused():
        for name in PRELOAD:
            importlib.import_module(name)


@contextmanager
def collector_paused() -> Iterator[None]:
    """The garbage collector off for a block that only builds what lives on (imports, pytest's set-up):
    its collections there find nothing to free, and cost a tenth of the block's time."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()

"""Imported last by the fork server (or by a harness that forks its workers itself), after the
modules it preloads.

It imports the pytest plugins a worker runs (each worker would otherwise import them anew; those
the worker turns off for catalogs are left out), resolves what a worker calls to die with its parent, then
freezes everything allocated so far: the garbage collector skips frozen objects, so the workers'
collections stay small and their memory pages stay shared (the usual pre-fork server practice).
"""

import gc
import importlib

from _pytest.config import default_plugins

from course import processes
from course.languages.python.worker import UNUSED_BY_CATALOGS, UNUSED_PLUGINS

for name in default_plugins:
    if name in UNUSED_PLUGINS or name in UNUSED_BY_CATALOGS:
        continue
    try:
        importlib.import_module(f"_pytest.{name}")
    except ImportError:  # a plugin this pytest version lists but does not ship
        pass

processes.resolve_ahead()
gc.freeze()

"""Imported last by the fork server, after the modules it preloads.

It imports pytest's built-in plugins (each worker would otherwise import them anew), then freezes
everything allocated so far: the garbage collector skips frozen objects, so the workers' collections
stay small and their memory pages stay shared (the usual pre-fork server practice).
"""

import gc
import importlib

from _pytest.config import default_plugins

for name in default_plugins:
    try:
        importlib.import_module(f"_pytest.{name}")
    except ImportError:  # a plugin this pytest version lists but does not ship
        pass

gc.freeze()

"""Imported last by the fork server, after the modules it preloads: freezes what they allocated.

Every worker is forked from the server; frozen objects are skipped by the garbage collector, so the
workers' collections stay small and their pages stay shared (the usual pre-fork server practice).
"""

import gc

gc.freeze()

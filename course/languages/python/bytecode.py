"""The learner's files compiled ahead of the run, into the harness's cache, checked by content.

Python's own cached bytecode is trusted while the source's size and modification time, in whole
seconds, are unchanged: two saves of the same length within one second (a digit changed, and
changed back) would leave the second run testing the first version. A watch loop that answers in
a fraction of a second makes that likely. So every file of the code under test is compiled here
into a cache entry that records a hash of the source instead (PEP 552, "checked"): the import in
the worker hashes the file as it is and recompiles it if it differs. Compiling here is also the
syntax check that gives a learner one line; an unchanged file is neither compiled nor written again.
"""

from __future__ import annotations

import contextlib
import importlib.util
import marshal
import os
import tempfile
from pathlib import Path

CHECKED_HASH = 0b11  # the header's flags: hash-based, and checked against the source at import


def cache_path(prefix: Path, source: Path) -> Path:
    """Where an import finds the compiled `source` when sys.pycache_prefix is `prefix`."""
    name = Path(importlib.util.cache_from_source(str(source))).name
    return prefix / str(source.parent).lstrip(os.sep) / name


def header(source: bytes) -> bytes:
    return importlib.util.MAGIC_NUMBER + CHECKED_HASH.to_bytes(4, "little") + importlib.util.source_hash(source)


def compile_checked(source_path: Path, prefix: Path | None) -> None:
    """Compile the file (SyntaxError, ValueError for null bytes) and, with a prefix, cache it
    checked by content; a cache entry already made for this exact source is left alone."""
    source = source_path.read_bytes()
    target = cache_path(prefix, source_path) if prefix is not None else None
    wanted = header(source)
    if target is not None:
        try:
            with open(target, "rb") as cached:
                if cached.read(len(wanted)) == wanted:
                    return
        except OSError:
            pass
    code = compile(source, str(source_path), "exec", dont_inherit=True)
    if target is None:
        return
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        descriptor, temporary = tempfile.mkstemp(dir=target.parent, prefix=target.name)
    except OSError:  # a cache that cannot be written: the import compiles the file itself
        return
    try:
        with os.fdopen(descriptor, "wb") as out:
            out.write(wanted + marshal.dumps(code))
        os.replace(temporary, target)  # whole or not at all: another run may be reading it
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(temporary)

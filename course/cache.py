"""The user's cache folder: what course keeps between runs to be faster, and never needs.

Everything in it is derived from files the course ships or the learner wrote, keyed by their content,
so a stale entry is never used and the folder may be deleted at any time.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any


def folder() -> Path:
    """$XDG_CACHE_HOME/course, or ~/.cache/course."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "course"


def read_json(path: Path) -> Any:
    """What `path` holds, or None when it is absent or unreadable (a cache miss, never an error)."""
    try:
        return json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None


def write_json(path: Path, value: Any) -> None:
    """Write `value` to `path` whole or not at all (a run stopped mid-write leaves no half file,
    and two runs writing at once each leave a complete one). A cache that cannot be written is
    skipped: a read-only home only makes the next run slower."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", encoding="utf-8", dir=path.parent, prefix=f".{path.name}.",
                                         delete=False) as out:
            json.dump(value, out)
        os.replace(out.name, path)
    except OSError:
        try:
            os.unlink(out.name)
        except (NameError, OSError):
            pass

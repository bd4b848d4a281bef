"""The user's cache folder: what course keeps between runs to be faster, and never needs.

Everything in it is derived from files the course ships or the learner wrote, keyed by their content,
so a stale entry is never used and the folder may be deleted at any time.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any, Callable


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


def parsed(kind: str, data: bytes, parse: Callable[[bytes], Any]) -> Any:
    """parse(data), kept under `kind` as JSON keyed by the bytes' digest: reading JSON back costs a
    fraction of building the data from YAML again, and changed bytes are parsed anew. What JSON
    cannot say exactly (YAML dates, number keys) is never kept, so it is parsed every time. Whatever
    `parse` raises reaches the caller, and nothing is kept."""
    kept = folder() / kind / f"{hashlib.sha256(data).hexdigest()}.json"
    value = read_json(kept)
    if value is not None:
        return value
    value = parse(data)
    try:
        same = json.loads(json.dumps(value)) == value
    except (TypeError, ValueError):
        same = False
    if same:
        write_json(kept, value)
    return value

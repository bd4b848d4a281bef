"""The user's cache folder: what course keeps between runs to be faster, and never needs.

Everything in it is derived from files the course ships or the learner wrote, keyed by their content,
so a stale entry is never used and the folder may be deleted at any time.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import threading
from pathlib import Path
from typing import Any, Callable


# Names the course's cache folder itself (the sandbox gives each run a private, writable one, while the
# user's cache folder, where other tools keep theirs, stays readable and unchanged).
VARIABLE = "COURSE_CACHE"


def folder() -> Path:
    """$COURSE_CACHE, or $XDG_CACHE_HOME/course, or ~/.cache/course."""
    if os.environ.get(VARIABLE):
        return Path(os.environ[VARIABLE])
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
    _write_text(path, json.dumps(value))


def _write_text(path: Path, text: str) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", encoding="utf-8", dir=path.parent, prefix=f".{path.name}.",
                                         delete=False) as out:
            out.write(text)
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


class Memo:
    """Answers kept between runs in one append-only file of JSON lines, each `[key, value]`.

    Made for many small answers looked up by processes that each start cold (every worker of a
    check): the file is read once, at the first lookup, and a new answer costs one appended line.
    Several processes append at once without a lock: each line goes out in one write to a file opened
    for appending, so lines never interleave, and a line torn or garbled any other way is skipped, a
    miss. When a line is unreadable or the file holds more than `limit` lines, the next load writes it
    again whole, newest answers last, at most `limit` of them; an answer another process appended
    meanwhile may be lost: a miss again, never a wrong answer. A folder holds at most `files` memos,
    the most recently started (the others belong to content that has changed)."""

    def __init__(self, path: Path, limit: int, files: int = 8) -> None:
        self.path = path
        self.limit = limit
        self.files = files
        self.answers: dict[str, Any] | None = None  # loaded at the first lookup, oldest first
        self.lock = threading.Lock()  # lookups come from every connection's thread

    def get(self, key: str, default: Any = None) -> Any:
        with self.lock:
            if self.answers is None:
                self.answers = self._load()
            return self.answers.get(key, default)

    def put(self, key: str, value: Any) -> None:
        """Keep `value` for `key`, here and in the file (when the file cannot be written, here only)."""
        line = (json.dumps([key, value], separators=(",", ":")) + "\n").encode()
        with self.lock:
            if self.answers is None:
                self.answers = self._load()
            self.answers[key] = value
            while len(self.answers) > self.limit:
                del self.answers[next(iter(self.answers))]  # the oldest
            try:
                if not self.path.exists():
                    self._make_room()
                fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
                try:
                    os.write(fd, line)
                finally:
                    os.close(fd)
            except OSError:  # a read-only cache: answers are found again next time
                pass

    def _load(self) -> dict[str, Any]:
        try:
            lines = self.path.read_bytes().split(b"\n")
        except OSError:
            return {}
        lines.pop()  # after the last newline: nothing, or a line another process is writing now
        answers: dict[str, Any] = {}
        damaged = False
        for line in lines:
            try:
                key, value = json.loads(line)
            except (ValueError, TypeError):
                damaged = True
                continue
            if not isinstance(key, str):
                damaged = True
                continue
            answers.pop(key, None)  # the last line for a key is its newest: it goes last
            answers[key] = value
        if damaged or len(lines) > self.limit:
            answers = dict(list(answers.items())[-self.limit:])
            text = "".join(json.dumps([k, v], separators=(",", ":")) + "\n" for k, v in answers.items())
            _write_text(self.path, text)
        return answers

    def _make_room(self) -> None:
        """Before a new memo file: the folder's oldest ones go, so that `files` remain with it."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            others = sorted(self.path.parent.glob("*" + self.path.suffix), key=lambda p: p.stat().st_mtime)
        except OSError:  # a file removed while looking: the next new memo makes room
            return
        for old in others[: max(0, len(others) - self.files + 1)]:
            try:
                old.unlink()
            except OSError:
                pass

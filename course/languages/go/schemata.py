"""Mutant schemata for the Go track: the catalog built once for all of a track's documented mutants.

A Go mutant costs a build: its package, the catalog's test package that imports it, and a link,
about a second of CPU however small the change. So the first mutant build of a run (a copy built
as its origin, see build.build) builds a schema instead: each file that mutants change, with every
mutant's version of each function it changes beside the original's, chosen at run time by the
mutant's id in an environment variable (the schematool command beside this file writes them). Each
copy the run says holds one documented mutant (RunRequest.mutant) then runs that binary with its id;
any other copy (a mutant that changes a type or a signature, a bug that is not documented) is built
on its own as before. The dispatch sits on the line of each function's opening brace and a mutant's
function keeps its own file's lines (//line), so failures are placed as in the mutant's own build.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import tempfile
import threading
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from course import processes
from course.chapters import Track
from course.errors import StaleMutant
from course.languages.go import toolchain
from course.mutant import apply

VARIABLE = "COURSE_GO_MUTANT"  # the environment variable that chooses a mutant in a schema binary
DISPATCH = "courseMutant__"  # the Go variable that holds it, one per package with mutants
TOOL = Path(__file__).with_name("schematool") / "main.go"


@dataclass
class Schema:
    """The overlay entries that turn the origin into the schema, and the ids of the mutants it holds."""

    replace: dict[str, str]
    mutants: set[str]
    binaries: dict[str, Path] = field(default_factory=dict)  # package -> the schema's test binary


_lock = threading.Lock()
_known: dict[tuple[str, ...], "_Slot"] = {}


class _Slot:
    """One schema's place in this process: made once, by the first build that needs it."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.done = False
        self.schema: Schema | None = None


def slot(track: Track, origin: Path) -> _Slot:
    key = (str(origin.resolve()), str(track.tests.resolve()), *(m.id for m in track.mutants))
    with _lock:
        return _known.setdefault(key, _Slot())


def plan(track: Track, origin: Path, into: Path, *, tool: Path, env: dict[str, str]) -> Schema | None:
    """The schema of the track's mutants over `origin`, its files written in `into`; None when no
    mutant fits one (each then builds on its own)."""
    variants: dict[str, list[dict[str, str]]] = defaultdict(list)
    with tempfile.TemporaryDirectory(prefix="course-go-schema-") as tmp:
        for mutant in track.mutants:
            root = Path(tmp) / mutant.id
            source = origin / mutant.file
            if not source.is_file():
                continue
            (root / mutant.file).parent.mkdir(parents=True, exist_ok=True)
            (root / mutant.file).write_bytes(source.read_bytes())
            try:
                apply(mutant, root)
            except StaleMutant:
                continue  # said by its own run
            variants[mutant.file].append({"id": mutant.id, "text": (root / mutant.file).read_text(encoding="utf-8")})
    replace: dict[str, str] = {}
    mutants: set[str] = set()
    packages: dict[Path, str] = {}
    for name, versions in variants.items():
        original = origin / name
        request = {"path": str(original), "original": original.read_text(encoding="utf-8"), "variable": DISPATCH,
                   "variants": versions}
        processes.admit()  # not once the run is being stopped
        done = subprocess.run([str(tool)], input=json.dumps(request), capture_output=True, text=True, env=env,
                              check=False, timeout=120)
        if done.returncode != 0:
            continue  # a file the tool cannot read: its mutants build on their own
        answer = json.loads(done.stdout)
        held = [v for v in versions if v["id"] not in answer["unsupported"]]
        if not held:
            continue
        written = into / name
        written.parent.mkdir(parents=True, exist_ok=True)
        written.write_text(answer["text"], encoding="utf-8")
        replace[str(original)] = str(written)
        packages[original.parent] = answer["package"]
        mutants.update(v["id"] for v in held)
    if not mutants:
        return None
    for folder, package in packages.items():
        chooser = into / f"{hashlib.sha256(str(folder).encode()).hexdigest()[:12]}_dispatch.go"
        chooser.write_text(f'package {package}\n\nimport "os"\n\n// the documented mutant this run is, by its id ("" for none)\n'
                           f'var {DISPATCH} = os.Getenv("{VARIABLE}")\n', encoding="utf-8")
        replace[str(folder / "zz_course_mutant_dispatch.go")] = str(chooser)
    return Schema(replace, mutants)


def tool(cache: Path, build: Callable[[list[str], Path], int | None]) -> Path | None:
    """The schematool command, built once per version of its source into the user's cache; `build`
    runs a go command in a folder and gives its exit code."""
    go = toolchain.find().go
    digest = hashlib.sha256(TOOL.read_bytes() + go.encode()).hexdigest()[:16]
    binary = cache / "go-tools" / f"schematool-{digest}"
    if binary.is_file():
        return binary
    binary.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".schematool-", dir=binary.parent) as tmp:
        part = Path(tmp) / binary.name
        if build([go, "build", "-o", str(part), str(TOOL)], TOOL.parent) != 0 or not part.is_file():
            return None
        os.replace(part, binary)  # whole, or not at all: another run may be building it too
    return binary

"""The TypeScript adapter's prepare step: the learner's package and the catalog type-checked and
compiled together, without writing anything into the learner's tree.

The catalog is laid out as the package (tests/typescript/<id>/catalog/x.test.ts imports
../agent/types.js), so both are copied into one source folder in the build folder (the user's
cache), in their places, and compiled there into plain JavaScript with source maps, which node runs
and which map every failure back to a TypeScript file:line. The learner's own tests (their
package's test/ folder, what `course selftest` runs) are left out of a catalog build, and take the
catalog's place in theirs. The compiler options are the course's, whatever the learner's
tsconfig.json says: a verdict depends on their code, not on their settings.

A build that fails is one problem block: the learner's files at their file:line, or, when only the
tests fail to compile, the tests' lines. A compile whose inputs are all unchanged since the last
good one is skipped. A changed copy of another folder (a documented mutant) is compiled without
type checking: the catalog alone judges it.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from course import processes
from course.chapters import Track
from course.languages.typescript import toolchain

BUILD_LIMIT = 300.0
LEARNER_TESTS = "test"  # where a learner's own tests live in their package (and in a selftest build)

# The options every build uses (reference/typescript/<id>/ts/tsconfig.json gives learners the same
# for their editor). Comments are left out of the JavaScript, so coverage counts code lines only.
COMPILER_OPTIONS = {
    "target": "es2023",
    "lib": ["es2023"],
    "types": ["node"],
    "module": "nodenext",
    "moduleResolution": "nodenext",
    "strict": True,
    "noImplicitOverride": True,
    "noFallthroughCasesInSwitch": True,
    "isolatedModules": True,
    "skipLibCheck": True,
    "sourceMap": True,
    "removeComments": True,
    "noEmitOnError": True,
    "pretty": False,
    "newLine": "lf",
}

_DIAGNOSTIC = re.compile(r"^(?P<path>[^\s(][^(]*)\((?P<line>\d+),(?P<column>\d+)\): error (?P<code>TS\d+): (?P<text>.*)$")


@dataclass
class Built:
    """What start() needs: the compiled package, its test files, and how to name the sources."""

    source: Path  # the folder the sources were compiled from (the paths in stack traces)
    out: Path  # the compiled JavaScript, laid out as the package
    tests: list[Path]  # the compiled test files, in file order
    package: str  # the package's folder in the code under test ("ts"), for showing a learner's files
    theirs: set[str] = field(default_factory=set)  # source paths (relative) that are the tests' own files
    folder: tempfile.TemporaryDirectory | None = None  # a copy's own build, removed when the run lets go of it

    def shown(self, path: Path) -> tuple[str, bool]:
        """(how to show a source path, whether it is the tests' own file)."""
        try:
            relative = path.resolve().relative_to(self.source.resolve()).as_posix()
        except ValueError:
            return str(path), False
        if relative in self.theirs:
            return relative, True
        return f"{self.package}/{relative}" if self.package not in ("", ".") else relative, False


def package_folder(track: Track) -> str:
    """The package's folder among the track's files: the folder of its package.json ("ts")."""
    found = next((f for f in track.files if f == "package.json" or f.endswith("/package.json")), "package.json")
    return Path(found).parent.as_posix()


def package_root(track: Track, code_root: Path) -> Path:
    return code_root / package_folder(track)


def learner_sources(root: Path) -> dict[str, Path]:
    """The TypeScript files of a package that are its code: not its tests (test/ and *.test.ts),
    not its dependencies, builds or hidden folders."""
    found: dict[str, Path] = {}
    if not root.is_dir():
        return found
    for path in sorted(root.rglob("*.ts")):
        relative = path.relative_to(root)
        folders = relative.parts[:-1]
        if (folders and folders[0] in (LEARNER_TESTS, "build", "out", "dist")) or path.name.endswith((".test.ts", ".d.ts")) \
                or any(part == "node_modules" or part.startswith(".") for part in folders) or not path.is_file():
            continue
        found[relative.as_posix()] = path
    return found


def test_sources(track: Track) -> dict[str, Path]:
    """The files of the tests being run, by their place in the package: every TypeScript file of the
    catalog (laid out as the package), or of a learner's test folder (placed as test/)."""
    root = track.tests
    place = LEARNER_TESTS + "/" if track.tests_at is not None else ""
    return {place + p.relative_to(root).as_posix(): p for p in sorted(root.rglob("*.ts"))
            if p.is_file() and "node_modules" not in p.relative_to(root).parts}


def build(track: Track, code_root: Path, build_dir: Path, *, check: bool = True) -> tuple[Built | None, str]:
    """(the compiled package, "") or (None, the problem). Without `check` the sources are only
    compiled, not type-checked (a mutant's copy)."""
    tools = toolchain.find()
    package = package_folder(track)
    root = code_root / package
    if not root.is_dir():
        return None, f"{package}/ is missing: the TypeScript track's code is a package (`course start` writes it)"
    theirs = test_sources(track)
    sources = {**learner_sources(root), **theirs}
    folder = None if check else tempfile.TemporaryDirectory(prefix="course-ts-", dir=_mkdir(build_dir / "ts-copies"))
    place = Path(folder.name) if folder else _place(build_dir, root, track.tests)
    with _locked(place):
        source, out = place / "src", place / "out"
        _sync(source, sources)
        # Node's types come from the installed tools, never from a node_modules of the learner's
        options = {**COMPILER_OPTIONS, "rootDir": ".", "outDir": str(out),
                   "typeRoots": [str(tools.tools / "node_modules" / "@types")]}
        if not check:
            options["noCheck"] = True
        config = {"compilerOptions": options, "include": sorted(sources)}
        _write_if_changed(source / "tsconfig.json", json.dumps(config, indent=1))
        _write_if_changed(source / "package.json", '{"type": "module"}\n')
        digest = _digest(sources, config, tools)
        record = place / "built.json"
        if not (out.is_dir() and _read(record) == digest):
            shutil.rmtree(out, ignore_errors=True)
            code, said = _call([*tools.tsc, "-p", str(source / "tsconfig.json")], cwd=source)
            if code != 0:
                if folder:
                    folder.cleanup()
                return None, problem(track, package, set(theirs), said, code)
            (out / "package.json").write_text('{"type": "module"}\n', encoding="utf-8")
            _write_if_changed(record, digest)
    if not folder:
        _prune(place.parent, keep=place)
    tests = [out / (name[:-3] + ".js") for name in sorted(theirs) if name.endswith(".test.ts")]
    return Built(source, out, tests, package, set(theirs), folder), ""


def _mkdir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


def _sync(source: Path, sources: dict[str, Path]) -> None:
    """Make `source` hold exactly `sources` (and the build's own two files): a file is written only
    when its bytes changed, and a file no longer among them is removed."""
    source.mkdir(parents=True, exist_ok=True)
    for name, origin in sources.items():
        target = source / name
        data = origin.read_bytes()
        try:
            if target.read_bytes() == data:
                continue
        except OSError:
            target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    keep = set(sources) | {"tsconfig.json", "package.json"}
    for path in sorted(source.rglob("*"), reverse=True):
        relative = path.relative_to(source).as_posix()
        if path.is_file() and relative not in keep:
            path.unlink()
        elif path.is_dir() and not any(path.iterdir()):
            path.rmdir()


def _digest(sources: dict[str, Path], config: dict, tools: toolchain.Toolchain) -> str:
    digest = hashlib.sha256(json.dumps(config, sort_keys=True).encode() + str(tools.tools).encode())
    for name, path in sorted(sources.items()):
        digest.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        return ""


def built_at(track: Track, code_root: Path, build_dir: Path) -> Built:
    """Where build() compiles (with type checking) this code and these tests, whether or not it has."""
    place = _place(build_dir, package_root(track, code_root), track.tests)
    theirs = test_sources(track)
    tests = [place / "out" / (name[:-3] + ".js") for name in sorted(theirs) if name.endswith(".test.ts")]
    return Built(place / "src", place / "out", tests, package_folder(track), set(theirs))


KEEP = 8  # package folders whose builds stay in the build folder: the most recently built


def _place(build_dir: Path, root: Path, tests: Path) -> Path:
    """The folder that keeps the build of this package folder with these tests; it records the
    package folder, so that it can go once that folder is gone."""
    key = hashlib.sha256(f"{root.resolve()}\n{tests.resolve()}".encode()).hexdigest()[:16]
    place = build_dir / "typescript" / key
    place.mkdir(parents=True, exist_ok=True)
    _write_if_changed(place / "package", str(root.resolve()))
    return place


@contextmanager
def _locked(place: Path) -> Iterator[None]:
    """One build at a time in a place (another run of the same code waits, then finds it built)."""
    place.mkdir(parents=True, exist_ok=True)
    with open(place / "lock", "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        os.utime(place / "lock")  # most recently used
        yield


def _prune(root: Path, *, keep: Path) -> None:
    """Remove the places of package folders that are gone (a graded copy's), then all but the KEEP
    most recently built; never one that another run holds."""
    places = []
    for place in root.iterdir():
        try:
            alive = Path((place / "package").read_text(encoding="utf-8")).is_dir()
            places.append((os.stat(place / "lock").st_mtime, place, alive))
        except OSError:
            continue  # being made by another run
    places.sort(reverse=True)
    for n, (_, place, alive) in enumerate(places):
        if place != keep and (not alive or n >= KEEP):
            with open(place / "lock", "w") as held:
                try:
                    fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError:
                    continue  # a run is building there
                shutil.rmtree(place, ignore_errors=True)


def _write_if_changed(path: Path, text: str) -> None:
    if _read(path) == text:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    part = path.with_name(f".{path.name}.{os.getpid()}")
    part.write_text(text, encoding="utf-8")
    os.replace(part, path)


def problem(track: Track, package: str, theirs: set[str], output: str, code: int | None) -> str:
    """The compiler's complaints as one block, at the learner's file:line (or the tests')."""
    if code is None:
        return f"the TypeScript build took longer than {BUILD_LIMIT:g} s and was stopped"
    learners = track.tests_at is not None  # the tests are the learner's own: the code is the course's
    found: list[list] = []  # [whose ("yours" or "tests"), text], a continuation line joined to its diagnostic
    other = []
    for line in output.splitlines():
        diagnostic = _DIAGNOSTIC.match(line.strip())
        if diagnostic is None:
            if line.startswith((" ", "\t")) and found:
                found[-1][1] += " " + line.strip()
            elif line.strip():
                other.append(line.strip())
            continue
        path = diagnostic["path"].replace("\\", "/")
        whose = "tests" if path in theirs else "yours"
        shown = path if whose == "tests" and not learners or package in ("", ".") else f"{package}/{path}"
        found.append([whose, f"{shown}:{diagnostic['line']}:{diagnostic['column']}: {diagnostic['text']} ({diagnostic['code']})"])
    yours = [text for whose, text in found if whose == "yours"]
    tests = [text for whose, text in found if whose == "tests"]
    if learners and (tests or yours):
        head = "your tests do not compile against the chapter's interface (a name it does not have, or used differently):"
        lines = tests + yours
    elif yours:
        head, lines = "your code does not compile (TypeScript, strict):", yours
    elif tests:
        head = ("the catalog's tests do not compile against your code (a name missing, or declared differently from "
                "the chapter's interface):")
        lines = tests
    else:
        head, lines = "the TypeScript build failed:", other or [f"tsc ended with exit code {code}"]
    shown = lines[:20] + ([f"... and {len(lines) - 20} more"] if len(lines) > 20 else [])
    return "\n".join([head, *("  " + line for line in shown)])


def _call(args: list[str], *, cwd: Path) -> tuple[int | None, str]:
    """Run a command in its own process group; (its exit code, or None past the limit; its output)."""
    processes.admit()
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(args, cwd=cwd, env=toolchain.environment(), stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True, preexec_fn=processes.ends_with_us())
        processes.register(proc.pid)
        try:
            code: int | None = proc.wait(BUILD_LIMIT)
        except subprocess.TimeoutExpired:
            code = None
        finally:
            processes.kill(proc.pid)
            proc.wait()
            processes.unregister(proc.pid)
        out.seek(0)
        return code, out.read().decode("utf-8", "replace")

"""The Go adapter's prepare step: the catalog's _test.go files overlaid on the learner's module, and
one test binary per package built from both, without writing anything into the learner's tree.

The catalog is laid out as the module (tests/go/<id>/agent/provider/x_test.go joins the package
agent/provider) and reaches the compiler through `go test -overlay`. The learner's own _test.go
files in their module (what `course selftest` runs) are left out of a catalog build by the same
overlay, so neither set of tests ever compiles beside the other. A build that fails is one problem
block: the learner's files at their file:line, or, when only the tests fail to compile, the names
they could not find.

The binaries are kept between runs in the build folder (the user's cache), one place per module
folder: `go test -c -o` leaves a binary alone when its build ID says it is up to date, so a check of
unchanged code links nothing, and a changed file recompiles only its package. Each run works on its
own hard link (or copy) of the binary, so a build by another run never changes a binary in use.
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

from course import cache, processes
from course.chapters import Mutant, Track
from course.languages.go import schemata, toolchain

BUILD_LIMIT = 900.0  # a cold build cache compiles net/http and its tests' needs: minutes on a slow machine

# a test function as go test sees one: Test, then nothing or anything but a lower-case letter
_TEST_FUNC = re.compile(r"^func (Test(?:[^\Wa-z]\w*)?)\(\w+ \*testing\.T\) \{$", re.MULTILINE)
_ERROR = re.compile(r"^(\S+?\.go):(\d+)(?::(\d+))?: (.*)$")

# A mutant's build (a copy built as its origin) runs beside the others', at least one per core, and
# only the catalog judges it: no go vet; no DWARF for the packages it names (nobody debugs the binary;
# panics and t.Errorf keep their file:line, which come from the line table); compiler, linker and go
# itself on one thread each, so that no CPU goes to coordinating threads that would only wait for a
# core. A fifth less CPU per build than go's defaults, measured on ag01.
MUTANT_FLAGS = ["-vet=off", "-gcflags=-dwarf=false -c=1"]
MUTANT_TUNING = {"GOMAXPROCS": "1", "GOGC": "800"}


@dataclass
class Built:
    """What start() needs: a binary per package (in catalog order of their first test), the module."""

    module_root: Path
    compiled_in: Path  # where the compiler saw the module's files (the paths in panics): module_root, or an origin
    binaries: dict[str, Path]  # package folder relative to the module ("agent/provider") -> test binary
    packages: dict[str, str]  # Go test name -> its package folder
    folder: tempfile.TemporaryDirectory  # holds the binaries; removed when the run lets go of it
    cover_profile: str = ""  # the -test.coverprofile prefix, when the run measures coverage
    env: dict[str, str] = field(default_factory=dict)  # what the test process needs on top (a schema's mutant)


def module_root(track: Track, code_root: Path) -> Path:
    """The folder of the track's go.mod (go/ in a learner's repository)."""
    mod = next((f for f in track.files if f == "go.mod" or f.endswith("/go.mod")), "go.mod")
    return code_root / Path(mod).parent


def test_files(folder: Path) -> list[Path]:
    """The _test.go files of a folder laid out as a module, in the packages go would build: not in
    testdata, vendor, or a folder whose name starts with "." or "_" (go ignores those)."""
    return sorted(p for p in folder.rglob("*_test.go") if p.is_file() and not any(
        part in ("testdata", "vendor") or part.startswith((".", "_")) for part in p.relative_to(folder).parts[:-1]))


def test_functions(tests_dir: Path) -> dict[str, tuple[str, str]]:
    """Each test function of a folder of tests laid out as the module (the catalog, or a learner's
    module): name -> (its package folder in the module, its source), in file order."""
    found: dict[str, tuple[str, str]] = {}
    for path in test_files(tests_dir):
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue  # a learner's file go cannot read either: the build says so, at its name
        package = path.parent.relative_to(tests_dir).as_posix()
        for match in _TEST_FUNC.finditer(text):
            end = text.find("\n}\n", match.end())
            found[match.group(1)] = (package, text[match.start(): len(text) if end < 0 else end + 2])
    return found


def build(track: Track, code_root: Path, tests: list[str], build_dir: Path, *, env: dict[str, str],
          cover: bool = False, origin: Path | None = None, mutant: Mutant | None = None) -> tuple[Built | None, str]:
    """(the binaries, "") or (None, the problem). With `origin` (code_root is a changed copy of it),
    the copy is compiled as if its changed files were in origin, so the packages it did not change
    come from the build cache (the compiler records where a file is: a copy in a folder of its own
    would compile them all again); go vet is left out, the catalog alone judges a mutant. A copy that
    holds one of the track's documented mutants (`mutant`, as the request says) runs the run's
    mutant schema instead (schemata), when the schema holds that mutant."""
    tools = toolchain.find()
    module = module_root(track, code_root)
    if not (module / "go.mod").is_file():
        return None, f"{_shown(code_root, module / 'go.mod')} is missing: the Go track's code is a module (`course start` writes it)"
    compiled_in = module_root(track, origin) if origin else module
    functions = test_functions(track.tests)
    packages = {name: functions[name][0] for name in tests if name in functions}
    order = {name: i for i, name in enumerate(tests)}
    wanted = sorted(set(packages.values()), key=lambda p: min(order[t] for t, q in packages.items() if q == p))
    if origin and not cover:
        schema = _schema(track, origin, build_dir, env)
        held = schema is not None and mutant is not None and mutant.id in schema.mutants
        if held and all(schema.binaries.get(package, Path()).is_file() for package in wanted):
            folder = tempfile.TemporaryDirectory(prefix="course-go-")
            binaries = {package: _own_copy(schema.binaries[package], Path(folder.name)) for package in wanted}
            return Built(module, compiled_in, binaries, packages, folder, env={schemata.VARIABLE: mutant.id}), ""
    place = _place(build_dir, module, track.tests, cover)
    folder = tempfile.TemporaryDirectory(prefix="course-go-")
    binaries: dict[str, Path] = {}
    with _locked(place):
        _write_if_changed(place / "module", str(module.resolve()))
        overlay = place / "overlay.json"
        replace = overlay_of(track.tests, compiled_in)
        if origin:
            replace = {**_changes(module, compiled_in), **replace}
        _write_if_changed(overlay, json.dumps({"Replace": replace}))
        for package in wanted:
            kept = place / (package.replace("/", "-") + ".test")
            # -s -w: no symbol table or DWARF, as plain `go test` links; panics still name file:line
            args = [tools.go, "test", "-c", "-o", str(kept), "-overlay", str(overlay), "-ldflags=-s -w"]
            if cover:
                args += ["-cover", "-covermode=set", "-coverpkg=./..."]
            # go's compiler and linker are short-lived: a larger heap target saves an eighth of a build's CPU
            tuning = {"GOGC": "400"}
            if origin:
                args += MUTANT_FLAGS
                tuning = MUTANT_TUNING
            code, said = _call([*args, "./" + package], cwd=compiled_in, env={**tuning, **env})
            if code != 0 or not kept.is_file():
                folder.cleanup()
                return None, problem(track, code_root, compiled_in, said, code)
            binaries[package] = _own_copy(kept, Path(folder.name))
    _prune(place.parent, keep=place)
    return Built(module, compiled_in, binaries, packages, folder, str(Path(folder.name) / "cover") if cover else ""), ""


def _schema(track: Track, origin: Path, build_dir: Path, env: dict[str, str]) -> schemata.Schema | None:
    """The schema of the track's documented mutants over `origin` (see schemata), built by the first
    mutant build of a run that asks for it while the others wait; None when it cannot be had (no
    mutant fits one, or it does not compile: each mutant then builds on its own, and says why)."""
    slot = schemata.slot(track, origin)
    with slot.lock:
        if not slot.done:
            slot.done = True
            slot.schema = _build_schema(track, origin, build_dir, env)
        return slot.schema


def _build_schema(track: Track, origin: Path, build_dir: Path, env: dict[str, str]) -> schemata.Schema | None:
    go = toolchain.find().go
    tool = schemata.tool(cache.folder(), lambda args, cwd: _call(args, cwd=cwd, env=env)[0])
    if tool is None:
        return None
    place = build_dir / "go-schema" / hashlib.sha256(f"{origin.resolve()}\n{track.tests.resolve()}".encode()).hexdigest()[:16]
    place.mkdir(parents=True, exist_ok=True)
    schema = schemata.plan(track, origin, place / "files", tool=tool, env=env)
    if schema is None:
        return None
    compiled_in = module_root(track, origin)
    overlay = place / "overlay.json"
    overlay.write_text(json.dumps({"Replace": {**schema.replace, **overlay_of(track.tests, compiled_in)}}), encoding="utf-8")
    for package in sorted({package for package, _ in test_functions(track.tests).values()}):
        kept = place / (package.replace("/", "-") + ".test")
        # built once while the run's other mutant builds wait for it: go's own parallel defaults
        args = [go, "test", "-c", "-o", str(kept), "-overlay", str(overlay), "-ldflags=-s -w", "-vet=off", "./" + package]
        code, _ = _call(args, cwd=compiled_in, env={"GOGC": "400", **env})
        if code != 0 or not kept.is_file():
            return None
        schema.binaries[package] = kept
    return schema


def _changes(copy: Path, origin: Path) -> dict[str, str]:
    """Overlay entries that show origin as the copy is: its changed and added files in their places,
    the files it lacks deleted (test files are the catalog's: overlay_of). Only those: an unchanged
    file is read where it always was, so its package's compiled form is found again."""
    ours = {p.relative_to(copy): p for p in copy.rglob("*") if p.is_file() and not p.name.endswith("_test.go")}
    theirs = {p.relative_to(origin): p for p in origin.rglob("*") if p.is_file() and not p.name.endswith("_test.go")}
    replace = {str(origin / name): "" for name in theirs.keys() - ours.keys()}
    for name, path in ours.items():
        if name not in theirs or path.read_bytes() != theirs[name].read_bytes():
            replace[str(origin / name)] = str(path)
    return replace


KEEP = 8  # module folders whose binaries stay in the build folder: the most recently built


def _place(build_dir: Path, module: Path, tests: Path, cover: bool) -> Path:
    """The folder that keeps the binaries of this module folder built with this catalog; it records
    the module folder, so that it can go once that folder is gone."""
    source = f"{module.resolve()}\n{tests.resolve()}\n{'cover' if cover else 'plain'}"
    return build_dir / "go" / hashlib.sha256(source.encode()).hexdigest()[:16]


@contextmanager
def _locked(place: Path) -> Iterator[None]:
    """Hold the place's lock: one build at a time writes its binaries (another run of the same code
    waits, then finds them up to date). The kernel releases it however the process ends."""
    while True:
        place.mkdir(parents=True, exist_ok=True)
        fd = os.open(place / "lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            if os.path.samestat(os.fstat(fd), os.stat(place / "lock")):
                break
        except FileNotFoundError:
            pass  # pruned while we waited: make it again
        os.close(fd)
    try:
        os.utime(place / "lock")  # most recently used
        yield
    finally:
        os.close(fd)


def _prune(root: Path, *, keep: Path) -> None:
    """Remove the places of module folders that are gone (a mutant's copy, a graded repository's),
    then all but the KEEP most recently built; never one that another run holds."""
    places = []
    for place in root.iterdir():
        try:
            module = Path((place / "module").read_text(encoding="utf-8"))
            places.append((os.stat(place / "lock").st_mtime, place, module.is_dir()))
        except OSError:
            continue  # being made by another run
    places.sort(reverse=True)
    for n, (_, place, alive) in enumerate(places):
        if place != keep and (not alive or n >= KEEP):
            _remove_unless_held(place)


def _remove_unless_held(place: Path) -> None:
    try:
        fd = os.open(place / "lock", os.O_RDWR)
    except OSError:
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return  # a run is building there
    try:
        os.unlink(place / "lock")  # first: a run that opens it next makes a fresh one
        shutil.rmtree(place, ignore_errors=True)
    finally:
        os.close(fd)


def _own_copy(binary: Path, folder: Path) -> Path:
    """This run's own name for the binary: a hard link when the folders share a file system."""
    mine = folder / binary.name
    try:
        os.link(binary, mine)
    except OSError:
        shutil.copy2(binary, mine)
    return mine


def _write_if_changed(path: Path, text: str) -> None:
    try:
        if path.read_text(encoding="utf-8") == text:
            return
    except OSError:
        pass
    part = path.with_name(f".{path.name}.{os.getpid()}")
    part.write_text(text, encoding="utf-8")
    os.replace(part, path)


def build_program(track: Track, code_root: Path, program: Path, into: Path, *, env: dict[str, str]) -> tuple[Path | None, str]:
    """A chapter's program (the demonstration: a main package, the folder of `program` in the
    catalog, laid out as the module) built into the learner's module through the overlay, so it
    imports their packages as a program of theirs would; (the binary in `into`, "") or (None, the problem)."""
    module = module_root(track, code_root)
    if not (module / "go.mod").is_file():
        return None, f"{_shown(code_root, module / 'go.mod')} is missing: the Go track's code is a module (`course start` writes it)"
    package = program.parent.relative_to(track.tests)
    sources = sorted(p for p in program.parent.glob("*.go") if not p.name.endswith("_test.go"))
    replace = {str(module / package / p.name): str(p) for p in sources}
    (into / "overlay.json").write_text(json.dumps({"Replace": replace}), encoding="utf-8")
    binary = into / package.name
    code, said = _call([toolchain.find().go, "build", "-o", str(binary), "-overlay", str(into / "overlay.json"),
                        "./" + package.as_posix()], cwd=module, env=env)
    if code != 0 or not binary.is_file():
        return None, problem(track, code_root, module, said, code, ours=sources, what="the demonstration does")
    return binary, ""


def overlay_of(tests: Path, module: Path) -> dict[str, str]:
    """What the build sees in place of the module's files: the test files of `tests` in their
    packages, and no other _test.go file of the module (an empty replacement deletes a file)."""
    replace = {str(module / p.relative_to(tests)): str(p) for p in test_files(tests)}
    for own in test_files(module) if module.is_dir() else []:
        replace.setdefault(str(own), "")
    return replace


def problem(track: Track, code_root: Path, module: Path, output: str, code: int | None, *,
            ours: list[Path] | None = None, what: str = "the catalog's tests do") -> str:
    """The compiler's complaints as one block, at the learner's file:line. `ours`: the course's files
    overlaid on the module (by default the tests); `what` names them in the sentence saying they do
    not compile."""
    if code is None:
        return f"the build took longer than {BUILD_LIMIT:g} s and was stopped"
    # an overlaid file by where go may say it is: its place in the module or its own (the overlay's
    # source) -> how to show it: its name, or for the learner's own tests (selftest) their path
    learners = track.tests_at is not None and ours is None
    tests = {}
    for source in ours or test_files(track.tests):
        relative = source.relative_to(track.tests)
        shown = (module_root(track, Path(".")) / relative).as_posix() if learners else source.name
        tests[module / relative] = tests[source] = shown
    yours, theirs, other = [], [], []
    for raw in output.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        place = _ERROR.match(line)
        if place is None:
            other.append(line)
            continue
        path = Path(place.group(1))
        path = path if path.is_absolute() else module / path
        if path in tests:
            theirs.append(f"{tests[path]}:{place.group(2)}: {place.group(4)}")
        else:
            column = f":{place.group(3)}" if place.group(3) else ""
            yours.append(f"{_shown(code_root, path)}:{place.group(2)}{column}: {place.group(4)}")
    if learners and (theirs or yours):  # the code is the course's, so whatever fails is the tests' doing
        head = ("your tests do not compile against the chapter's interface (a name it does not have, or "
                "used differently):")
        lines = theirs + yours
    elif yours:
        head, lines = "your code does not compile:", yours
    elif theirs:
        head = (f"{what} not compile against your code (a name missing, or declared differently from "
                "the chapter's interface):")
        lines = theirs
    else:
        head, lines = "the go build failed:", other or [f"go ended with exit code {code}"]
    shown = lines[:20] + ([f"... and {len(lines) - 20} more"] if len(lines) > 20 else [])
    return "\n".join([head, *("  " + line for line in shown)])


def _shown(code_root: Path, path: Path) -> str:
    try:
        return path.resolve().relative_to(code_root.resolve()).as_posix()
    except ValueError:
        return str(path)


def _call(args: list[str], *, cwd: Path, env: dict[str, str]) -> tuple[int | None, str]:
    """Run a command in its own process group; (its exit code, or None past the limit; its output)."""
    processes.admit()
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(args, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True, preexec_fn=processes.ends_with_us())
        processes.register(proc.pid)
        try:
            code: int | None = proc.wait(BUILD_LIMIT)
        except subprocess.TimeoutExpired:
            code = None
        finally:
            processes.kill(proc.pid)  # the compilers it started go with it
            proc.wait()
            processes.unregister(proc.pid)
        out.seek(0)
        return code, out.read().decode("utf-8", "replace")

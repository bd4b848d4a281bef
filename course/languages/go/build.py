"""The Go adapter's prepare step: the catalog's _test.go files overlaid on the learner's module, and
one test binary per package built from both, without writing anything into the learner's tree.

The catalog is laid out as the module (tests/go/<id>/agent/provider/x_test.go joins the package
agent/provider) and reaches the compiler through `go test -overlay`. A build that fails is one
problem block: the learner's files at their file:line, or, when only the catalog fails to compile,
the names it could not find.

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
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from course import processes
from course.chapters import Track
from course.languages.go import toolchain

BUILD_LIMIT = 900.0  # a cold build cache compiles net/http and its tests' needs: minutes on a slow machine

_TEST_FUNC = re.compile(r"^func (Test\w*)\(\w+ \*testing\.T\) \{$", re.MULTILINE)
_ERROR = re.compile(r"^(\S+?\.go):(\d+)(?::(\d+))?: (.*)$")


@dataclass
class Built:
    """What start() needs: a binary per package (in catalog order of their first test), the module."""

    module_root: Path
    compiled_in: Path  # where the compiler saw the module's files (the paths in panics): module_root, or an origin
    binaries: dict[str, Path]  # package folder relative to the module ("agent/provider") -> test binary
    packages: dict[str, str]  # Go test name -> its package folder
    folder: tempfile.TemporaryDirectory  # holds the binaries; removed when the run lets go of it
    cover_profile: str = ""  # the -test.coverprofile prefix, when the run measures coverage


def module_root(track: Track, code_root: Path) -> Path:
    """The folder of the track's go.mod (go/ in a learner's repository)."""
    mod = next((f for f in track.files if f == "go.mod" or f.endswith("/go.mod")), "go.mod")
    return code_root / Path(mod).parent


def test_functions(tests_dir: Path) -> dict[str, tuple[str, str]]:
    """Each test function of the catalog: name -> (its package folder in the module, its source),
    in file order."""
    found: dict[str, tuple[str, str]] = {}
    for path in sorted(tests_dir.rglob("*_test.go")):
        text = path.read_text(encoding="utf-8")
        package = path.parent.relative_to(tests_dir).as_posix()
        for match in _TEST_FUNC.finditer(text):
            end = text.find("\n}\n", match.end())
            found[match.group(1)] = (package, text[match.start(): len(text) if end < 0 else end + 2])
    return found


def build(track: Track, code_root: Path, tests: list[str], build_dir: Path, *, env: dict[str, str],
          cover: bool = False, origin: Path | None = None) -> tuple[Built | None, str]:
    """(the binaries, "") or (None, the problem). With `origin` (code_root is a changed copy of it),
    the copy is compiled as if its changed files were in origin, so the packages it did not change
    come from the build cache (the compiler records where a file is: a copy in a folder of its own
    would compile them all again); go vet is left out, the catalog alone judges a mutant."""
    tools = toolchain.find()
    module = module_root(track, code_root)
    if not (module / "go.mod").is_file():
        return None, f"{_shown(code_root, module / 'go.mod')} is missing: the Go track's code is a module (`course start` writes it)"
    compiled_in = module_root(track, origin) if origin else module
    functions = test_functions(track.tests)
    packages = {name: functions[name][0] for name in tests if name in functions}
    order = {name: i for i, name in enumerate(tests)}
    wanted = sorted(set(packages.values()), key=lambda p: min(order[t] for t, q in packages.items() if q == p))
    place = _place(build_dir, module, track.tests, cover)
    folder = tempfile.TemporaryDirectory(prefix="course-go-")
    binaries: dict[str, Path] = {}
    with _locked(place):
        _write_if_changed(place / "module", str(module.resolve()))
        overlay = place / "overlay.json"
        replace = {str(compiled_in / p.relative_to(track.tests)): str(p) for p in sorted(track.tests.rglob("*_test.go"))}
        if origin:
            replace.update(_changes(module, compiled_in))
        _write_if_changed(overlay, json.dumps({"Replace": replace}))
        for package in wanted:
            kept = place / (package.replace("/", "-") + ".test")
            # -s -w: no symbol table or DWARF, as plain `go test` links; panics still name file:line
            args = [tools.go, "test", "-c", "-o", str(kept), "-overlay", str(overlay), "-ldflags=-s -w"]
            if cover:
                args += ["-cover", "-covermode=set", "-coverpkg=./..."]
            if origin:
                args.append("-vet=off")
            # go's compiler and linker are short-lived: a larger heap target saves an eighth of a build's CPU
            code, said = _call([*args, "./" + package], cwd=compiled_in, env={"GOGC": "400", **env})
            if code != 0 or not kept.is_file():
                folder.cleanup()
                return None, problem(track, code_root, compiled_in, said, code)
            binaries[package] = _own_copy(kept, Path(folder.name))
    _prune(place.parent, keep=place)
    return Built(module, compiled_in, binaries, packages, folder, str(Path(folder.name) / "cover") if cover else ""), ""


def _changes(copy: Path, origin: Path) -> dict[str, str]:
    """Overlay entries that show origin as the copy is: its changed and added files in their places,
    the files it lacks deleted. Only those: an unchanged file is read where it always was, so its
    package's compiled form is found again."""
    ours = {p.relative_to(copy): p for p in copy.rglob("*") if p.is_file()}
    theirs = {p.relative_to(origin): p for p in origin.rglob("*") if p.is_file()}
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


def problem(track: Track, code_root: Path, module: Path, output: str, code: int | None) -> str:
    """The compiler's complaints as one block, at the learner's file:line."""
    if code is None:
        return f"building the tests took longer than {BUILD_LIMIT:g} s and was stopped"
    catalog = {p.name for p in track.tests.rglob("*_test.go")}
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
        if path.name in catalog and path.parent.is_relative_to(module):
            theirs.append(f"{path.name}:{place.group(2)}: {place.group(4)}")
        else:
            column = f":{place.group(3)}" if place.group(3) else ""
            yours.append(f"{_shown(code_root, path)}:{place.group(2)}{column}: {place.group(4)}")
    if yours:
        head, lines = "your code does not compile:", yours
    elif theirs:
        head = ("the catalog's tests do not compile against your code (a name missing, or declared "
                "differently from the chapter's interface):")
        lines = theirs
    else:
        head, lines = "go could not build the tests:", other or [f"go test -c ended with exit code {code}"]
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

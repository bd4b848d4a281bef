"""The Python adapter: catalogs are pytest files, run in worker processes the shared runner supervises.

Its own field in a track's manifest section: `modules`, the learner's modules, imported in this order
before any test runs, so that code that fails at import time is one clear message.
"""

from __future__ import annotations

import ast
import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Mapping

from course import content, processes
from course.chapters import Fields, Track
from course.errors import CodeProblem
from course.languages.protocol import (
    BroadMutation,
    CommentBlindDiff,
    Demonstration,
    Foreground,
    Function,
    LearnerTests,
    Outline,
    Prepared,
    RunRequest,
    WorkerServices,
)
from course.languages.python import bytecode, handshake, imports, launch, measure, mutmut, tracebacks
from course.results import FileCoverage


class PythonAdapter:
    name = "python"
    exit_call = "os._exit"
    # A worker is forked with the harness loaded: a second one costs little next to the tests.
    splits = True
    _standby: launch.Standby | None = None  # `course watch`: workers kept ready between runs
    # a run's workers, started before its code was prepared: each thread's own (mutants run many at once)
    _run = threading.local()

    def __init__(self) -> None:
        # every optional capability of the protocol: learners' own tests (selftest), mutmut's broad
        # score, a diff blind to comments and docstrings, the chapters' demonstrations, a test run
        # with the terminal attached (check -s, --pdb), the outline of a file's functions (the pitfall
        # hints' places), the fake model in each worker
        self.capabilities = {LearnerTests: self, BroadMutation: mutmut.Mutmut(), CommentBlindDiff: self,
                             Demonstration: self, Foreground: self, Outline: self, WorkerServices: self}

    def services_in_workers(self) -> frozenset[str]:
        """The fake model: a catalog test scripts it and talks to it at every step, and a worker's
        threads share one core (launch.cores_of_their_own), so one in the worker answers several
        times sooner than one in the harness, on the other core (ag01's catalog: 0.38 s against
        0.17 s for its 29 tests that use it)."""
        return frozenset({"fake-model"})

    def test_name(self, entry: str) -> str:
        return f"test_{entry}"

    def toolchain(self) -> str:
        """The interpreter running the harness: the learner's code runs in it too (the package itself
        requires Python 3.10 or newer, so nothing older gets this far)."""
        import platform

        return f"Python {platform.python_version()} ({sys.executable})"

    def modules(self, track: Track) -> tuple[str, ...]:
        return Fields(dict(track.options), f"chapter {track.chapter_id}, track {track.language}").strings("modules", ())

    def prepare(self, request: RunRequest) -> Prepared:
        """Compile every learner file (without running it): a syntax error is one problem at its line.
        What fails only when the code runs (an import-time exception, a missing module) the worker
        reports before the first test."""
        return Prepared(problem=self._compile_problem(request.track, request.code_root.resolve(),
                                                      (request.build_dir / "pycache").resolve()))

    @staticmethod
    def _compile_problem(track: Track, code_root: Path, pycache: Path | None = None) -> str:
        """The first learner file that does not compile, as one line; with `pycache`, each file is
        also cached there checked by content (see course.languages.python.bytecode)."""
        for name in track.files:
            path = code_root / name
            if not name.endswith(".py") or not path.is_file():
                continue
            try:
                bytecode.compile_checked(path, pycache)
            except SyntaxError as exc:
                return f"{name}:{exc.lineno}: syntax error: {exc.msg}"
            except ValueError as exc:  # null bytes in the source
                return f"{name}: cannot be compiled: {exc}"
        return ""

    @contextmanager
    def standby(self) -> Iterator[None]:
        """For `course watch`: import, once, what every catalog run needs (pytest, its plugins,
        the worker), and keep the next run's worker ready while the learner types (set up as far
        as it can be without the code under test: see course.languages.python.worker.run)."""
        handshake.warm()
        self._standby = launch.Standby()
        try:
            yield
        finally:
            standby, self._standby = self._standby, None
            standby.close()

    def commentary_lines(self, text: str) -> set[int]:
        """Lines (1-based) that hold only comments, docstrings or nothing: what `course diff`
        leaves out by default. Text that does not parse has none (everything is compared)."""
        import io
        import tokenize

        lines = text.splitlines()
        try:
            tree = ast.parse(text)
            tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
        except (SyntaxError, tokenize.TokenError, ValueError):
            return set()
        quiet = {n for n, line in enumerate(lines, 1) if not line.strip()}
        layout = (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
                  tokenize.ENDMARKER)
        code = {n for tok in tokens if tok.type not in layout for n in range(tok.start[0], tok.end[0] + 1)}
        quiet |= {n for n in range(1, len(lines) + 1) if n not in code}
        for node in ast.walk(tree):
            body = getattr(node, "body", None)
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and body:
                first = body[0]
                if (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
                        and isinstance(first.value.value, str)):
                    quiet |= set(range(first.lineno, (first.end_lineno or first.lineno) + 1))
        return quiet

    @contextmanager
    def ahead(self, request: RunRequest, workers: int) -> Iterator[None]:
        """Start the run's workers now: each forks, loads pytest, the catalog's conftest and helpers
        while the harness starts the services and compiles the learner's files (see
        course.languages.python.worker.run). Under `course watch` they are the standby's."""
        if self._standby is not None:
            self._standby.provide(self._ready(request), workers)
            yield
            return
        kept = self._run.kept = launch.Kept()
        try:
            kept.provide(self._ready(request), workers)
            yield
        finally:
            self._run.kept = None
            kept.close()

    def _ready(self, request: RunRequest) -> dict:
        """What a worker gets ready for: the same for every run of this catalog on this code."""
        track = request.track
        tests_dir = track.tests.resolve()
        catalog = imports.stamps(tests_dir)
        return {
            "code_root": str(request.code_root.resolve()),
            "tests_dir": str(tests_dir),
            "files": list(track.files),
            "modules": list(self.modules(track)),
            "pycache": str((request.build_dir / "pycache").resolve()),
            "ahead": imports.conftests_self_contained(tests_dir, tuple(track.files), catalog),
            "preload": self._standby is not None,
            "learners_tests": track.tests_at is not None,  # not a catalog of the course's (selftest)
            "services": sorted(set(track.services) & self.services_in_workers()),  # each worker starts its own
            # a worker set up ahead loaded catalog files: one made before they changed is not used
            "catalog": catalog,
        }

    def start(self, request: RunRequest, prepared: Prepared, skip: frozenset[str]) -> launch.Worker:
        spec = {  # this run's own
            "names": {self.test_name(name): name for name in request.tests},
            "timeout": request.timeout,
            "skip": sorted(skip),
            "env": dict(request.env),
            "shuffle": request.shuffle,
            "max_file_bytes": request.max_file_bytes,
            "coverage": measure.asked(request.coverage_dir, request.code_root.resolve(), request.track.files)
            if request.coverage_dir else None,
        }
        kept = self._standby or getattr(self._run, "kept", None)
        if kept is not None:
            return kept.start(self._ready(request), spec)
        return launch.start(self._ready(request), spec)

    def read_coverage(self, request: RunRequest) -> dict[str, FileCoverage]:
        return measure.read(request.coverage_dir, request.code_root.resolve(), list(request.track.files))

    def has_docstring(self, source: str, symbol: str) -> bool | None:
        """Whether `symbol` ('EventReader.feed'; '' for the module) is defined in the source with a
        docstring; None for a source that does not parse (verify's stubs step says so)."""
        try:
            node: ast.AST = ast.parse(source)
        except SyntaxError:
            return None
        for name in symbol.split(".") if symbol else []:
            node = next((child for child in getattr(node, "body", [])
                         if isinstance(child, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                         and child.name == name), None)
            if node is None:
                return False
        return bool((ast.get_docstring(node) or "").strip())

    def functions(self, source: str) -> list[Function]:
        """The module's functions and its classes' methods ('Decoder.decode'), decorators and the
        comments at the end of their bodies included in their lines; a function defined inside
        another is part of it."""
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError):
            return []
        found: list[Function] = []
        lines = source.splitlines()

        def last_line(node: ast.AST) -> int:
            """The function's last statement, then the comments and blank lines indented under it."""
            last = node.end_lineno or node.lineno
            while last < len(lines):
                following = lines[last]
                if following.strip() and len(following) - len(following.lstrip()) <= node.col_offset:
                    break
                last += 1
            while last > node.lineno and not lines[last - 1].strip():
                last -= 1
            return last

        def visit(body: list[ast.stmt], prefix: str) -> None:
            for node in body:
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                    found.append(Function(prefix + node.name, first, last_line(node)))
                elif isinstance(node, ast.ClassDef):
                    visit(node.body, f"{prefix}{node.name}.")
                elif isinstance(node, (ast.If, ast.Try, ast.With)):  # `if TYPE_CHECKING:`, a guarded import
                    for part in (node.body, getattr(node, "orelse", []), getattr(node, "finalbody", [])):
                        visit(part, prefix)

        visit(tree.body, "")
        return found

    def exclusion_problems(self, track: Track) -> list[str]:
        """Lines of the reference left out of its coverage without a reason given beside them."""
        return [problem for name in track.files if (track.reference / name).is_file()
                for problem in measure.unexplained_exclusions(track.reference / name, name)]

    def run_script(self, track: Track, code_root: Path, script: Path, args: list[str], env: Mapping[str, str],
                   *, timeout: float, whole_errors: bool = False) -> int:
        """The script run by this interpreter on the code in code_root; a traceback it writes is one
        line (course.languages.python.tracebacks), unless `whole_errors`."""
        problem = self._compile_problem(track, code_root)
        if problem:
            raise CodeProblem(problem)
        env = {**os.environ, **env, "PYTHONDONTWRITEBYTECODE": "1",
               "PYTHONPATH": os.pathsep.join([str(code_root), str(content.HARNESS_ROOT)])}
        errors = None if whole_errors else tracebacks.Collapsed(code_root, track.chapter_id)
        return processes.run_bounded([sys.executable, str(script), *args], cwd=code_root, env=env,
                                     timeout=timeout, what="the demonstration", errors=errors)

    def run_foreground(self, track: Track, code_root: Path, test: str, env: Mapping[str, str], *,
                       debugger: bool) -> int:
        """pytest on the one test, in a process of its own with the terminal attached: no capture
        (prints as they happen, input() and breakpoint() work), no time limit, pytest's own report;
        with `debugger`, pdb at the failure (--pdb). Nothing compiled is written beside the code."""
        problem = self._compile_problem(track, code_root)
        if problem:
            raise CodeProblem(problem)
        name = self.test_name(test)
        path = next((p for p in sorted(track.tests.glob("test_*.py"))
                     if any(isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name
                            for node in ast.parse(p.read_text(encoding="utf-8")).body)), None)
        if path is None:
            raise CodeProblem(f"no test file of the catalog defines {name}")
        tests_dir = str(track.tests.resolve())
        env = {**os.environ, **env, "PYTHONDONTWRITEBYTECODE": "1", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
               "PYTHONPATH": os.pathsep.join([str(code_root.resolve()), str(content.HARNESS_ROOT)])}
        command = [sys.executable, "-m", "pytest", f"{path.resolve()}::{name}", "-s", "-p", "no:cacheprovider",
                   "--rootdir", tests_dir, "-c", os.devnull, "--confcutdir", tests_dir, "--assert=plain",
                   "-W", "ignore::pytest.PytestCollectionWarning", *(["--pdb"] if debugger else [])]
        return processes.foreground(command, cwd=code_root, env=env)

    def catalog_problems(self, track: Track) -> list[str]:
        """A malformed `modules` field, and asserts without a message: the worker runs pytest with
        plain asserts (no rewriting, so imports stay cached), and a bare assert would fail with
        nothing for the learner to read."""
        from course.errors import ManifestError

        problems = []
        try:
            self.modules(track)
        except ManifestError as exc:
            problems.append(exc.message)
        for path in sorted(track.tests.glob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Assert) and node.msg is None:
                    problems.append(f"{path.name}:{node.lineno}: assert without a message")
        return problems

    def learner_tests_folder(self, track: Track, root: Path) -> Path:
        """Where a learner's own tests are: the folder of the example `course start` wrote
        (tests_mine/<chapter>/), out of the way of the chapter's modules."""
        return root / Path(track.selftest).parent

    def learner_tests(self, track: Track, folder: Path) -> list[str]:
        """The tests a learner wrote in `folder` (test_*.py files, test_ functions at the top level
        or in Test classes), as catalog-style names, in file order."""
        names: list[str] = []
        for path in sorted(folder.rglob("test_*.py")):
            try:
                tree = ast.parse(path.read_text(encoding="utf-8"))
            except (SyntaxError, UnicodeDecodeError, ValueError):
                continue  # the run itself reports it, at its line
            bodies = [tree.body] + [n.body for n in tree.body if isinstance(n, ast.ClassDef) and n.name.startswith("Test")]
            names += [n.name.removeprefix("test_") for body in bodies for n in body
                      if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name.startswith("test_")]
        return list(dict.fromkeys(names))

    def test_sources(self, track: Track) -> dict[str, str]:
        """Each test function's source, by name, for results.json's test_code."""
        sources: dict[str, str] = {}
        for path in sorted(track.tests.glob("test_*.py")):
            text = path.read_text(encoding="utf-8")
            for node in ast.parse(text).body:
                if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
                    sources[node.name] = ast.get_source_segment(text, node) or ""
        return sources

"""The Python adapter: catalogs are pytest files, run in worker processes the shared runner supervises.

Its own field in a track's manifest section: `modules`, the learner's modules, imported in this order
before any test runs, so that code that fails at import time is one clear message.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path
from typing import Mapping

from course import content
from course.chapters import Fields, Track
from course.languages.protocol import Prepared, RunRequest
from course.check.results import FileCoverage
from course.languages.python import launch, measure


class PythonAdapter:
    name = "python"
    exit_call = "os._exit"

    def test_name(self, entry: str) -> str:
        return f"test_{entry}"

    def modules(self, track: Track) -> tuple[str, ...]:
        return Fields(dict(track.options), f"chapter {track.chapter_id}, track {track.language}").strings("modules", ())

    def prepare(self, request: RunRequest) -> Prepared:
        """Compile every learner file (without running it): a syntax error is one problem at its line.
        What fails only when the code runs (an import-time exception, a missing module) the worker
        reports before the first test."""
        for name in request.track.files:
            path = request.code_root / name
            if not name.endswith(".py") or not path.is_file():
                continue
            try:
                compile(path.read_bytes(), str(path), "exec", dont_inherit=True)
            except SyntaxError as exc:
                return Prepared(problem=f"{name}:{exc.lineno}: syntax error: {exc.msg}")
            except ValueError as exc:  # null bytes in the source
                return Prepared(problem=f"{name}: cannot be compiled: {exc}")
        return Prepared()

    def start(self, request: RunRequest, prepared: Prepared, skip: frozenset[str]) -> launch.Worker:
        track = request.track
        return launch.Worker({
            "code_root": str(request.code_root.resolve()),
            "tests_dir": str(track.tests.resolve()),
            "names": {self.test_name(name): name for name in request.tests},
            "modules": list(self.modules(track)),
            "timeout": request.timeout,
            "skip": sorted(skip),
            "pycache": str(request.build_dir / "pycache"),
            "env": dict(request.env),
            "shuffle": request.shuffle,
            "coverage": measure.asked(request.coverage_dir, request.code_root.resolve(), track.files)
            if request.coverage_dir else None,
        })

    def read_coverage(self, request: RunRequest) -> dict[str, FileCoverage]:
        return measure.read(request.coverage_dir, request.code_root.resolve(), list(request.track.files))

    def has_docstring(self, source: str, symbol: str) -> bool:
        """Whether `symbol` ('EventReader.feed'; '' for the module) is defined in the source with a
        docstring."""
        try:
            node: ast.AST = ast.parse(source)
        except SyntaxError:
            return False
        for name in symbol.split(".") if symbol else []:
            node = next((child for child in getattr(node, "body", [])
                         if isinstance(child, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                         and child.name == name), None)
            if node is None:
                return False
        return bool((ast.get_docstring(node) or "").strip())

    def exclusion_problems(self, track: Track) -> list[str]:
        """Lines of the reference left out of its coverage without a reason given beside them."""
        return [problem for name in track.files if (track.reference / name).is_file()
                for problem in measure.unexplained_exclusions(track.reference / name, name)]

    def run_script(self, track: Track, code_root: Path, script: Path, args: list[str], env: Mapping[str, str]) -> int:
        env = {**os.environ, **env, "PYTHONDONTWRITEBYTECODE": "1",
               "PYTHONPATH": os.pathsep.join([str(code_root), str(content.HARNESS_ROOT)])}
        return subprocess.call([sys.executable, str(script), *args], cwd=code_root, env=env)

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

    def test_sources(self, track: Track) -> dict[str, str]:
        """Each test function's source, by name, for results.json's test_code."""
        sources: dict[str, str] = {}
        for path in sorted(track.tests.glob("test_*.py")):
            text = path.read_text(encoding="utf-8")
            for node in ast.parse(text).body:
                if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
                    sources[node.name] = ast.get_source_segment(text, node) or ""
        return sources

"""The Python adapter: catalogs are pytest files, run by a supervised worker process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Callable

from course import content
from course.chapters import Track
from course.check.results import CaseResult, RunOutcome
from course.languages.python import measure, supervisor


class PythonAdapter:
    name = "python"

    def test_name(self, entry: str) -> str:
        return f"test_{entry}"

    def run_catalog(
        self,
        track: Track,
        code_root: Path,
        names: list[str],
        *,
        timeout: float,
        select: str = "",
        on_case: Callable[[CaseResult], None] | None = None,
        scratch: Path | None = None,
        shuffle: int | None = None,
        coverage: bool = False,
    ) -> RunOutcome:
        code_root = code_root.resolve()
        spec = supervisor.RunSpec(
            code_root=code_root,
            tests_dir=track.tests.resolve(),
            names=[self.test_name(n) for n in names],
            modules=list(track.modules),
            timeout=timeout,
            select=select,
            pycache=scratch / "pycache" if scratch else None,
            shuffle=shuffle,
        )

        def to_catalog_name(case: CaseResult) -> None:
            case.entry = case.entry.removeprefix("test_")
            if on_case:
                on_case(case)

        if not coverage:
            return supervisor.run(spec, on_case=to_catalog_name)
        with measure.measuring(code_root, list(track.files)) as (asked, measured):
            spec.coverage = asked
            outcome = supervisor.run(spec, on_case=to_catalog_name)
        outcome.coverage = measured
        return outcome

    def has_docstring(self, source: str, symbol: str) -> bool:
        """Whether `symbol` ('EventReader.feed'; '' for the module) is defined in the source with a
        docstring."""
        import ast

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

    def run_script(self, track: Track, code_root: Path, script: Path, args: list[str]) -> int:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(code_root), str(content.HARNESS_ROOT)]),
               "PYTHONDONTWRITEBYTECODE": "1"}
        return subprocess.call([sys.executable, str(script), *args], cwd=code_root, env=env)

    def catalog_problems(self, track: Track) -> list[str]:
        """Asserts without a message: the worker runs pytest with plain asserts (no rewriting, so
        imports stay cached), and a bare assert would fail with nothing for the learner to read."""
        import ast

        problems = []
        for path in sorted(track.tests.glob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Assert) and node.msg is None:
                    problems.append(f"{path.name}:{node.lineno}: assert without a message")
        return problems

    def test_sources(self, track: Track) -> dict[str, str]:
        """Each test function's source, by name, for results.json's test_code."""
        import ast

        sources: dict[str, str] = {}
        for path in sorted(track.tests.glob("test_*.py")):
            text = path.read_text(encoding="utf-8")
            for node in ast.parse(text).body:
                if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
                    sources[node.name] = ast.get_source_segment(text, node) or ""
        return sources

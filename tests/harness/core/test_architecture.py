"""The house's floors, held by a test: each module of course/ has a floor, and no import runs up one.

Every import is read from the source with `ast`, those inside functions too (a lazy import is an
arrow like any other); only imports under `if TYPE_CHECKING:` are left out: they never run, and name
types for the reader. Importing `a.b.c` imports the packages `a.b` and `a` too, so those count as
well. ARCHITECTURE.md draws the same floors. Besides the floors: the core never imports a language
package, nor does one language another; nothing under course.languages imports a command; no two
modules import each other, directly or around a circle; a language is named only in its own package
and in the registry; `course --help` loads none of pytest, jinja2 and yaml; and nothing outside the
fake model's package imports one of its private modules (`course.fake_model._wire`, ...): not the rest
of course/, not the tests, not the tooling (its white-box tests in tests/harness/fake_model_internals/
aside), only its public face, `course.fake_model`.

    python tests/harness/core/test_architecture.py [ROOT]    prints the floors and every arrow that
                                                            breaks a rule, for any checkout
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

from tiny import write_files

REPO = Path(__file__).resolve().parents[3]

# Low to high. A module's floor: its own name if listed, else the longest pattern `X.*` (X itself or
# anything under it) that covers it. A module may import its own floor and the floors below.
FLOORS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("ground", ("course", "course.errors", "course.cache", "course.rundir", "course.processes", "course.content",
                "course.selection", "course.regions", "course.results", "course.environment", "course.mutant",
                "course.languages", "course.languages.registry", "course.sandbox", "course.overlap")),
    ("data and contract", ("course.chapters", "course.signatures", "course.learner", "course.languages.protocol",
                           "course.services", "course.fake_model.*")),
    ("adapters", ("course.languages.*",)),
    ("runner", ("course.runner",)),
    ("check", ("course.check", "course.check.coverage")),
    ("engines", ("course.check.*", "course.pitfall_hints", "course.diffing", "course.scaffold", "course.watch",
                 "course.mutation.*", "course.selftest", "course.verify", "course.doctor", "course.grading.*")),
    ("commands", ("course.commands.*",)),
    ("front door", ("course.cli", "course.__main__")),
)
COMMANDS = ("course.commands", "course.cli", "course.__main__")
# Packages with a public face: their modules whose names start with "_" are theirs alone.
FACED = ("course.fake_model",)
# Outside course/, the one folder that may import them: the fake model's white-box tests.
WHITE_BOX = ("tests/harness/fake_model_internals",)
# What `course --help` must not load: the heavy libraries only some commands need.
HEAVY = ("pytest", "jinja2", "yaml")


@dataclass(frozen=True)
class Arrow:
    source: str  # the importing module
    target: str  # the module imported (or a package its import runs)
    line: int
    implied: bool = False  # a package imported because a module inside it was


def floor_of(module: str, floors: tuple[tuple[str, tuple[str, ...]], ...] = FLOORS) -> int | None:
    exact = {name: i for i, (_, names) in enumerate(floors) for name in names if not name.endswith(".*")}
    if module in exact:
        return exact[module]
    covering = [(len(name), i) for i, (_, names) in enumerate(floors) for name in names
                if name.endswith(".*") and (module == name[:-2] or module.startswith(name[:-1]))]
    return max(covering)[1] if covering else None


def modules(root: Path) -> dict[str, Path]:
    """Every module of the course package under `root`, by its dotted name (packages by their own)."""
    found = {}
    for path in sorted((root / "course").rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        if "_content" in parts or not (path.parent / "__init__.py").is_file():
            continue  # packaged content, or Python files that are not modules of the package
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def arrows(root: Path) -> dict[str, list[Arrow]]:
    """Each module's imports of course modules, as arrows."""
    known = modules(root)
    return {name: list(_arrows(name, path, known)) for name, path in known.items()}


def _arrows(name: str, path: Path, known: Mapping[str, Path]) -> Iterable[Arrow]:
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    seen: set[tuple[str, bool]] = set()
    for node in _runnable(tree.body):
        for target in _targets(node, package, known):
            chain = target.split(".")
            for depth in range(len(chain), 0, -1):  # the module, then the packages it runs
                imported = ".".join(chain[:depth])
                implied = depth < len(chain)
                if implied and (name == imported or name.startswith(imported + ".")):
                    break  # a module's own packages are imported before it anyway
                if imported in known and (imported, implied) not in seen and imported != name:
                    seen.add((imported, implied))
                    yield Arrow(name, imported, node.lineno, implied)


def _runnable(body: list[ast.stmt]) -> Iterable[ast.stmt]:
    """Every import statement that can run, at any depth; not those under `if TYPE_CHECKING:`."""
    for node in body:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            yield from _runnable(node.orelse)
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
            continue
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.stmt):
                yield from _runnable([child])
            else:  # handlers, match cases: statements nested one level further down
                yield from _runnable([c for c in ast.walk(child) if isinstance(c, ast.stmt)])


def _targets(node: ast.stmt, package: str, known: Mapping[str, Path]) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names if alias.name.split(".")[0] == "course"]
    assert isinstance(node, ast.ImportFrom)
    if node.level:
        base = package.split(".")[: len(package.split(".")) - node.level + 1]
        source = ".".join(base + ([node.module] if node.module else []))
    else:
        source = node.module or ""
    if source.split(".")[0] != "course":
        return []
    # `from package import module` imports the module; `from module import name`, the module
    return [f"{source}.{alias.name}" if f"{source}.{alias.name}" in known else source for alias in node.names]


def language_packages(root: Path) -> list[str]:
    """The language packages: course.languages.<language>, one folder each."""
    return sorted(p.parent.name for p in (root / "course" / "languages").glob("*/__init__.py"))


def problems(graph: Mapping[str, list[Arrow]], languages: Iterable[str],
             floors: tuple[tuple[str, tuple[str, ...]], ...] = FLOORS) -> list[str]:
    """Every arrow that breaks a rule of the house, as one line each."""
    found = []
    packages = {f"course.languages.{language}" for language in languages}

    def language_of(module: str) -> str:
        return next((p for p in packages if module == p or module.startswith(p + ".")), "")

    for name in sorted(graph):
        if floor_of(name, floors) is None:
            found.append(f"{name} has no floor (give it one in FLOORS and ARCHITECTURE.md)")
    for name, out in sorted(graph.items()):
        here = floor_of(name, floors)
        for arrow in out:
            there = floor_of(arrow.target, floors)
            where = f"{name}:{arrow.line} imports {arrow.target}"
            if here is not None and there is not None and there > here:
                found.append(f"{where}: up from {floors[here][0]} to {floors[there][0]}")
            mine, theirs = language_of(name), language_of(arrow.target)
            if theirs and not mine and not arrow.implied:
                found.append(f"{where}: the core imports a language package (ask course.languages instead)")
            elif theirs and mine and theirs != mine:
                found.append(f"{where}: one language imports another")
            if name.startswith("course.languages") and arrow.target.startswith(COMMANDS):
                found.append(f"{where}: a language imports a command")
            private = private_of(arrow.target)
            if private and not (name == private or name.startswith(private + ".")):
                found.append(f"{where}: a private module of {private}, from outside it (import its public face, {private})")
    found += [f"a circle of imports: {' -> '.join(circle)}" for circle in circles(graph)]
    return found


def private_of(module: str) -> str:
    """The faced package whose private module `module` is (a name under it starting with "_"), or ''."""
    for package in FACED:
        if module.startswith(package + ".") and any(part.startswith("_") for part in module[len(package) + 1:].split(".")):
            return package
    return ""


def private_imports(root: Path) -> list[str]:
    """Every import of a faced package's private module by a Python file outside course/ (the tests,
    the tooling, the chapters' catalogs), the white-box folders aside, as one line each."""
    found = []
    for path in sorted(root.rglob("*.py")):
        where = path.relative_to(root).as_posix()
        if where.startswith(("course/", ".git/", *(f"{folder}/" for folder in WHITE_BOX))) or "/_content/" in where:
            continue
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"), where)
        except (SyntaxError, UnicodeDecodeError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
            else:
                continue
            for name in names:
                private = private_of(name)
                if private:
                    found.append(f"{where}:{node.lineno} imports {name}: a private module of {private} (import its public face, {private})")
                    break
    return found


def circles(graph: Mapping[str, list[Arrow]]) -> list[list[str]]:
    """The groups of modules that import each other, directly or around a circle (Tarjan's
    strongly connected components), each group sorted. A package's own import of one of its
    modules and that module's implied import of the package are one package, not a circle."""
    edges = {name: sorted({a.target for a in out if not a.implied and a.target in graph}) for name, out in graph.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in edges[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return sorted(found)


# --- the house as it is ---------------------------------------------------------------------------


def test_every_module_has_a_floor_and_no_import_breaks_a_rule() -> None:
    assert problems(arrows(REPO), language_packages(REPO)) == []


def test_nothing_outside_the_fake_model_imports_its_private_modules() -> None:
    """course/ is held by the graph above; the tests, the tooling and the catalogs are read here."""
    assert private_imports(REPO) == []


def test_a_language_is_named_only_in_its_own_package_and_the_registry() -> None:
    """The core branches on no language: a language's name as a string appears nowhere in course/
    but its own package and course/languages/registry.py (docstrings and comments aside)."""
    names = set(language_packages(REPO))
    named = []
    for module, path in modules(REPO).items():
        if module == "course.languages.registry" or any(module.startswith(f"course.languages.{n}") for n in names):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        documents = {id(node.body[0].value) for node in ast.walk(tree)
                     if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                     and node.body and isinstance(node.body[0], ast.Expr)}
        named += [f"{module}:{node.lineno} {node.value!r}" for node in ast.walk(tree)
                  if isinstance(node, ast.Constant) and node.value in names and id(node) not in documents]
    assert named == []


def test_course_help_loads_no_heavy_library() -> None:
    code = ("import sys\nfrom course.cli import cli\ntry:\n    cli.main(['--help'], prog_name='course')\n"
            "except SystemExit:\n    pass\nprint(' '.join(m for m in sys.argv[1:] if m in sys.modules), file=sys.stderr)\n")
    done = subprocess.run([sys.executable, "-c", code, *HEAVY], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 0 and "Learner commands" in done.stdout, done.stderr
    assert done.stderr.strip() == "", f"`course --help` loaded {done.stderr.strip()}"


# --- the rules fail where they should --------------------------------------------------------------


def graph_of(*pairs: str) -> dict[str, list[Arrow]]:
    """A synthetic module graph: 'a > b' is an arrow from a to b."""
    graph: dict[str, list[Arrow]] = {}
    for pair in pairs:
        source, _, target = (part.strip() for part in pair.partition(">"))
        graph.setdefault(source, []).append(Arrow(source, target, 1))
        graph.setdefault(target, [])
    return graph


@pytest.mark.parametrize(("pairs", "expected"), [
    (["course.errors > course.check"], "course.errors:1 imports course.check: up from ground to check"),
    (["course.runner > course.commands.learner.check"], "up from runner to commands"),
    (["course.verify > course.languages.go.build"], "the core imports a language package"),
    (["course.languages.go.build > course.languages.python.worker"], "one language imports another"),
    (["course.languages.python.adapter > course.commands.shared"], "a language imports a command"),
    (["course.languages.python.launch > course.languages.python.worker",
      "course.languages.python.worker > course.languages.python.launch"],
     "a circle of imports: course.languages.python.launch -> course.languages.python.worker"),
    (["course.chapters > course.nowhere"], "course.nowhere has no floor"),
    (["course.services > course.fake_model._server"],
     "course.services:1 imports course.fake_model._server: a private module of course.fake_model, from outside it"),
])
def test_each_rule_fails_on_a_deliberate_bad_import(pairs: list[str], expected: str) -> None:
    found = problems(graph_of(*pairs), ["go", "python"])
    assert any(expected in line for line in found), found


def test_a_lazy_bad_import_in_a_real_module_is_found(tmp_path: Path) -> None:
    """The reader on a copy of the package with one bad import written inside a function."""
    shutil.copytree(REPO / "course", tmp_path / "course", ignore=shutil.ignore_patterns("__pycache__", "_content"))
    errors = tmp_path / "course" / "errors.py"
    errors.write_text(errors.read_text(encoding="utf-8")
                      + "\n\ndef _bad() -> None:\n    from course.commands.shared import echo  # noqa: F401\n",
                      encoding="utf-8")
    found = problems(arrows(tmp_path), language_packages(tmp_path))
    assert [line for line in found if line.startswith("course.errors:")] == [
        f"course.errors:{len(errors.read_text().splitlines())} imports course.commands.shared: up from ground to commands",
        f"course.errors:{len(errors.read_text().splitlines())} imports course.commands: up from ground to commands",
    ], found


def test_a_private_import_outside_the_fake_model_is_found(tmp_path: Path) -> None:
    """The rule on files: a test, a tool and a catalog that import a private module are named; the
    same import inside the package, in its white-box tests, or of the public face is not."""
    files = {
        "tests/harness/learner/test_bad.py": "from course.fake_model import _wire\n",
        "tooling/bench/bad.py": "import json\n\ndef f():\n    from course.fake_model._replies import text\n",
        "tests/python/ag09/test_bad.py": "import course.fake_model._state as state\n",
        "tests/harness/fake_model_internals/test_ok.py": "from course.fake_model import _contract\n",
        "tests/harness/fake_model/test_ok.py": "from course.fake_model import FakeModel, text\n",
        "course/fake_model/_app.py": "from course.fake_model import _chat\n",
    }
    write_files(tmp_path, files)
    assert [line.split(": a private")[0] for line in private_imports(tmp_path)] == [
        "tests/harness/learner/test_bad.py:1 imports course.fake_model._wire",
        "tests/python/ag09/test_bad.py:1 imports course.fake_model._state",
        "tooling/bench/bad.py:4 imports course.fake_model._replies",
    ]


if __name__ == "__main__":
    root = Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else REPO
    graph = arrows(root)
    for number, (floor, _) in reversed(list(enumerate(FLOORS))):
        print(f"{number} {floor}: {', '.join(sorted(m for m in graph if floor_of(m) == number))}")
    unplaced = sorted(m for m in graph if floor_of(m) is None)
    if unplaced:
        print(f"? no floor: {', '.join(unplaced)}")
    found = problems(graph, language_packages(root)) + private_imports(root)
    up = [line for line in found if ": up from " in line]
    print(f"\n{len(up)} arrows run up a floor; {len(found)} problems in all")
    for line in found:
        print(f"  {line}")

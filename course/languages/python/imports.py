"""What a worker may load before its run starts, read from the import statements of the catalog and
of the code under test, never by running them.

A worker started ahead of a save (`course watch`) must not hold any module of the code under test:
the run would test the code as it was, not as it is. So before its run it loads only modules that
cannot be the learner's: the standard library, installed packages and the harness, and the
catalog's own helper modules that import nothing of the learner's and do not read the run's
environment. The code under test is also kept off sys.path until the run starts (worker.run), so a
mistake here cannot load it either.
"""

from __future__ import annotations

import ast
import sys
from functools import lru_cache
from pathlib import Path
from typing import Iterable

# A module that reads these at import time depends on the run (COURSE_SCRATCH is made per run).
_ENVIRONMENT = {"environ", "getenv", "environb", "getenvb"}


def learner_packages(files: Iterable[str]) -> frozenset[str]:
    """The top-level names the code under test occupies ('agent' for agent/provider/sse.py)."""
    return frozenset(Path(name).parts[0].removesuffix(".py") for name in files)


def _read(path: Path) -> ast.Module | None:
    try:
        return ast.parse(path.read_bytes(), str(path))
    except (OSError, SyntaxError, ValueError):
        return None


def _module_level(tree: ast.AST) -> Iterable[ast.AST]:
    """The statements that run when the module is imported (not the bodies of its functions)."""
    for node in ast.iter_child_nodes(tree):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            yield node
            yield from _module_level(node)


def imported(tree: ast.Module, *, anywhere: bool = True) -> list[str]:
    """The absolute module names a module imports (relative imports are its own package's):
    anywhere in it, or only where importing the module runs them."""
    names = []
    for node in ast.walk(tree) if anywhere else _module_level(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.append(node.module)
    return names


def _names_environment(node: ast.AST) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr in _ENVIRONMENT
            or isinstance(node, ast.Name) and node.id in _ENVIRONMENT
            or isinstance(node, ast.alias) and node.name in _ENVIRONMENT)


def _reads_environment(tree: ast.Module) -> bool:
    """Whether importing the module reads the environment: a read in its top-level code (a class body
    included), or in a function that top-level code calls. A function that reads it only when a test
    calls it reads the run's environment, as it should."""
    functions = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
    readers = {node.name for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
               and any(_names_environment(inner) for inner in ast.walk(node))}
    pending: list[ast.AST] = [tree]
    while pending:  # the code that runs at import: everything outside function bodies (defaults included)
        node = pending.pop()
        if _names_environment(node):
            return True
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in readers:
            return True
        if isinstance(node, functions):
            pending.extend([*node.args.defaults, *node.args.kw_defaults] if not isinstance(node, ast.Lambda)
                           else [*node.args.defaults])
            pending.extend(getattr(node, "decorator_list", ()))
            continue
        pending.extend(ast.iter_child_nodes(node))
    return False


# What a file imported before the run may import: nothing that could be found in the learner's
# folder (which is off sys.path until the run starts, so importing it early would fail).
_KNOWN = frozenset(sys.stdlib_module_names) | {"pytest", "_pytest", "pluggy", "course"}


def self_contained(path: Path, folder: Path, learner: frozenset[str], seen: frozenset[Path] = frozenset()) -> bool:
    """Whether a catalog file can be imported before the run: it imports only the standard library,
    pytest, the harness and the folder's other self-contained modules (never the learner's, nor a
    module that might live beside their code), does not read the environment and names no pytest
    plugins (which could)."""
    tree = _read(path)
    if tree is None or _reads_environment(tree):
        return False
    if any(isinstance(node, ast.Name) and node.id == "pytest_plugins" for node in ast.walk(tree)):
        return False
    for name in imported(tree):
        top = name.partition(".")[0]
        local = folder / f"{top}.py"
        if top in learner:
            return False
        if local.is_file():
            if local not in seen and not self_contained(local, folder, learner, seen | {path}):
                return False
        elif top not in _KNOWN:
            return False
    return True


def stamps(tests_dir: Path) -> list[tuple[str, int, int]]:
    """The catalog's Python files as they are now (name, modification time in ns, size), and the
    conftest files of the folders above it."""
    paths = sorted(tests_dir.glob("*.py")) + [folder / "conftest.py" for folder in tests_dir.parents]
    found = []
    for path in paths:
        try:
            info = path.stat()
        except OSError:
            continue
        found.append((str(path), info.st_mtime_ns, info.st_size))
    return found


def conftests_self_contained(tests_dir: Path, files: tuple[str, ...],
                             catalog_stamps: list[tuple[str, int, int]] | None = None) -> bool:
    """Whether pytest may be set up, conftest files loaded, before the run starts: every conftest
    pytest would load for the catalog (its folder's and its parents') is self-contained. The answer
    is kept while the catalog's files are unchanged (`catalog_stamps`: `stamps(tests_dir)`, when the
    caller has it already)."""
    if catalog_stamps is None:
        catalog_stamps = stamps(tests_dir)
    return _conftests_self_contained(tests_dir, files, tuple(catalog_stamps))


# Bumped when what makes a file self-contained changes: answers kept under older rules are found again.
SELF_CONTAINED_RULES = 2

# Catalogs (with their learner's file lists) whose answer is kept: the newest this many.
CONFTESTS_KEPT = 64


@lru_cache(maxsize=None)
def _conftests_self_contained(tests_dir: Path, files: tuple[str, ...], stamps: tuple) -> bool:
    """Kept in the user's cache too, in one small file, by catalog and learner's file list: reading
    the files' syntax trees costs ~6 ms of every check, before its workers can start. Two checks
    writing at once may lose one answer: it is found again next time."""
    from course import cache

    kept_at = cache.folder() / "conftests.json"
    kept = cache.read_json(kept_at)
    kept = kept if isinstance(kept, dict) else {}
    key = "\0".join((f"rules {SELF_CONTAINED_RULES}", str(tests_dir), *files))
    now = [list(stamp) for stamp in stamps]
    known = kept.get(key)
    if isinstance(known, dict) and known.get("stamps") == now and isinstance(known.get("ahead"), bool):
        return known["ahead"]
    learner = learner_packages(files)
    conftests = [folder / "conftest.py" for folder in (tests_dir, *tests_dir.parents)]
    ahead = all(self_contained(path, path.parent, learner) for path in conftests if path.is_file())
    kept.pop(key, None)  # the newest go last: the oldest are dropped first
    kept[key] = {"stamps": now, "ahead": ahead}
    cache.write_json(kept_at, dict(list(kept.items())[-CONFTESTS_KEPT:]))
    return ahead


def ahead_of_run(tests_dir: Path, code_root: Path, files: Iterable[str]) -> list[str]:
    """Modules a run of the catalog on this code will import that may be loaded before it starts:
    what the catalog's files import that is neither the learner's nor a helper of the catalog's that
    is not self-contained, the self-contained helpers themselves, and the standard-library modules
    the code under test imports now (only the standard library: whatever else it names is the
    learner's business, and may be gone by the next save)."""
    files = tuple(files)
    learner = learner_packages(files)
    catalog = {path.stem: path for path in sorted(tests_dir.glob("*.py"))}
    wanted: dict[str, None] = {}
    for path in (path for name, path in catalog.items() if name == "conftest" or name.startswith("test_")):
        tree = _read(path)
        for name in imported(tree, anywhere=False) if tree else ():
            top = name.partition(".")[0]
            if top in learner:
                continue
            if top in catalog:
                helper = catalog[top]
                if top != "conftest" and not top.startswith("test_") and self_contained(helper, tests_dir, learner):
                    wanted[top] = None
                continue
            wanted[name] = None
    for name in files:
        tree = _read(code_root / name) if name.endswith(".py") else None
        for module in imported(tree, anywhere=False) if tree else ():
            if module.partition(".")[0] in sys.stdlib_module_names and module.partition(".")[0] not in learner:
                wanted[module] = None
    return list(wanted)

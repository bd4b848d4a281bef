"""Helpers for the harness's own tests: run `course` as a learner would, in a temporary repository."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
# The harness's tests are laid out by the wings of the command line: learner/, instructor/, core/
# (runner, protocol, architecture, results, the workers) and fake_model/ (its public face; the white-box
# tests of its private modules in fake_model_internals/); chapters/ holds what the
# course's own chapters promise across tracks and clients (both references agree on the shared
# fixtures; the proxy under the official SDK). Some share helpers across wings
# (`from test_learner_loop import CATALOG`): each wing's folder is importable by name.
WINGS = ("learner", "instructor", "core", "fake_model", "fake_model_internals", "chapters")
sys.path[:0] = [str(Path(__file__).resolve().parent / wing) for wing in WINGS]


@dataclass
class Ran:
    code: int
    out: str
    err: str


@pytest.fixture
def course():
    def run(*args: str, cwd: Path, env: dict[str, str] | None = None, timeout: float = 120) -> Ran:
        full_env = {**os.environ, "NO_COLOR": "1", "PYTHONPATH": str(REPO), **(env or {})}
        done = subprocess.run([sys.executable, "-m", "course", *args], cwd=cwd, env=full_env,
                              capture_output=True, text=True, timeout=timeout)
        return Ran(done.returncode, done.stdout, done.stderr)

    return run


@pytest.fixture
def learner(tmp_path: Path) -> Path:
    root = tmp_path / "my-agent"
    root.mkdir()
    (root / ".git").mkdir()  # a learner's repository
    return root


@pytest.fixture
def fm():  # noqa: ANN201
    """A course fake model on 127.0.0.1, stopped after the test."""
    from course import fake_model

    with fake_model.FakeModel() as server:
        yield server


@pytest.fixture
def sdk(fm):  # noqa: ANN001, ANN201
    """The official openai SDK (the `test` extra) pointed at the fake model, with no retries of its own."""
    openai = pytest.importorskip("openai")
    client = openai.OpenAI(base_url=fm.base_url, api_key="sk-test", max_retries=0, timeout=20)
    yield client
    client.close()


@contextmanager
def reference_package(chapter: str) -> Iterator[None]:
    """A chapter's reference importable as `agent` inside the block (every chapter's package is named
    `agent`); whatever `agent` modules were imported before are put back afterwards."""
    saved = {name: mod for name, mod in sys.modules.items() if name == "agent" or name.startswith("agent.")}
    for name in saved:
        del sys.modules[name]
    root = str(REPO / "reference" / "python" / chapter)
    sys.path.insert(0, root)
    try:
        yield
    finally:
        sys.path.remove(root)
        for name in [n for n in sys.modules if n == "agent" or n.startswith("agent.")]:
            del sys.modules[name]
        sys.modules.update(saved)


def load_module(name: str, path: Path):  # noqa: ANN201
    """The Python file at `path` imported as a module named `name` (a catalog's helpers, a test file of
    a chapter's catalog), without touching sys.path."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def json_differences(python: object, go: object, where: str = "") -> list[str]:
    """Where two JSON values (what two tracks of a chapter produced) differ, as paths."""
    if isinstance(python, dict) and isinstance(go, dict):
        found = []
        for key in sorted(set(python) | set(go)):
            if key not in python or key not in go:
                found.append(f"{where}/{key}: only in {'Go' if key in go else 'Python'}")
            else:
                found += json_differences(python[key], go[key], f"{where}/{key}")
        return found
    if isinstance(python, list) and isinstance(go, list) and len(python) == len(go):
        return [d for n, (p, g) in enumerate(zip(python, go)) for d in json_differences(p, g, f"{where}[{n}]")]
    return [] if python == go else [f"{where}: Python {json.dumps(python, ensure_ascii=False)[:300]}, Go {json.dumps(go, ensure_ascii=False)[:300]}"]


def copy_reference(chapter: str, into: Path) -> None:
    shutil.copytree(REPO / "reference" / "python" / chapter, into, dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns("__pycache__"))


def tree_digest(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


# The synthetic chapter (tests/harness/synthetic/): the harness's own tests run on a copy of it, so a
# change to the harness is tested on content that stays put, and a test may damage its copy freely.
SYNTHETIC = Path(__file__).resolve().parent / "synthetic"
SYN = "syn"
SYN_CATALOG = ["test_add", "test_add_cases", "test_total_of_the_fixture", "test_scratch_round_trip"]
collect_ignore = ["synthetic"]  # its catalog is the chapter's, not the harness's


@pytest.fixture
def content(tmp_path: Path) -> Path:
    """A fresh copy of the synthetic content folder."""
    root = tmp_path / "content"
    shutil.copytree(SYNTHETIC, root, ignore=shutil.ignore_patterns("__pycache__"))
    return root


@pytest.fixture
def syn(course, content: Path):  # noqa: ANN001, ANN201
    """`course` pointed at the synthetic content: syn(*args, cwd=...)."""

    def run(*args: str, cwd: Path, env: dict[str, str] | None = None, timeout: float = 60) -> Ran:
        return course(*args, cwd=cwd, env={"COURSE_CONTENT": str(content), **(env or {})}, timeout=timeout)

    return run


def syn_reference(content: Path, into: Path) -> None:
    shutil.copytree(content / "reference" / "python" / SYN, into, dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns("__pycache__"))


def start_in_process(content: Path, learner: Path) -> None:
    """`course start syn` in the learner's repository, run in this process (click's CliRunner): a
    test that needs a started chapter need not pay for a second interpreter to get one."""
    from click.testing import CliRunner

    from course import chapters
    from course import content as course_content
    from course.cli import cli

    def forget() -> None:
        course_content.root.cache_clear()
        chapters.load_all.cache_clear()

    forget()
    try:
        result = CliRunner().invoke(cli, ["start", SYN, "--dir", str(learner)], env={"COURSE_CONTENT": str(content)})
    finally:
        forget()
    assert result.exit_code == 0, result.output


@pytest.fixture
def started(content: Path, learner: Path) -> Path:
    """The learner's repository with the synthetic chapter started."""
    start_in_process(content, learner)
    return learner

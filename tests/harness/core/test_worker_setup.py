"""What a Python worker sets up before its tests: the pytest plugins it turns off, and the items it builds."""

from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest

from course.languages.python.worker import UNUSED_BY_CATALOGS
from tiny import CHAPTER, tiny_chapter

REPO = Path(__file__).resolve().parents[3]
CATALOGS = sorted((REPO / "tests" / "python").glob("*/*.py")) + sorted((REPO / "tests" / "harness" / "synthetic" / "tests").rglob("*.py"))


def test_no_catalog_uses_a_plugin_turned_off_for_catalogs() -> None:
    """UNUSED_BY_CATALOGS are off in catalog runs: a catalog that needed one would lose tests
    silently (a TestCase class not collected), so none may use them."""
    assert set(UNUSED_BY_CATALOGS) == {"unittest", "subtests", "setuponly", "setupplan", "debugging", "skipping",
                                       "tmpdir", "monkeypatch", "recwarn", "python_path"}, "what this test checks"
    fixtures_off = {"tmp_path", "tmp_path_factory", "tmpdir", "tmpdir_factory", "monkeypatch", "recwarn"}
    assert len(CATALOGS) > 10
    for path in CATALOGS:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            where = f"{path.relative_to(REPO)}:{getattr(node, 'lineno', '?')}"
            if isinstance(node, ast.ClassDef):
                bases = [ast.unparse(base) for base in node.bases]
                assert not any(base.endswith("TestCase") for base in bases), f"{where}: a unittest TestCase"
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                params = {a.arg for a in node.args.args}
                assert "subtests" not in params, f"{where}: the subtests fixture"
                assert not params & fixtures_off, f"{where}: the fixture(s) {params & fixtures_off}"
            if isinstance(node, ast.Attribute) and node.attr in ("skip", "skipif", "xfail") and "mark" in ast.unparse(node):
                raise AssertionError(f"{where}: a {node.attr} mark (skipping is off)")
            if isinstance(node, ast.Constant) and node.value in fixtures_off:
                raise AssertionError(f"{where}: the fixture {node.value!r} asked for by name")
            if isinstance(node, ast.Attribute) and node.attr in ("set_trace", "breakpoint"):
                raise AssertionError(f"{where}: a debugger (--pdb and its plugin are off)")
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                assert not node.value.startswith(("--setup-only", "--setup-plan", "--setup-show")), where


def test_a_worker_builds_items_only_for_the_tests_it_runs(course, tmp_path: Path) -> None:
    """Tests outside a worker's share (or left out by -k) get no items: pytest never generates
    their cases. Each test's cases are generated once in a run, whichever worker runs it."""
    log = tmp_path / "generated.log"
    tests = f'''\
def pytest_generate_tests(metafunc):
    with open({str(log)!r}, "a") as out:
        out.write(metafunc.function.__name__ + "\\n")
    metafunc.parametrize("b", [1, 2])


def test_one(b):
    assert calc.add(1, b) == 1 + b, "1 + b"


def test_two(b):
    assert calc.add(2, b) == 2 + b, "2 + b"


def test_three(b):
    assert calc.add(3, b) == 3 + b, "3 + b"


def test_four(b):
    assert calc.add(4, b) == 4 + b, "4 + b"
'''
    env = {"COURSE_CONTENT": str(tiny_chapter(tmp_path / "content", tests=tests, reference="def add(a, b):\n    return a + b\n"))}
    ran = course("check", CHAPTER, "--reference", "-k", "two or four", cwd=tmp_path, env=env)
    assert ran.code == 0 and "2 passed" in ran.out, ran.out + ran.err
    assert sorted(log.read_text().split()) == ["test_four", "test_two"]
    log.unlink()
    ran = course("check", CHAPTER, "--reference", "-v", cwd=tmp_path, env=env)
    assert ran.code == 0 and "4 passed" in ran.out, ran.out + ran.err
    assert sorted(log.read_text().split()) == ["test_four", "test_one", "test_three", "test_two"], "once each"
    order = [line.split()[1] for line in ran.out.splitlines() if line.strip().startswith("PASS")]
    assert order == ["test_one", "test_two", "test_three", "test_four"], ran.out


def test_a_catalog_run_looks_at_nothing_above_the_catalogs_folder(course, tmp_path: Path) -> None:
    """pytest with no ini file would start collecting at the top of the file system, listing every
    folder above the catalog and loading any conftest.py there: one that breaks every test sits
    above this catalog, and is never loaded."""
    content = tiny_chapter(tmp_path / "content", tests="def test_one():\n    assert calc.add(1, 2) == 3, '1 + 2'\n",
                           reference="def add(a, b):\n    return a + b\n")
    for above in (content, content / "tests", content / "tests" / "python"):
        (above / "conftest.py").write_text("raise RuntimeError('a conftest above the catalog was loaded')\n")
    ran = course("check", CHAPTER, "--reference", cwd=tmp_path, env={"COURSE_CONTENT": str(content)})
    assert ran.code == 0 and "1 passed" in ran.out, ran.out + ran.err


def test_tests_run_with_the_garbage_collector_on(course, tmp_path: Path) -> None:
    """A worker turns the collector off while it sets up and collects (nothing there is garbage),
    and on again before the first test: code under test runs as it would anywhere."""
    tests = '''\
import gc


def test_collector():
    assert gc.isenabled(), "the garbage collector is on during a test"
    assert calc.add(1, 1) == 2, "1 + 1"
'''
    content = tiny_chapter(tmp_path / "content", tests=tests, reference="def add(a, b):\n    return a + b\n")
    ran = course("check", CHAPTER, "--reference", cwd=tmp_path, env={"COURSE_CONTENT": str(content)})
    assert ran.code == 0 and "1 passed" in ran.out, ran.out + ran.err


def test_cores_of_their_own() -> None:
    """The workers of a split run get a core each; a run of one worker, or of more workers than cores, none."""
    from course.languages.python.launch import cores_of_their_own

    usable = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else set()
    assert cores_of_their_own(1) == [None], "a lone worker (one of many checks at once) is the scheduler's"
    assert cores_of_their_own(len(usable) + 1) == [None] * (len(usable) + 1)
    if len(usable) >= 2:
        cores = cores_of_their_own(2)
        assert len(set(cores)) == 2 and set(cores) <= usable, cores


@pytest.mark.skipif(not hasattr(os, "sched_getaffinity") or len(os.sched_getaffinity(0)) < 2,
                    reason="a worker keeps to a core of its own only where there are two to share out")
def test_the_workers_of_a_check_each_keep_to_a_core_of_their_own(course, tmp_path: Path) -> None:
    """`course check` splits a catalog between two workers; each runs on one core, not the same one."""
    log = tmp_path / "cores.log"
    tests = "".join(f'''

def test_{name}():
    import os
    with open({str(log)!r}, "a") as out:
        out.write(f"{{os.getpid()}} {{sorted(os.sched_getaffinity(0))}}\\n")
    assert calc.add(1, 1) == 2, "1 + 1"
''' for name in ("one", "two"))
    content = tiny_chapter(tmp_path / "content", tests=tests, reference="def add(a, b):\n    return a + b\n")
    ran = course("check", CHAPTER, "--reference", cwd=tmp_path, env={"COURSE_CONTENT": str(content)})
    assert ran.code == 0 and "2 passed" in ran.out, ran.out + ran.err
    seen = dict(line.split(" ", 1) for line in log.read_text().splitlines())
    assert len(seen) == 2, f"two workers, one test each: {seen}"
    cores = [ast.literal_eval(affinity) for affinity in seen.values()]
    assert all(len(c) == 1 for c in cores) and cores[0] != cores[1], cores


def test_each_worker_hosts_the_fake_model_its_tests_reach(course, tmp_path: Path) -> None:
    """The Python adapter's workers host the services a track lists (WorkerServices): the fake model a
    test reaches by COURSE_FAKE_MODEL_URL answers from the test's own process, one per worker."""
    tests = '''\
import http.client
import json
import os
import threading


def check_own_fake_model():
    url = os.environ["COURSE_FAKE_MODEL_URL"]
    port = int(url.rsplit(":", 1)[1].split("/")[0])
    assert f"fake-model:{port}" in {t.name for t in threading.enumerate()}, f"{url} is not served by this process"
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)  # no proxy from the environment
    try:
        conn.request("GET", "/_fake/state")
        assert json.load(conn.getresponse())["requests"] == [], "a fresh fake model has recorded nothing"
    finally:
        conn.close()


def test_one():
    check_own_fake_model()
    assert calc.add(1, 2) == 3, "1 + 2"


def test_two():
    check_own_fake_model()
    assert calc.add(2, 2) == 4, "2 + 2"
'''
    content = tiny_chapter(tmp_path / "content", tests=tests, reference="def add(a, b):\n    return a + b\n",
                           services=["fake-model"])
    ran = course("check", CHAPTER, "--reference", cwd=tmp_path, env={"COURSE_CONTENT": str(content)})
    assert ran.code == 0 and "2 passed" in ran.out, ran.out + ran.err

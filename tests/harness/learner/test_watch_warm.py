"""`course watch` keeps the next run's worker ready before the save. The one thing it must never do
is test the code as it was: a worker kept ready has imported nothing of the learner's, each run sees
the files as saved, and a warm run gives exactly the verdict a new worker gives, crashes and hangs
included. Nothing of it outlives the watch."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from conftest import SYN, syn_reference
from course.languages.python import imports

LONG = 120.0  # seconds a worker may take to get ready on a busy machine

# the cases of the synthetic catalog's test_add_cases
ADD_CASES = ["ones", "zero", "negative", "hundreds", "mixed", "both_negative", "thousand", "tens"]


@pytest.fixture
def syn_chapter(content: Path, started: Path, monkeypatch: pytest.MonkeyPatch):  # noqa: ANN201
    """The synthetic chapter loaded in this process, and a learner repository holding its reference."""
    from course import chapters
    from course import content as course_content

    def forget() -> None:
        course_content.root.cache_clear()
        chapters.load_all.cache_clear()

    monkeypatch.setenv("COURSE_CONTENT", str(content))
    forget()
    syn_reference(content, started)
    chapter = chapters.get(SYN)
    yield chapter, chapter.track("python"), started
    monkeypatch.delenv("COURSE_CONTENT")
    forget()


def statuses(result) -> dict[str, str]:  # noqa: ANN001
    return {f"{case.entry}[{case.case}]": case.status.value for entry in result.entries for case in entry.cases}


def check(chapter, track, root: Path, build: Path, **options):  # noqa: ANN001, ANN003, ANN201
    from course.check import run_check

    return run_check(chapter, track, root, scratch=build, **options)


def ready_spare(adapter):  # noqa: ANN001, ANN201
    """The worker kept ready, once it has set itself up and waits for its run."""
    assert adapter._standby.spares, "a worker is kept ready after a run"
    spare = adapter._standby.spares[0]
    assert spare.wait_until_ready(time.monotonic() + LONG), "the worker kept ready ended before its run"
    return spare


def test_a_worker_kept_ready_imports_nothing_of_the_learner_and_each_run_sees_the_saved_files(
        syn_chapter, tmp_path: Path) -> None:
    from course import languages

    chapter, track, learner = syn_chapter
    calc = learner / "pkg" / "calc.py"
    reference = calc.read_text()
    imported = tmp_path / "imported.txt"  # one line each time the learner's module is imported

    def save(offset: int) -> None:
        """The learner's module with a constant set at import time, and a trace of each import."""
        calc.write_text(reference.replace("return a + b", "return a + b + OFFSET")
                        + f"\n\nOFFSET = {offset}\nwith open({str(imported)!r}, 'a') as trace:\n    trace.write('x\\n')\n")

    def imports_so_far() -> int:
        return len(imported.read_text().splitlines()) if imported.exists() else 0

    adapter = languages.get("python")
    with adapter.standby():
        save(0)
        assert check(chapter, track, learner, tmp_path / "build").ok
        assert imports_so_far() == 1
        for step, offset in enumerate([1, 0, 2, 0, 0]):
            ready_spare(adapter)
            assert imports_so_far() == step + 1, "the worker kept ready imported the learner's module"
            save(offset)
            result = check(chapter, track, learner, tmp_path / "build")
            assert adapter._standby.handed == step + 2, "the run started on the worker kept ready"
            assert imports_so_far() == step + 2, "each run imports the learner's module again"
            failing = sorted(k for k, v in statuses(result).items() if v != "pass")
            if offset:
                assert failing == ["add[]"] + sorted(f"add_cases[{case}]" for case in ADD_CASES), \
                    f"OFFSET = {offset}: {failing}"
            else:
                assert result.ok, f"OFFSET = 0 passes: {failing} {result.problem}"


def test_two_saves_of_the_same_length_within_a_second_each_get_their_own_verdict(syn_chapter, tmp_path: Path) -> None:
    """Python's cached bytecode trusts a size and a time in whole seconds: a digit changed and saved
    again in the same second would be tested as it was before. The harness's cache is checked by
    content, for a new worker and a warm one alike."""
    from course import languages

    chapter, track, learner = syn_chapter
    calc = learner / "pkg" / "calc.py"
    good = calc.read_text()
    bad = good.replace("result = 0", "result = 1")
    assert len(bad) == len(good)
    stamp = calc.stat().st_mtime_ns

    def save(text: str) -> None:
        calc.write_text(text)
        os.utime(calc, ns=(stamp, stamp))  # the same modification time, to the nanosecond

    adapter = languages.get("python")
    for standby in (False, True):
        with adapter.standby() if standby else _nothing():
            for text, ok in ((bad, False), (good, True), (bad, False), (good, True)):
                if standby and adapter._standby.spares:
                    ready_spare(adapter)
                save(text)
                result = check(chapter, track, learner, tmp_path / "build")
                assert result.ok is ok, f"{'warm' if standby else 'new'} worker: {statuses(result)}"
            if standby:
                assert adapter._standby.handed == 4, "each run started on a worker made ready before it"


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


CRASH_AND_HANG = '''

_add = add
_total = total


def add(a, b):
    if a == 0:
        import os
        os._exit(3)  # the interpreter ends inside a test
    return _add(a, b)


def total(numbers):
    while len(numbers) == 2:  # the scratch test's numbers: it never ends
        pass
    return _total(numbers)
'''


def test_a_warm_run_gives_the_verdict_of_a_new_worker_when_the_code_crashes_or_hangs(syn_chapter, tmp_path: Path) -> None:
    from course import languages

    chapter, track, learner = syn_chapter
    calc = learner / "pkg" / "calc.py"
    calc.write_text(calc.read_text() + CRASH_AND_HANG)
    adapter = languages.get("python")
    new = check(chapter, track, learner, tmp_path / "build", timeout=2.0)
    with adapter.standby():
        check(chapter, track, learner, tmp_path / "build", timeout=2.0)
        ready_spare(adapter)
        warm = check(chapter, track, learner, tmp_path / "build", timeout=2.0)
        handed = adapter._standby.handed
    assert statuses(warm) == statuses(new), (statuses(warm), statuses(new))
    assert statuses(new)["add_cases[zero]"] == "error" and statuses(new)["scratch_round_trip[]"] == "timeout"
    assert statuses(new)["add_cases[negative]"] == "pass", "the tests after a crash still run"
    assert handed >= 2, "the warm run and the workers it restarted after the crash and the hang were kept ready"


def test_the_worker_kept_ready_ends_with_the_watch(syn_chapter, tmp_path: Path) -> None:
    from course import languages

    chapter, track, learner = syn_chapter
    adapter = languages.get("python")
    with adapter.standby():
        check(chapter, track, learner, tmp_path / "build")
        spare = ready_spare(adapter)
        pid = spare.process.pid
        assert Path(f"/proc/{pid}").exists() or os.kill(pid, 0) is None
        stderr = Path(spare.stderr.name)
    assert not Path(f"/proc/{pid}").exists(), "the worker kept ready was reaped"
    assert not stderr.exists(), "its stderr file was removed"
    assert adapter._standby is None


@pytest.mark.parametrize("mutant_id", ["s01", "s21"])
def test_warm_and_new_workers_agree_on_ag01_mutants(mutant_id: str, learner: Path, tmp_path: Path) -> None:
    """On the real catalog, with its conftest set up ahead, helpers loaded ahead and a fake model."""
    import shutil

    from course import chapters, languages
    from course.mutant import apply

    chapter = chapters.get("ag01")
    track = chapter.track("python")
    shutil.copytree(track.reference, learner, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__"))
    mutant = next(m for m in track.mutants if m.id == mutant_id)
    apply(mutant, learner)
    assert imports.conftests_self_contained(track.tests.resolve(), tuple(track.files)), "ag01's conftest is set up ahead"
    new = check(chapter, track, learner, tmp_path / "build")
    adapter = languages.get("python")
    with adapter.standby():
        check(chapter, track, learner, tmp_path / "build")
        ready_spare(adapter)
        warm = check(chapter, track, learner, tmp_path / "build")
        assert adapter._standby.handed >= 1
    assert not new.ok and statuses(warm) == statuses(new)


# -- what may be loaded before a run ------------------------------------------------------------------


def test_only_self_contained_catalog_files_are_loaded_before_the_run(tmp_path: Path) -> None:
    tests = tmp_path / "tests"
    tests.mkdir()
    files = ("agent/__init__.py", "agent/core.py", "solo.py")
    (tests / "helper_clean.py").write_text("import json\nimport socket\n")
    (tests / "helper_learner.py").write_text("import json\nfrom agent import core\n")
    (tests / "helper_indirect.py").write_text("import helper_learner\n")
    (tests / "helper_env.py").write_text("import os\nFIXTURES = os.environ['COURSE_FIXTURES']\n")
    (tests / "helper_getenv.py").write_text("from os import getenv\n")
    (tests / "helper_solo.py").write_text("def f():\n    import solo\n")
    learner = frozenset(imports.learner_packages(files))
    assert learner == {"agent", "solo"}
    verdicts = {name: imports.self_contained(tests / f"{name}.py", tests, learner)
                for name in ("helper_clean", "helper_learner", "helper_indirect", "helper_env", "helper_getenv", "helper_solo")}
    assert verdicts == {"helper_clean": True, "helper_learner": False, "helper_indirect": False,
                        "helper_env": False, "helper_getenv": False, "helper_solo": False}

    (tests / "test_x.py").write_text("import decimal\nimport helper_clean\nimport helper_env\nfrom agent.core import f\n"
                                     "import solo\n\ndef test_f():\n    import fractions\n")
    code = tmp_path / "code"
    (code / "agent").mkdir(parents=True)
    (code / "agent" / "core.py").write_text("import statistics\nimport agent.other\nimport not_a_stdlib_module\n")
    ahead = imports.ahead_of_run(tests, code, files)
    assert "decimal" in ahead and "helper_clean" in ahead and "statistics" in ahead
    for never in ("helper_env", "agent.core", "agent.other", "solo", "not_a_stdlib_module", "fractions"):
        assert never not in ahead, never


def test_a_conftest_that_imports_the_learner_or_reads_the_environment_is_loaded_with_the_run(tmp_path: Path) -> None:
    files = ("agent/core.py",)
    for text, ahead in (("import pytest\n", True), ("from agent import core\n", False),
                        ("import helpers_beside_the_code\n", False),  # e.g. in the learner's repository
                        ("import os\nROOT = os.environ.get('COURSE_SCRATCH')\n", False),
                        # read when a test calls it: the run's environment, so it may load ahead
                        ("import os\ndef url():\n    return os.environ['COURSE_FAKE_MODEL_URL']\n", True),
                        ("import os\ndef url():\n    return os.environ['COURSE_FAKE_MODEL_URL']\nURL = url()\n", False),
                        ("import os\nclass Fake:\n    url = os.environ.get('COURSE_FAKE_MODEL_URL')\n", False),
                        ("pytest_plugins = ['x']\n", False)):
        tests = tmp_path / f"case{len(list(tmp_path.iterdir()))}" / "tests"
        tests.mkdir(parents=True)
        (tests / "conftest.py").write_text(text)
        assert imports.conftests_self_contained(tests, files) is ahead, text


def test_whether_conftests_load_ahead_is_kept_between_runs_while_the_catalog_is_unchanged(tmp_path: Path,
                                                                                          monkeypatch) -> None:  # noqa: ANN001
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    tests = tmp_path / "tests"
    tests.mkdir()
    files = ("agent/core.py",)

    def answer() -> bool:
        imports._conftests_self_contained.cache_clear()  # as a new process would
        return imports.conftests_self_contained(tests, files)

    (tests / "conftest.py").write_text("import pytest\n")
    assert answer() is True
    kept = tmp_path / "cache" / "course" / "conftests.json"
    kept.write_text(kept.read_text().replace("true", "false"))  # proves the next answer is the kept one
    assert answer() is False
    (tests / "conftest.py").write_text("from agent import core\n")  # the catalog changed: read again
    assert answer() is False
    (tests / "conftest.py").write_text("import pytest, json\n")
    assert answer() is True
    kept.write_text("{not json")
    assert answer() is True
    (tests / "helper.py").write_text("x = 1\n")  # any catalog file changed: read again, same answer
    assert answer() is True
    monkeypatch.setattr(imports, "CONFTESTS_KEPT", 3)
    for other in range(5):  # other catalogs: the file keeps the newest answers only
        imports._conftests_self_contained.cache_clear()
        imports.conftests_self_contained(tmp_path / f"other{other}", files)
    assert len(json.loads(kept.read_text())) == 3


def test_a_worker_set_up_before_the_catalog_changed_is_not_used(syn_chapter, tmp_path: Path) -> None:
    """An instructor editing the catalog while watching: the conftest and helpers a kept worker
    loaded may be old, so the next run starts a new worker."""
    from course import languages

    chapter, track, learner = syn_chapter
    adapter = languages.get("python")
    with adapter.standby():
        assert check(chapter, track, learner, tmp_path / "build").ok
        old = ready_spare(adapter)
        conftest = track.tests / "conftest.py"
        conftest.write_text("import pytest\n\n\n@pytest.fixture\ndef unused():\n    return 1\n")
        assert check(chapter, track, learner, tmp_path / "build").ok
        assert old.process.exitcode == -9, "the worker set up before the change was killed unused"
        new = ready_spare(adapter)
        handed = adapter._standby.handed
        assert check(chapter, track, learner, tmp_path / "build").ok
        assert adapter._standby.handed == handed + 1 and new.process.exitcode == 0, "the one set up after it was used"


def test_learner_files_are_cached_checked_by_content_and_written_only_when_they_change(tmp_path: Path) -> None:
    import importlib.util

    from course.languages.python import bytecode

    source = tmp_path / "code" / "mod.py"
    source.parent.mkdir()
    source.write_text("X = 1\n")
    cache = tmp_path / "cache"
    bytecode.compile_checked(source, cache)
    entry = bytecode.cache_path(cache, source)
    data = entry.read_bytes()
    assert data[:4] == importlib.util.MAGIC_NUMBER and int.from_bytes(data[4:8], "little") == 0b11, "checked hash"
    assert data[8:16] == importlib.util.source_hash(source.read_bytes())
    written = entry.stat().st_mtime_ns
    bytecode.compile_checked(source, cache)
    assert entry.stat().st_mtime_ns == written, "an unchanged file is not written again"
    source.write_text("X = 2\n")
    bytecode.compile_checked(source, cache)
    assert entry.read_bytes()[8:16] == importlib.util.source_hash(b"X = 2\n")
    source.write_text("def broken(:\n")
    with pytest.raises(SyntaxError):
        bytecode.compile_checked(source, cache)
    (tmp_path / "blocked").write_text("a file where the cache's folder would go")
    source.write_text("X = 3\n")
    bytecode.compile_checked(source, tmp_path / "blocked")  # a cache that cannot be written is no error
    assert sorted(p.name for p in entry.parent.iterdir()) == [entry.name], "no temporary file left"

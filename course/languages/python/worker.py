"""The child process that runs a Python catalog, forked from the harness or from a fork server that
has pytest imported.

It puts the code under test first on sys.path, imports the chapter's modules (so code that fails at
import time is one clear message, not a collection failure), then runs pytest in-process with a
plugin that keeps the catalog's order, bounds each test with a timer, and sends one typed event per
message (course.languages.protocol) on a dedicated pipe: the learner's prints cannot corrupt it, and
a test that kills the interpreter leaves behind exactly the events written before it.
"""

from __future__ import annotations

import errno
import gc
import os
import signal
import sys
import time
import traceback
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import pytest

from course import content, processes, services
from course.results import Status
from course.languages.python.handshake import WAITING
from course.languages.protocol import CaseFinished, CaseId, Collected, Event, Finished, Problem, encode


class TestTimeout(BaseException):
    """Raised in the test by the per-test timer. A BaseException, so `except Exception` in learner
    code cannot swallow it."""

    __test__ = False  # not a test class, whatever pytest thinks of the name


class Events:
    def __init__(self, channel: Connection) -> None:
        self.channel = channel

    def send(self, event: Event) -> None:
        self.channel.send_bytes(encode(event))

    def waiting(self) -> None:
        self.channel.send_bytes(WAITING)


PACKAGE = str(Path(__file__).resolve().parents[2])  # the course package: never the learner's code


def _inside(path: str, root: str) -> bool:
    if not root or path.startswith("<"):  # "<frozen importlib._bootstrap>", "<string>"
        return False
    try:
        return os.path.commonpath([os.path.abspath(path), root]) == root
    except ValueError:
        return False


def _learners(path: str, code_root: str, tests_root: str) -> bool:
    """A frame of the code under test: in its folder, but not the catalog, the harness, or an
    installed package (a virtual environment inside the learner's repository)."""
    return (_inside(path, code_root) and not _inside(path, tests_root) and not _inside(path, PACKAGE)
            and "site-packages" not in Path(path).parts)


def locate(tb_entries: list[tuple[str, int]], code_root: str, tests_root: str) -> tuple[str, str]:
    """The deepest frame in the learner's code and the deepest in the test file, as 'file:line'."""
    frames, test_line = learner_frames(tb_entries, code_root, tests_root)
    return (frames[-1] if frames else ""), test_line


def learner_frames(tb_entries: list[tuple[str, int]], code_root: str, tests_root: str) -> tuple[tuple[str, ...], str]:
    """Every frame in the learner's code, outermost first, and the deepest in the test file, as 'file:line'."""
    frames: list[str] = []
    test_line = ""
    for filename, lineno in tb_entries:
        if _inside(filename, tests_root):
            test_line = f"{os.path.basename(filename)}:{lineno}"
        elif _learners(filename, code_root, tests_root):
            frames.append(f"{os.path.relpath(filename, code_root)}:{lineno}")
    return tuple(frames), test_line


def failed_at(exc: BaseException | None, tb_entries: list[tuple[str, int]], tests_root: str) -> str:
    """Which check of the test failed, and how: the test files' lines on the way down, and the
    exception's type ('test_ag01.py:700>test_ag01.py:41 AssertionError'). Two bugs that break the
    same case at different asserts differ here, which is what tells their pitfalls apart."""
    if exc is None or isinstance(exc, TestTimeout):  # where a timer fires is chance, not a place
        return "timeout" if exc is not None else ""
    lines = [f"{os.path.basename(f)}:{n}" for f, n in tb_entries if _inside(f, tests_root)]
    return ">".join(lines) + f" {type(exc).__name__}"


def details(exc: BaseException, tests_root: str) -> str:
    """The traceback from the test function down: pytest's own frames above it help nobody."""
    tb = exc.__traceback__
    while tb is not None and not _inside(tb.tb_frame.f_code.co_filename, tests_root):
        tb = tb.tb_next
    return "".join(traceback.format_exception(type(exc), exc, tb or exc.__traceback__)).rstrip()


def short_message(exc: BaseException, limit: int = 12, *, write_limit: int | None = None, test: str = "") -> str:
    if _too_large(exc):  # the write limit (processes.limit_file_size), wherever the failing write was
        return processes.file_too_large(write_limit)
    if isinstance(exc, OSError) and _READS_TERMINAL in str(exc):  # input(), breakpoint(), pdb.set_trace()
        return ("it read from the terminal (input(), breakpoint()), which a check does not give: "
                f"`course check --pdb {test or 'TEST'}` runs it alone with your terminal")
    if isinstance(exc, (AssertionError, TestTimeout)):
        text = str(exc) or "assertion failed"
    elif isinstance(exc, NotImplementedError):
        text = f"not implemented yet: {exc}" if str(exc) else "not implemented yet"
    elif isinstance(exc, SystemExit):
        text = f"the code called sys.exit({exc.code!r})"
    else:
        text = "".join(traceback.format_exception_only(type(exc), exc)).strip()
    lines = text.splitlines()
    return "\n".join(lines[:limit] + (["..."] if len(lines) > limit else []))


# What pytest's captured stdin says when read (its advice, -s, is an option of pytest's, not of check's).
_READS_TERMINAL = "reading from stdin while output is captured"


def _too_large(exc: BaseException | None) -> bool:
    """Whether the exception, or one it was raised from or during, is a write refused for its size."""
    seen = 0
    while exc is not None and seen < 10:
        if isinstance(exc, OSError) and exc.errno == errno.EFBIG:
            return True
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return False


def classify(exc: BaseException, when: str) -> Status:
    if isinstance(exc, TestTimeout):
        return Status.TIMEOUT
    if when != "call":
        return Status.ERROR
    # pytest.raises and pytest.fail report a wrong result, like an assert does
    if isinstance(exc, (AssertionError, NotImplementedError, pytest.fail.Exception)):
        return Status.FAIL
    return Status.ERROR


def _case_of(nodeid: str) -> str:
    return nodeid[nodeid.index("[") + 1 : -1] if nodeid.endswith("]") and "[" in nodeid else ""


def shuffled_rank(seed: int, nodeid: str) -> bytes:
    """A case's place in the shuffled order: drawn from the seed and the case alone, so a worker
    started again after a crash runs the remaining cases in the same order as the first would have."""
    import hashlib

    return hashlib.sha256(f"{seed}:{nodeid}".encode()).digest()


MAX_OUTPUT = 20_000  # characters of a test's printed output kept


def kept_output(printed: str) -> str:
    """What is kept of a test's printed output: all of it, or its last MAX_OUTPUT characters (from
    the start of a line) after a line saying how much came before."""
    if len(printed) <= MAX_OUTPUT:
        return printed
    tail = printed[-MAX_OUTPUT:]
    tail = tail[tail.find("\n") + 1:] if "\n" in tail[:-1] else tail
    return (f"[the first {len(printed) - len(tail):,} characters this test printed are left out; "
            f"its last {len(tail):,} follow]\n{tail}")


class CatalogPlugin:
    """Runs one catalog run inside pytest: the run's own spec arrives at begin() (see `run`)."""

    def __init__(self, ready: dict[str, Any], events: Events, orders: Connection, spec: dict[str, Any] | None) -> None:
        self.code_root = os.path.realpath(ready["code_root"])
        self.tests_root = os.path.realpath(ready["tests_dir"])
        self.modules: list[str] = ready.get("modules", [])
        self.ready = ready
        self.services = ExitStack()  # the services this worker hosts, started with its run
        self.events = events
        self.orders = orders
        self.given = spec  # the run's spec, when it came with the process (course check)
        self.spec: dict[str, Any] | None = None
        self.measure = None  # coverage.py's recorder, when the run asks for coverage
        self.path_at_setup = set(sys.path)
        self.current: dict[str, Any] = {}
        # A case's duration is the worker's whole time on it, from the end of the case before (the
        # first: from its start), not only pytest's timings of its phases: the hooks around them
        # cost a light test as much again, and the runner shares tests out by these durations.
        self.last_end: float | None = None  # None until a test starts

    @property
    def ran(self) -> bool:
        """Whether any test started."""
        return self.last_end is not None

    def begin(self) -> None:
        """Wait for the run's spec, then put the code under test on the path and import it, fresh.
        Everything before this is the same for every run of the catalog on this code."""
        if self.spec is not None:
            return
        early = learner_modules(self.code_root, self.tests_root)
        gc.freeze()  # what is loaded so far lives as long as the worker: later collections skip it
        self.events.waiting()
        spec = self.spec = self.given or self.orders.recv()
        self.orders.close()
        self.entries: dict[str, str] = spec["names"]  # test function name -> catalog name, in catalog order
        self.order = {name: i for i, name in enumerate(self.entries)}
        self.shuffle = spec.get("shuffle")  # a seed: run the cases in an order drawn from it
        self.skip = set(spec.get("skip", ()))
        self.timeout = float(spec["timeout"])
        self.max_file_bytes = spec.get("max_file_bytes")
        processes.limit_file_size(self.max_file_bytes)  # before any code of the learner's runs
        if early:  # the harness's own mistake; a run on code imported before its save could lie
            self.events.send(Problem(f"internal error: {early[0]} was imported before the run started"))
            _end()
        # The code under test goes where it would have been had it been first on the path from the
        # start: behind what was put in front since (pytest puts the catalog's folder first).
        front = next((i for i, p in enumerate(sys.path) if p in self.path_at_setup), len(sys.path))
        sys.path.insert(front, self.code_root)
        os.chdir(self.code_root)
        os.environ.update(spec["env"])  # what the catalog needs from the harness (COURSE_FIXTURES, ...)
        for name in self.ready.get("services", ()):  # this worker's own (WorkerServices); they end with it
            os.environ.update(self.services.enter_context(services.start(name)))
        self.measure = _start_coverage(spec.get("coverage"))
        with timer(self.timeout, f"took longer than {self.timeout:g} s"):
            problem = import_modules(self.modules, self.code_root, self.max_file_bytes)
        if problem:
            _save_coverage(self.measure)
            self.events.send(Problem(problem))
            _end()

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection(self, session) -> None:  # noqa: ANN001
        self.begin()  # a worker that set pytest up ahead waits here for its run

    def pytest_configure(self, config) -> None:  # noqa: ANN001
        # Python's own traceback format: what -v shows, and far cheaper for pytest to build than
        # its own, which matters when a mutant fails dozens of cases.
        config.option.tbstyle = "native"

    # Collection: only catalog tests, in catalog order, minus those already run by an earlier worker.
    @pytest.hookimpl(tryfirst=True)
    def pytest_pycollect_makeitem(self, collector, name, obj):  # noqa: ANN001, ANN201
        """No items for a module's test functions that this run does not run (another worker's
        share, or tests -k left out): building a parametrized test's items costs more than
        collecting the rest. Tests in classes are left to the filter below."""
        if isinstance(collector, pytest.Module) and name not in self.order and collector.istestfunction(obj, name):
            return []
        return None

    def pytest_collection_modifyitems(self, session, config, items) -> None:  # noqa: ANN001
        kept = [i for i in items if i.originalname in self.order and i.nodeid not in self.skip]
        kept.sort(key=lambda i: self.order[i.originalname])  # stable: cases keep file order
        if self.shuffle is not None:
            kept.sort(key=lambda i: shuffled_rank(self.shuffle, i.nodeid))
        dropped = [i for i in items if i not in kept]
        if dropped:
            config.hook.pytest_deselected(items=dropped)
        items[:] = kept
        # pytest runs the items in this order, each after the one before it ends: the runner knows
        # which case runs without a CaseStarted for each
        self.events.send(Collected(tuple(CaseId(i.nodeid, self.entries[i.originalname], _case_of(i.nodeid)) for i in kept),
                                   starts_said=False))

    def pytest_collection_finish(self, session) -> None:  # noqa: ANN001
        # Everything imported so far (pytest, the harness, the catalog, the code under test) lives
        # until the worker ends: freezing it keeps every later collection small, and catalogs that
        # collect garbage after each test to find unclosed sockets would otherwise rescan it all.
        gc.collect()
        gc.freeze()
        gc.enable()  # off since the worker started (run): the tests run as they would anywhere

    def pytest_collectreport(self, report) -> None:  # noqa: ANN001
        if report.failed:
            text = str(report.longrepr).strip().splitlines()
            self.events.send(Problem(f"{report.nodeid or 'the catalog'} could not be collected: "
                                     + (text[-1] if text else "unknown error")))

    def pytest_runtest_logstart(self, nodeid, location) -> None:  # noqa: ANN001
        self.current = {"key": nodeid, "status": Status.PASS, "duration": 0.0}
        if self.last_end is None:
            self.last_end = time.perf_counter()

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item):  # noqa: ANN001, ANN201
        with timer(self.timeout, f"the test took longer than {self.timeout:g} s (use --timeout to allow more)"):
            return (yield)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item, call):  # noqa: ANN001, ANN201
        report = yield
        self.record(report, call)
        return report

    def record(self, report, call) -> None:  # noqa: ANN001
        if report.skipped and call.when in ("setup", "call"):
            self.current["status"] = Status.SKIP
        if not report.failed or self.current["status"] not in (Status.PASS, Status.SKIP):
            return  # keep the first failure: later phases usually fail because of it
        exc = call.excinfo.value if call.excinfo else None
        entries = [(str(e.path), e.lineno + 1) for e in call.excinfo.traceback] if call.excinfo else []
        frames, test_line = learner_frames(entries, self.code_root, self.tests_root)
        self.current.update(
            status=classify(exc, call.when) if exc is not None else Status.ERROR,
            message=short_message(exc, write_limit=self.max_file_bytes, test=report.nodeid.split("::")[-1].split("[")[0])
            if exc is not None else str(report.longrepr)[:500],
            where=frames[-1] if frames else "",
            test_line=test_line,
            details=details(exc, self.tests_root) if exc is not None else str(report.longrepr),
            failed_at=failed_at(exc, entries, self.tests_root),
            # where a timer fires is chance, not a place: a timeout's frames say nothing
            frames=() if isinstance(exc, TestTimeout) else frames,
        )

    def pytest_runtest_logreport(self, report) -> None:  # noqa: ANN001
        if report.when == "call" and report.capstdout:
            # the last lines, whole: the report counts them, -v shows them, saying what was left out
            self.current["output"] = kept_output(report.capstdout)

    def pytest_runtest_logfinish(self, nodeid, location) -> None:  # noqa: ANN001
        now = time.perf_counter()
        self.current["duration"] = now - self.last_end
        self.last_end = now
        self.events.send(CaseFinished(**self.current))


def import_modules(modules: list[str], code_root: str, write_limit: int | None = None) -> str:
    """Import the learner's modules; the first failure as one readable line, or ''."""
    import importlib

    for name in modules:
        try:
            importlib.import_module(name)
        except SyntaxError as exc:
            path = os.path.relpath(exc.filename or "?", code_root)
            return f"{path}:{exc.lineno}: syntax error: {exc.msg}"
        except TestTimeout as exc:
            frames = [(f.filename, f.lineno or 0) for f in traceback.extract_tb(exc.__traceback__)]
            where, _ = locate(frames, os.path.realpath(code_root), "")
            return f"{where + ': ' if where else ''}importing {name} {exc}: code that runs at import time never ends"
        except ModuleNotFoundError as exc:
            if exc.name in modules:  # one of the chapter's own files is missing
                path = exc.name.replace(".", "/") + ".py"
                return f"{path} is missing (importing {name}); `course start` writes missing stubs again"
            return _import_failure(name, exc, code_root)
        except BaseException as exc:  # noqa: BLE001 - whatever the import raised is the learner's message
            if _too_large(exc):
                return _import_failure(name, exc, code_root, processes.file_too_large(write_limit))
            return _import_failure(name, exc, code_root)
    return ""


def _import_failure(name: str, exc: BaseException, code_root: str, said: str = "") -> str:
    """One line for an import that failed: where in the learner's code, and what. The module named
    is the one the failing line belongs to; the one the harness was importing is said after it when
    that is another (its import ran the other's code)."""
    frames = [(f.filename, f.lineno or 0) for f in traceback.extract_tb(exc.__traceback__)]
    where, _ = locate(frames, os.path.realpath(code_root), "")
    what = said or f"{type(exc).__name__}: {exc}"
    if not where:
        return f"importing {name} failed: {what}"
    failing = where.rsplit(":", 1)[0].removesuffix(".py").removesuffix("/__init__").replace("/", ".")
    if failing == name:
        return f"{where}: importing {name} failed: {what}"
    return f"{where}: {what} (in {failing}, run as {name} was imported)"


# pytest's plugins that a catalog run does not use: without them each test costs about half as much.
# faulthandler stays: it writes the traceback of a test that crashes the interpreter.
UNUSED_PLUGINS = ("cacheprovider", "terminal", "pastebin", "logging", "warnings", "unraisableexception",
                  "threadexception", "doctest", "junitxml", "stepwise", "legacypath")
# And those that only the course's own catalogs are known not to use (a harness test checks it):
# TestCase classes, the subtests fixture, --setup-only and --setup-plan, --pdb, skip and xfail
# marks, the tmp_path, monkeypatch and recwarn fixtures, the pythonpath ini setting. A learner's
# own tests (`course selftest`) keep them. Each plugin costs its registration (pytest scans every
# name a plugin module holds for fixtures, in every worker), and unittest its import.
UNUSED_BY_CATALOGS = ("unittest", "subtests", "setuponly", "setupplan", "debugging", "skipping", "tmpdir",
                      "monkeypatch", "recwarn", "python_path")


def learner_modules(code_root: str, tests_root: str) -> list[str]:
    """The modules of the code under test this process has imported."""
    inside = os.path.join(code_root, "")
    return [name for name, module in list(sys.modules.items())
            if (getattr(module, "__file__", None) or "").startswith(inside)
            and _learners(module.__file__, code_root, tests_root)]


def run(ready: dict[str, Any], channel: Connection, orders: Connection, spec: dict[str, Any] | None = None) -> None:
    """One catalog run in this (freshly forked) process, in two steps. First it gets ready with
    what is the same for every run of this catalog on this code (`ready`): the harness's modules,
    pytest, the modules the catalog imports that are not the code under test, and, when the
    catalog's conftest files allow it (`ahead`), pytest's configuration and the conftest files
    themselves. The code under test is kept off sys.path until then, so none of it can be
    imported early. Then it waits for the run's spec on `orders` (names, skip, timeout, env, ...),
    imports the code under test as it is at that moment, collects and runs, reporting on `channel`.
    `course check` gives the spec with the process (`spec`); `course watch` starts the next worker
    ahead of the save and sends it then."""
    processes.die_with_parent(os.getppid())  # the harness killed by SIGKILL or a closed terminal: end too
    # Until its tests start, the worker only builds what lives on (pytest's set-up, the catalog, the
    # code under test): no garbage to collect, so no collections (pytest_collection_finish turns the
    # collector on again).
    gc.disable()
    if ready.get("core") is not None:
        _keep_to(ready["core"])
    os.setsid()  # its own process group: the supervisor's kill reaches whatever a test spawns
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a forked harness's handler is not ours
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    _isolate_streams(ready["stderr_path"])
    events = Events(channel)
    code_root = os.path.realpath(ready["code_root"])
    # The code under test comes first once the run starts (CatalogPlugin.begin); until then it is
    # not on the path at all, nor is the folder the command was started in (a learner's own
    # `agent/` must not shadow the reference under --reference, and vice versa).
    here = os.path.realpath(os.getcwd())
    sys.path[:] = [p for p in sys.path if p and os.path.realpath(p) not in (here, code_root)]
    sys.path.append(str(content.HARNESS_ROOT))
    os.chdir(code_root)
    # Compiled files go to the harness's own cache, never into the learner's tree or the reference,
    # and are written there even where PYTHONDONTWRITEBYTECODE is set: the catalog's files are
    # compiled once, not at every run.
    sys.pycache_prefix = ready["pycache"]
    sys.dont_write_bytecode = False
    # No third-party pytest plugins: the catalog needs none, and whatever else is installed
    # (anyio, trio, ...) costs start-up time and could change behaviour.
    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    if ready.get("preload"):
        _preload(ready["tests_dir"], code_root, ready["files"])
    for name in ready.get("services", ()):
        services.load(name)  # started once the run's spec comes (CatalogPlugin.begin)

    learners = bool(ready.get("learners_tests"))
    unused = UNUSED_PLUGINS + (() if learners else UNUSED_BY_CATALOGS)
    args = [
        ready["tests_dir"], *(arg for plugin in unused for arg in ("-p", f"no:{plugin}")),
        "--rootdir", ready["tests_dir"], "-c", os.devnull, "-W", "ignore::pytest.PytestCollectionWarning",
        # A catalog is whole in its folder. Without an ini file pytest would otherwise start its
        # collection at the top of the file system: it lists every folder above the catalog,
        # entry by entry (site-packages, /tmp: hundreds of them), and loads any conftest.py found
        # there. A learner's own tests may rely on a conftest.py higher up in their repository.
        *(() if learners else ("--confcutdir", ready["tests_dir"])),
        # Catalog asserts carry their own messages (verify checks it), so pytest need not rewrite
        # them: importing the tests stays an ordinary, cached import.
        "--assert=plain",
        # what a test prints is captured at the sys.stdout level: cheaper than file descriptors
        "--capture=sys",
    ]
    plugin = CatalogPlugin(ready, events, orders, spec)
    if not ready.get("ahead"):
        plugin.begin()  # the conftest files need the run's environment (or the code under test)
    status = int(pytest.main(args, plugins=[plugin]))
    _save_coverage(plugin.measure)  # before the last event: once the runner hears it, the data is there
    if status in (pytest.ExitCode.INTERRUPTED, pytest.ExitCode.INTERNAL_ERROR, pytest.ExitCode.USAGE_ERROR) and not plugin.ran:
        events.send(Problem(f"pytest stopped with exit code {status}" + _last_line(ready["stderr_path"])))
    else:
        events.send(Finished())
    _end()


def _keep_to(core: int) -> None:
    """Run on this core only (see course.languages.python.launch.cores_of_their_own); where that
    cannot be done, wherever the scheduler puts the worker."""
    try:
        os.sched_setaffinity(0, {core})
    except OSError:
        pass


def _preload(tests_dir: str, code_root: str, files: list[str]) -> None:
    """Import the modules the run will need that cannot be the code under test (a worker started
    ahead of a save does it while the learner types; see course.languages.python.imports). Best
    effort: a module that fails to import here is imported, and reported, by the run itself."""
    import importlib

    from course.languages.python import imports

    names = imports.ahead_of_run(Path(tests_dir), Path(code_root), files)
    sys.path.append(tests_dir)  # the catalog's helper modules; pytest puts the folder first itself
    for name in names:
        try:
            importlib.import_module(name)
        except BaseException:  # noqa: BLE001, S110 - whatever it raised, the run will raise again
            pass
    sys.path.remove(tests_dir)


def _last_line(stderr_path: str) -> str:
    """The last line this process wrote to stderr, as ': line' (or '')."""
    sys.stderr.flush()
    with open(stderr_path, "rb") as written:
        lines = written.read()[-2000:].decode("utf-8", "replace").strip().splitlines()
    return f": {lines[-1]}" if lines else ""


def _start_coverage(asked: dict[str, Any] | None) -> Any:
    """With `course check --coverage` (and in verify): record which lines and branches of the code
    under test run, from before its import to the end. Only then is coverage.py imported at all."""
    if not asked:
        return None
    import coverage

    measure = coverage.Coverage(data_file=asked["data_file"], data_suffix=True, branch=True,
                                include=asked["include"], config_file=False)
    measure.start()
    return measure


def _save_coverage(measure: Any) -> None:
    if measure is not None:
        measure.stop()
        measure.save()


def _end() -> None:
    """Exit now: a thread the code under test left running must not keep the worker alive."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


@contextmanager
def timer(seconds: float, message: str) -> Iterator[None]:
    """Raise TestTimeout(message) in the block once `seconds` have passed."""

    def expire(signum, frame):  # noqa: ANN001
        raise TestTimeout(message)

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _isolate_streams(stderr_path: str) -> None:
    """What the code under test prints outside a test must not reach the terminal: stdout is
    dropped, stderr kept in a file the supervisor reads if the process dies."""
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.dup2(os.open(stderr_path, os.O_WRONLY | os.O_APPEND), 2)

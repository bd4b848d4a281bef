"""The Go adapter: the catalog's Go test files overlaid on the learner's module (`go test -overlay`),
built once into a test binary, run under test2json one process per worker (see build.py, worker.py).

Its manifest section needs no field of its own: the track's files include the module's go.mod, and
the catalog folder is laid out as the module. Catalogs read COURSE_FIXTURES and COURSE_FAKE_MODEL_URL
from the environment like every other language's. A learner's own tests (`course selftest`) are the
_test.go files of their module, overlaid on the reference the same way and named by their functions.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Mapping

from course import cache, processes
from course.chapters import Track
from course.errors import CodeProblem, UsageError
from course.languages.go import build, coverage, gremlins, outline, panics, toolchain
from course.languages.common import Done, slash_comment_lines
from course.languages.go.worker import Worker
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
)
from course.results import FileCoverage

# Go keeps initialisms upper case in names (golint's list): api_error -> APIError, sse_spec -> SSESpec
INITIALISMS = {"api", "ascii", "cpu", "css", "dns", "eof", "html", "http", "https", "id", "io", "ip", "json",
               "llm", "rpc", "sql", "sse", "tcp", "tls", "ttl", "udp", "ui", "uid", "uri", "url", "utf8", "uuid", "xml"}


class GoAdapter:
    name = "go"
    exit_call = "os.Exit"
    # One test binary runs the whole catalog about as fast as a bare `go test`: a second one would
    # cost a second process start and link for little.
    splits = False

    def __init__(self) -> None:
        # every optional capability of the protocol: learners' own tests (selftest), gremlins' broad
        # score, a diff blind to comments, the chapters' demonstrations, a test run with the terminal
        # attached (check -s; for --pdb, the commands that start Delve), the outline of a file's functions (the
        # pitfall hints' places)
        self.capabilities = {LearnerTests: self, BroadMutation: gremlins.Gremlins(), CommentBlindDiff: self,
                             Demonstration: self, Foreground: self, Outline: self}

    def test_name(self, entry: str) -> str:
        """'api_error_not_retried' -> 'TestAPIErrorNotRetried'. A learner's own test is named by its
        function already ('TestTwoEvents'): catalog names are lower case, so the two never meet."""
        if entry.startswith("Test"):
            return entry
        return "Test" + "".join(w.upper() if w in INITIALISMS else w[:1].upper() + w[1:] for w in entry.split("_"))

    def toolchain(self) -> str:
        found = toolchain.find()
        return f"{found.version} ({found.go})"

    def learner_tests_folder(self, track: Track, root: Path) -> Path:
        """Where a learner's own tests are: anywhere in their module, next to the code they test, as
        any Go test is (so `go test ./...` runs them on the learner's code too). A catalog build
        leaves them out (build.overlay)."""
        return build.module_root(track, root)

    def learner_tests(self, track: Track, folder: Path) -> list[str]:
        """The test functions of the learner's _test.go files in `folder` (their module) that test this
        track, by their Go names, in file order (`test_name` gives each back unchanged): those in the
        track's own packages, and in packages of theirs that hold only tests. A package holding code that is not
        the track's is another chapter's (ag00's agent/contract while ag01 is selftested): its tests
        test that code, which this track's reference does not have."""
        module = Path(next((f for f in track.files if f == "go.mod" or f.endswith("/go.mod")), "go.mod")).parent
        own = {Path(f).parent.relative_to(module).as_posix() for f in track.files if f.endswith(".go")}

        def ours(package: str) -> bool:
            code = [p for p in (folder / package).glob("*.go") if not p.name.endswith("_test.go")]
            return package in own or not code

        return [name for name, (package, _) in build.test_functions(folder).items() if ours(package)]

    def prepare(self, request: RunRequest) -> Prepared:
        if request.cases:
            # a subtest is known only once it runs, so the runner cannot choose among them beforehand
            raise UsageError("--case is not available in the Go track yet: choose tests with -k")
        tests = [self.test_name(n) for n in request.tests]
        built, problem = build.build(request.track, request.code_root, tests, request.build_dir,
                                     env=self._env(request), cover=request.coverage_dir is not None,
                                     origin=request.origin, mutant=request.mutant)
        return Prepared(problem=problem, artifact=built)

    def start(self, request: RunRequest, prepared: Prepared, skip: frozenset[str]) -> Worker | Done:
        built: build.Built = prepared.artifact
        # a test any of whose cases was reported ran in an earlier worker: it is not run again
        done = {key.split("/", 1)[0] for key in skip}
        names = {self.test_name(n): n for n in request.tests}
        for package, binary in built.binaries.items():
            chosen = {t: e for t, e in names.items() if t not in done and built.packages.get(t) == package}
            if chosen:
                cover = f"{request.coverage_dir}/cover" if request.coverage_dir else ""
                # a copy built as its origin names the origin's files in panics: shown as the copy's
                shown = (built.compiled_in, request.origin or request.code_root)
                return Worker(binary, built.module_root / package, *shown, chosen,
                              {**self._env(request), **built.env}, timeout=request.timeout, shuffle=request.shuffle,
                              cover_profile=cover, max_file_bytes=request.max_file_bytes)
        return Done()

    def _env(self, request: RunRequest) -> dict[str, str]:
        return toolchain.environment(dict(request.env))

    @contextmanager
    def ahead(self, request: RunRequest, workers: int) -> Iterator[None]:
        """Nothing to start ahead: the test binary is built by prepare."""
        yield

    @contextmanager
    def standby(self) -> Iterator[None]:
        """For `course watch`: find the toolchain once; the build cache is go's own."""
        toolchain.find()
        yield

    def commentary_lines(self, text: str) -> set[int]:
        """Lines (1-based) that hold only comments or nothing: what `course diff` leaves out by default."""
        return slash_comment_lines(text)

    def functions(self, source: str) -> list[Function]:
        """Top-level functions and methods ('EventReader.Next'), by a scanner of Go's tokens (outline.py)."""
        return outline.functions(source)

    def read_coverage(self, request: RunRequest) -> dict[str, FileCoverage]:
        return coverage.read(request.coverage_dir, build.module_root(request.track, request.code_root),
                             request.code_root, request.track.files)

    def test_sources(self, track: Track) -> dict[str, str]:
        return {name: source for name, (_, source) in build.test_functions(track.tests).items()}

    def catalog_problems(self, track: Track) -> list[str]:
        """No go.mod among the track's files; Go files of the catalog (its tests, the demonstration)
        that gofmt would change (learners read them)."""
        problems = []
        if not any(f == "go.mod" or f.endswith("/go.mod") for f in track.files):
            problems.append("the track's files name no go.mod: the Go adapter builds the code as a module")
        gofmt = shutil.which("gofmt")
        files = sorted(str(p) for p in track.tests.rglob("*.go"))
        if gofmt and files:
            done = subprocess.run([gofmt, "-l", *files], capture_output=True, text=True, check=False)
            problems += [f"{Path(f).name}: not gofmt-formatted" for f in done.stdout.split()]
        return problems

    def has_docstring(self, source: str, symbol: str) -> bool:
        """Whether `symbol` ('EventReader.Next', 'Delay', '' for the package) has a doc comment."""
        if not symbol:
            pattern = r"(?m)^//[^\n]*\n(?://[^\n]*\n)*package \w+"
        elif "." in symbol:
            receiver, method = symbol.split(".", 1)
            pattern = rf"(?m)^//[^\n]*\nfunc \(\w* ?\*?{re.escape(receiver)}\) {re.escape(method)}\("
        else:
            name = re.escape(symbol)
            pattern = rf"(?m)^//[^\n]*\n(?:func {name}\(|type {name}\b|var {name}\b|const {name}\b)"
        return re.search(pattern, source) is not None

    def exclusion_problems(self, track: Track) -> list[str]:
        return []  # Go has no way to leave lines out of its coverage

    def run_foreground(self, track: Track, code_root: Path, test: str, env: Mapping[str, str], *,
                       debugger: bool) -> int:
        """`go test -run` on the one test, verbose, with the terminal attached and no time limit.
        The catalog reaches the module through an overlay file kept in the user's cache, so the same
        commands work by hand: with `debugger`, they are printed (Delve's `dlv test` and `go test
        -run`), since a debugger is best driven from the learner's own terminal or editor."""
        name = self.test_name(test)
        package = build.test_functions(track.tests).get(name, ("", ""))[0]
        if not package:
            raise CodeProblem(f"no test file of the catalog defines {name}")
        module = build.module_root(track, code_root).resolve()
        if not (module / "go.mod").is_file():
            raise CodeProblem(f"{module / 'go.mod'} is missing: the Go track's code is a module (`course start` writes it)")
        overlay = cache.folder() / "go-debug" / f"{track.chapter_id}.overlay.json"
        overlay.parent.mkdir(parents=True, exist_ok=True)
        overlay.write_text(json.dumps({"Replace": build.overlay_of(track.tests.resolve(), module)}), encoding="utf-8")
        run = f"^{name}$"
        go_test = ["go", "test", "-count=1", "-v", "-overlay", str(overlay), "-run", run, f"./{package}"]
        if debugger:
            self._by_hand(track, module, env, name, package, overlay, go_test)
            return 0
        return processes.foreground([toolchain.find().go, *go_test[1:]], cwd=module, env=toolchain.environment(dict(env)))

    @staticmethod
    def _by_hand(track: Track, module: Path, env: Mapping[str, str], name: str, package: str, overlay: Path,
                 go_test: list[str]) -> None:
        """The commands that debug the test from the learner's terminal, each ready to paste."""
        import shlex

        from course.environment import FAKE_MODEL_VAR, FIXTURES_VAR

        variables = f"{FIXTURES_VAR}={shlex.quote(env[FIXTURES_VAR])} COURSE_SCRATCH=$(mktemp -d)"
        say = print
        say(f"Go has no debugger the harness can hand you; in your terminal, in {module}:")
        if FAKE_MODEL_VAR in env:
            say("  first, in another terminal, the fake model the test talks to:  course fake-model --port 8088")
            variables += f" {FAKE_MODEL_VAR}=http://127.0.0.1:8088/v1"
        say("  with Delve (go install github.com/go-delve/delve/cmd/dlv@latest):")
        say(f"    {variables} dlv test ./{package} --build-flags={shlex.quote('-overlay=' + str(overlay))} "
            f"-- -test.run {shlex.quote('^' + name + '$')} -test.v")
        say("  or the test alone, verbose, its prints as they happen (what `course check -s` runs):")
        say(f"    {variables} {shlex.join(go_test)}")

    def run_script(self, track: Track, code_root: Path, script: Path, args: list[str], env: Mapping[str, str],
                   *, timeout: float, whole_errors: bool = False) -> int:
        """Build the chapter's program (a main package beside the catalog) into the learner's module
        and run it there: a compile error is one problem at the learner's file:line, a panic one line
        (course.languages.go.panics), unless `whole_errors`."""
        with tempfile.TemporaryDirectory(prefix="course-go-run-") as folder:
            environment = toolchain.environment(dict(env))
            binary, problem = build.build_program(track, code_root, script, Path(folder), env=environment)
            if problem:
                raise CodeProblem(problem)
            program = build.module_root(track, code_root) / script.parent.relative_to(track.tests)
            errors = None if whole_errors else panics.Collapsed(code_root, track.chapter_id, program)
            return processes.run_bounded([str(binary), *args], cwd=code_root, env=environment, timeout=timeout,
                                         what="the demonstration", errors=errors)

"""The TypeScript adapter: the learner's package and the catalog compiled together by the pinned
TypeScript compiler (build.py), then run in one node process under node:test, its events streamed
to the harness by a reporter of ours (worker.py, node/).

Its manifest section needs no field of its own: the track's files include the package's
package.json, and the catalog folder is laid out as the package. Catalogs read COURSE_FIXTURES and
COURSE_FAKE_MODEL_URL from the environment like every other language's. A learner's own tests
(`course selftest`) are the test files of their package's test/ folder, compiled with the
reference in the catalog's place and named by their test names.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Mapping

from course import cache, processes
from course.chapters import Track
from course.errors import CodeProblem, UsageError
from course.languages.protocol import (BroadMutation, CommentBlindDiff, Demonstration, Function, LearnerTests, Outline,
                                      Prepared, RunRequest)
from course.languages.typescript import build, coverage, outline, stryker, toolchain, uncaught
from course.languages.common import Done, slash_comment_lines
from course.languages.typescript.worker import Worker
from course.results import FileCoverage

# a top-level test of a test file: test("name", ...) at the start of a line, up to its closing "});"
_TEST = re.compile(r"""^(?:test|it)\(\s*(["'`])(?P<name>(?:(?!\1).)+)\1\s*,""", re.MULTILINE)


class TypeScriptAdapter:
    name = "typescript"
    exit_call = "process.exit"
    # One node process runs the whole catalog in a few seconds, its servers in the same process; a
    # second one would cost another start, compile check and import of the code for little.
    splits = False

    def __init__(self) -> None:
        # learners' own tests (selftest), StrykerJS's broad score, a diff blind to comments, the
        # chapters' demonstrations, the outline of a file that places the pitfall hints
        self.capabilities = {LearnerTests: self, BroadMutation: stryker.Stryker(), CommentBlindDiff: self,
                             Demonstration: self, Outline: self}

    def test_name(self, entry: str) -> str:
        """A catalog entry's test has the entry's name ("hand_example"); a learner's own test keeps its own."""
        return entry

    def toolchain(self) -> str:
        found = toolchain.find()
        return f"node {found.version} ({found.node}), TypeScript {found.typescript}"

    def learner_tests_folder(self, track: Track, root: Path) -> Path:
        """Where a learner's own tests are: their package's test/ folder (`node --test` runs them on
        their code too). A catalog build leaves that folder out."""
        return build.package_root(track, root) / build.LEARNER_TESTS

    def learner_tests(self, track: Track, folder: Path) -> list[str]:
        """The top-level tests of the .test.ts files in `folder`, by name, in file order (a learner's
        package holds one chapter's code, so all of them test this track)."""
        return list(_tests_in(folder))

    def prepare(self, request: RunRequest) -> Prepared:
        if request.cases:
            # a case is known only once it runs, so the runner cannot choose among them beforehand
            raise UsageError("--case is not available in the TypeScript track yet: choose tests with -k")
        built, problem = build.build(request.track, request.code_root, request.build_dir, check=request.origin is None)
        return Prepared(problem=problem, artifact=built)

    def start(self, request: RunRequest, prepared: Prepared, skip: frozenset[str]) -> Worker | Done:
        built: build.Built = prepared.artifact
        done = {key.split("/", 1)[0] for key in skip}  # a test any case of which ran is not run again
        names = {self.test_name(n): n for n in request.tests if self.test_name(n) not in done}
        if not names:
            return Done()
        cwd = build.package_root(request.track, request.code_root)
        return Worker(built, names, dict(request.env), timeout=request.timeout, shuffle=request.shuffle,
                      cwd=cwd if cwd.is_dir() else built.out,
                      coverage=str(coverage.folder(request.coverage_dir)) if request.coverage_dir else "")

    @contextmanager
    def ahead(self, request: RunRequest, workers: int) -> Iterator[None]:
        """Nothing to start ahead: the code is compiled by prepare, and node starts in a blink."""
        yield

    @contextmanager
    def standby(self) -> Iterator[None]:
        """For `course watch`: find node and the tools once."""
        toolchain.find()
        yield

    def commentary_lines(self, text: str) -> set[int]:
        """Lines (1-based) that hold only comments or nothing: what `course diff` leaves out by default."""
        return slash_comment_lines(text)

    def functions(self, source: str) -> list[Function]:
        """The file's functions, its classes' methods ('Decoder.decode', 'Events.#read') and the
        `const`s bound to a function, from their first modifier to their closing brace: a scanner of
        TypeScript's tokens (outline.py), which agrees with the pinned compiler's parser."""
        return outline.functions(source)

    def read_coverage(self, request: RunRequest) -> dict[str, FileCoverage]:
        built = build.built_at(request.track, request.code_root, request.build_dir)
        return coverage.read(request.coverage_dir, built, request.track.files)

    def test_sources(self, track: Track) -> dict[str, str]:
        return {name: source for name, source in _tests_in(track.tests).items()}

    def catalog_problems(self, track: Track) -> list[str]:
        """No package.json among the track's files; a test name defined twice in the catalog."""
        problems = []
        if not any(f == "package.json" or f.endswith("/package.json") for f in track.files):
            problems.append("the track's files name no package.json: the TypeScript adapter builds the code as a package")
        seen: set[str] = set()
        for path in sorted(track.tests.rglob("*.test.ts")):
            for found in _TEST.finditer(path.read_text(encoding="utf-8")):
                if found["name"] in seen:
                    problems.append(f"{path.name}: test {found['name']!r} is defined twice")
                seen.add(found["name"])
        return problems

    def has_docstring(self, source: str, symbol: str) -> bool:
        """Whether `symbol` ('EventReader', 'Decoder.decode', '' for the file) has a /** doc comment */."""
        doc = r"/\*\*(?:(?!\*/).)*\*/\s*"
        if not symbol:
            return re.match(r"\s*" + doc, source, re.DOTALL) is not None
        if "." in symbol:
            owner, member = (re.escape(part) for part in symbol.split(".", 1))
            body = re.search(rf"(?:class|interface) {owner}\b.*?\n}}", source, re.DOTALL)
            pattern = doc + rf"(?:(?:static|async|get|set|readonly|public|private|protected)\s+)*\*?{member}\s*[(<:]"
            return body is not None and re.search(pattern, body.group(0), re.DOTALL) is not None
        name = re.escape(symbol)
        pattern = doc + rf"export (?:declare )?(?:abstract )?(?:async )?(?:class|interface|type|function\*?|const|let|enum) {name}\b"
        return re.search(pattern, source, re.DOTALL) is not None

    def exclusion_problems(self, track: Track) -> list[str]:
        return []  # builds leave comments out, so no line can be left out of coverage by one

    def run_script(self, track: Track, code_root: Path, script: Path, args: list[str], env: Mapping[str, str],
                   *, timeout: float, whole_errors: bool = False) -> int:
        """Compile the chapter's program (a file of the catalog's folder) with the learner's package
        and run it with node there: a compile error is one problem at the learner's file:line, an
        uncaught error one line (course.languages.typescript.uncaught), unless `whole_errors`."""
        built, problem = build.build(track, code_root, cache.folder())
        if problem:
            raise CodeProblem(problem)
        program = built.out / script.relative_to(track.tests).with_suffix(".js")
        root = build.package_root(track, code_root)
        return processes.run_bounded([toolchain.find().node, "--enable-source-maps", str(program), *args],
                                     cwd=root if root.is_dir() else code_root, env=toolchain.environment(dict(env)),
                                     timeout=timeout, what="the demonstration",
                                     errors=None if whole_errors else uncaught.Collapsed(code_root))


def _tests_in(folder: Path) -> dict[str, str]:
    """Each top-level test of the .test.ts files in `folder` (by its name) with its source, in file order."""
    found: dict[str, str] = {}
    for path in sorted(folder.rglob("*.test.ts")) if folder.is_dir() else []:
        if "node_modules" in path.relative_to(folder).parts:
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue  # a learner's file the compiler cannot read either: the build says so
        for match in _TEST.finditer(text):
            end = text.find("\n});\n", match.end())
            found[match["name"]] = text[match.start(): len(text) if end < 0 else end + 5]
    return found

"""The Go adapter: catalogs are Go test files overlaid on the learner's module, run by `go test`'s
own machinery (a compiled test binary under test2json), one process per attempt.

What the Go catalog needs from the harness reaches it through the environment: COURSE_FIXTURES (the
chapter's fixtures folder) and COURSE_FAKE_MODEL_URL (a course fake model started for the run).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Callable

from course import content
from course.chapters import Track
from course.check.results import CaseResult, RunOutcome
from course.errors import UsageError
from course.languages.go import runner, toolchain

# Go's initialisms stay upper case in names (golint's list, the ones a catalog is likely to use)
INITIALISMS = {"api", "ascii", "cpu", "css", "dns", "eof", "html", "http", "https", "id", "io", "ip", "json",
               "llm", "rpc", "sql", "sse", "tcp", "tls", "ttl", "udp", "ui", "uid", "uri", "url", "utf8", "uuid", "xml"}


class GoAdapter:
    name = "go"

    def test_name(self, entry: str) -> str:
        """'api_error_not_retried' -> 'TestAPIErrorNotRetried'."""
        return "Test" + "".join(w.upper() if w in INITIALISMS else w[:1].upper() + w[1:] for w in entry.split("_"))

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
    ) -> RunOutcome:
        from course import fake_model

        toolchain.find()  # no Go: one line and exit 2, before anything starts
        chosen = [n for n in names if _selected(select, n, self.test_name(n))]
        module = module_root(track, code_root)
        if not (module / "go.mod").is_file():
            shown = (module / "go.mod").relative_to(code_root) if module.is_relative_to(code_root) else module
            return RunOutcome(problem=f"{shown} is missing: the Go track's code is a module (`course start` writes one)")
        if not chosen:
            return RunOutcome()
        with fake_model.FakeModel() as fake:
            spec = runner.RunSpec(
                module_root=module,
                display_root=code_root,
                tests_dir=track.tests,
                names={self.test_name(n): n for n in chosen},
                timeout=timeout,
                env=toolchain.environment({
                    "COURSE_FIXTURES": str(content.fixtures_dir(track.chapter_id)),
                    "COURSE_FAKE_MODEL_URL": fake.base_url,
                }),
            )
            return runner.run(spec, on_case)

    def test_sources(self, track: Track) -> dict[str, str]:
        return {name: source for name, (_, source) in runner.test_functions(track.tests).items()}

    def catalog_problems(self, track: Track) -> list[str]:
        """Test files gofmt would change (the catalog is read by learners), and tests defined out of
        catalog order (cases stream in the order the binary runs them)."""
        problems = []
        gofmt = shutil.which("gofmt")
        files = sorted(str(p) for p in track.tests.rglob("*_test.go"))
        if gofmt and files:
            done = subprocess.run([gofmt, "-l", *files], capture_output=True, text=True, check=False)
            problems += [f"{Path(f).name}: not gofmt-formatted" for f in done.stdout.split()]
        return problems

    def run_script(self, track: Track, code_root: Path, script: Path, args: list[str]) -> int:
        raise UsageError(f"chapter {track.chapter_id} has no Go demonstration to run")


def module_root(track: Track, code_root: Path) -> Path:
    """The folder of the track's go.mod (go/ in a learner's repository)."""
    mod = next((f for f in track.files if f == "go.mod" or f.endswith("/go.mod")), "go.mod")
    return code_root / Path(mod).parent


_WORD = re.compile(r"\(|\)|\b(?:and|or|not)\b|[^\s()]+")


def _selected(expression: str, name: str, go_name: str) -> bool:
    """-k as pytest reads it, on catalog names: substrings joined by and, or, not and parentheses."""
    if not expression.strip():
        return True
    names = (name.lower(), go_name.lower())
    out = []
    for token in _WORD.findall(expression):
        if token in ("and", "or", "not", "(", ")"):
            out.append(f" {token} ")
        else:
            out.append(str(any(token.lower() in n for n in names)))
    try:
        return bool(eval("".join(out), {"__builtins__": {}}, {}))  # noqa: S307 - only True/False/and/or/not
    except SyntaxError:
        raise UsageError(f"-k {expression!r} is not a valid test selection") from None

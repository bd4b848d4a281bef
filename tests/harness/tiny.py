"""A tiny chapter written into a temporary content folder (COURSE_CONTENT points the harness at it):
one module, a few tests, so that a harness test shapes exactly the catalog or reference it needs."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import yaml

CHAPTER = "tiny"

TEXT = """\
# tiny · A chapter for the harness's own tests

## Rules

`add(a, b)` returns the sum.
"""

STARTER = '''\
"""Adding numbers."""


def add(a, b):
    """The sum of a and b."""
    raise NotImplementedError("add")
'''


def tiny_chapter(root: Path, *, tests: str, reference: str, starter: str = STARTER, text: str = TEXT,
                 stated_in: list[dict] | None = None, mutants: list[dict] | None = None,
                 pitfalls: list[dict] | None = None, selftest: str = "", services: list[str] | None = None) -> Path:
    """Write the chapter under `root` (a content folder) and return `root`. Every test_ function of
    `tests` becomes a catalog entry, in file order. `selftest`, when given, is the example of the
    learner's own tests that `start` writes (as tests_mine/tiny/test_mine.py); `services`, those the
    track lists (course.services)."""
    names = re.findall(r"^def test_(\w+)\(", textwrap.dedent(tests), flags=re.M)
    track = {"files": ["calc.py"], "modules": ["calc"], "catalog": names, "mutants": mutants or [],
             **({"selftest": f"tests_mine/{CHAPTER}/test_mine.py"} if selftest else {}),
             **({"services": services} if services else {})}
    return _write(root, names, {"python": track}, pitfalls=pitfalls, stated_in=stated_in, files={
        f"chapters/{CHAPTER}/text.md": text,
        f"starter/python/{CHAPTER}/calc.py": starter,
        f"reference/python/{CHAPTER}/calc.py": textwrap.dedent(reference),
        f"tests/python/{CHAPTER}/test_tiny.py": "import calc\n\n" + textwrap.dedent(tests),
        **({f"starter/python/{CHAPTER}/tests_mine/{CHAPTER}/test_mine.py": textwrap.dedent(selftest)} if selftest else {}),
    })


GO_REFERENCE = "// Package calc adds numbers.\npackage calc\n\n// Add returns the sum of a and b.\nfunc Add(a, b int) int {\n\treturn a + b\n}\n"
# The Go catalog with one test; tests add theirs after it.
GO_SUM_TEST = """\
package calc_test

import (
	"testing"

	"tiny/calc"
)

func TestSum(t *testing.T) {
	if got := calc.Add(2, 3); got != 5 {
		t.Errorf("Add(2, 3) = %d, want 5", got)
	}
}
"""


GO_STARTER = """\
// Package calc adds numbers.
package calc

// Add returns the sum of a and b.
func Add(a, b int) int {
	panic("TODO tiny: Add")
}
"""


def tiny_go_chapter(root: Path, *, tests: str, reference: str, starter: str = GO_STARTER,
                    mutants: list[dict] | None = None, pitfalls: list[dict] | None = None,
                    selftest: str = "") -> Path:
    """The tiny chapter with a Go track only: module `tiny` in go/, package calc (go/calc/calc.go).
    `tests` is the catalog's calc_test.go (each TestX function an entry x, in file order), `reference`
    the reference calc.go; `selftest`, when given, the example `start` writes as go/calc/mine_test.go."""
    names = [re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()
             for name in re.findall(r"^func Test(\w+)\(", tests, flags=re.M)]
    track = {"files": ["go/go.mod", "go/calc/calc.go"], "given": ["go/go.mod"], "catalog": names,
             "mutants": mutants or [], **({"selftest": "go/calc/mine_test.go"} if selftest else {})}
    return _write(root, names, {"go": track}, pitfalls=pitfalls, files={
        f"chapters/{CHAPTER}/text.md": TEXT,
        f"starter/go/{CHAPTER}/go/calc/calc.go": starter,
        f"reference/go/{CHAPTER}/go/go.mod": "module tiny\n\ngo 1.22\n",
        f"reference/go/{CHAPTER}/go/calc/calc.go": reference,
        f"tests/go/{CHAPTER}/calc/calc_test.go": tests,
        **({f"starter/go/{CHAPTER}/go/calc/mine_test.go": selftest} if selftest else {}),
    })


def tiny_scripted_chapter(root: Path, names: list[str]) -> Path:
    """The tiny chapter with a track in the scripted language (course.languages.scripted): one file,
    `calc.txt`, and a catalog of one `<name>.test` file per name (its text: the test's source)."""
    track = {"files": ["calc.txt"], "catalog": names}
    return _write(root, names, {"scripted": track}, pitfalls=None, files={
        f"chapters/{CHAPTER}/text.md": TEXT,
        f"starter/scripted/{CHAPTER}/calc.txt": "add: to be written\n",
        f"reference/scripted/{CHAPTER}/calc.txt": "# the reference\nadd: a + b\n",
        **{f"tests/scripted/{CHAPTER}/{name}.test": f"expect {name}\n" for name in names},
    })


def _write(root: Path, names: list[str], tracks: dict, *, files: dict[str, str], pitfalls: list[dict] | None,
           stated_in: list[dict] | None = None) -> Path:
    """The manifest (a catalog entry per name; like the real chapters' tracks, each track lists the
    entries it runs) and the chapter's files, under `root`."""
    catalog = [{"name": name, "kind": "unit", "checks": f"{name} works", "why": "a harness test needs it",
                "stated_in": stated_in if stated_in is not None else [{"section": "Rules"}],
                "hints": [f"{name}: the idea", f"{name}: the rule, in Rules", f"{name}: the shape of the code"]}
               for name in names]
    manifest = {"format_version": 1, "id": CHAPTER, "title": "Tiny", "order": 99,
                "pitfalls": pitfalls or [{"id": 1, "title": "a wrong sum"}], "catalog": catalog, "tracks": tracks}
    write_files(root, {f"chapters/{CHAPTER}/chapter.yaml": yaml.safe_dump(manifest, sort_keys=False), **files})
    (root / "fixtures").mkdir(exist_ok=True)
    return root


def write_files(root: Path, files: dict[str, str]) -> None:
    """Each file of `files` (a path under `root` -> its text), its folders made as needed."""
    for name, body in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(body, encoding="utf-8")


TS_REFERENCE = "/** Adding numbers. */\n\n/** The sum of a and b. */\nexport function add(a: number, b: number): number {\n  return a + b;\n}\n"
# The TypeScript catalog with one test; tests add theirs after it.
TS_SUM_TEST = """\
import assert from "node:assert/strict";
import { test } from "node:test";

import { add } from "../calc.js";

test("sum", () => {
  assert.equal(add(2, 3), 5, "add(2, 3)");
});
"""
TS_STARTER = """\
/** Adding numbers. */

/** The sum of a and b. */
export function add(a: number, b: number): number {
  throw new Error("TODO tiny: add");
}
"""


def tiny_ts_chapter(root: Path, *, tests: str, reference: str, starter: str = TS_STARTER,
                    mutants: list[dict] | None = None, pitfalls: list[dict] | None = None,
                    selftest: str = "") -> Path:
    """The tiny chapter with a TypeScript track only: package ts/ (ts/calc.ts). `tests` is the
    catalog's catalog/calc.test.ts (each top-level test("x", ...) an entry x, in file order),
    `reference` the reference calc.ts; `selftest`, when given, the example `start` writes as
    ts/test/mine.test.ts."""
    names = re.findall(r'^test\("(\w+)"', tests, flags=re.M)
    track = {"files": ["ts/package.json", "ts/calc.ts"], "given": ["ts/package.json"], "catalog": names,
             "mutants": mutants or [], **({"selftest": "ts/test/mine.test.ts"} if selftest else {})}
    return _write(root, names, {"typescript": track}, pitfalls=pitfalls, files={
        f"chapters/{CHAPTER}/text.md": TEXT,
        f"starter/typescript/{CHAPTER}/ts/calc.ts": starter,
        f"reference/typescript/{CHAPTER}/ts/package.json": '{"name": "tiny", "private": true, "type": "module"}\n',
        f"reference/typescript/{CHAPTER}/ts/calc.ts": reference,
        f"tests/typescript/{CHAPTER}/catalog/calc.test.ts": tests,
        **({f"starter/typescript/{CHAPTER}/ts/test/mine.test.ts": selftest} if selftest else {}),
    })

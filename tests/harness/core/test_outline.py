"""The Outline capability (the functions of a source file with their lines), which places a failure's
frame or a documented mutant's change in a function: Python's from ast, Go's and TypeScript's from
token scanners that must agree with their language's own parser (go/parser; the pinned TypeScript
compiler's, through its API) on every file of the course in that language, stubs included."""

from __future__ import annotations

import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest

from conftest import REPO
from course import languages
from course.languages.protocol import Function, Outline


def outline(language: str):  # noqa: ANN201
    offered = languages.capability(languages.get(language), Outline)
    assert offered is not None, f"the {language} adapter declares no Outline"
    return offered.functions


def test_python_functions_methods_and_what_belongs_to_them() -> None:
    source = textwrap.dedent('''\
        import functools
        from typing import TYPE_CHECKING

        if TYPE_CHECKING:
            def hinted() -> None: ...


        @functools.cache
        def cached(x):
            def inner():
                return x
            return inner()
            # a comment at the end of the body belongs to it


        class Reader:
            """A class."""

            def __init__(self):
                self.x = 1

            @property
            def value(self):
                return self.x
        # a comment at the module's level belongs to no function
        ''')
    assert outline("python")(source) == [
        Function("hinted", 5, 5), Function("cached", 8, 13), Function("Reader.__init__", 19, 20),
        Function("Reader.value", 22, 24)]
    assert outline("python")("def broken(:\n") == [], "a file that does not parse has no functions"


def test_go_functions_methods_and_the_braces_that_are_not_bodies() -> None:
    source = textwrap.dedent("""\
        package x

        // a comment with { a brace
        type T struct{ a int }

        type Handler func(x int)

        var f = func() { println("}") }

        func (t *T) M(a struct{}, b interface{ X() }) map[string]struct{} {
        \ts := `raw { string`
        \tr := '{'
        \tg := func() {
        \t\t/* } */
        \t}
        \t_, _, _ = s, r, g
        \treturn nil
        }

        func (T) N() {}

        func G[K comparable](k K) {
        \tif true {
        \t}
        }

        func (r *Reader[T]) Read(p []byte) (n int, err error) {
        \treturn 0, nil
        }
        """)
    assert outline("go")(source) == [Function("T.M", 10, 18), Function("T.N", 20, 20), Function("G", 22, 25),
                                     Function("Reader.Read", 27, 29)]


GO_PARSER = """\
package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
)

func main() {
	fset := token.NewFileSet()
	for _, path := range os.Args[1:] {
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			panic(err)
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			name := fd.Name.Name
			if fd.Recv != nil {
				t := fd.Recv.List[0].Type
				if s, ok := t.(*ast.StarExpr); ok {
					t = s.X
				}
				if ix, ok := t.(*ast.IndexExpr); ok {
					t = ix.X
				}
				name = t.(*ast.Ident).Name + "." + name
			}
			fmt.Printf("%s %s %d %d\\n", path, name, fset.Position(fd.Pos()).Line, fset.Position(fd.End()).Line)
		}
	}
}
"""


@pytest.mark.skipif(shutil.which("go") is None, reason="needs Go on PATH")
def test_the_go_scanner_agrees_with_go_parser_on_every_go_file_of_the_course(tmp_path: Path) -> None:
    files = sorted(str(p) for root in ("reference", "tests") for p in (REPO / root / "go").rglob("*.go"))
    assert files, "the course has Go files"
    (tmp_path / "go.mod").write_text("module outline\n\ngo 1.22\n")
    (tmp_path / "main.go").write_text(GO_PARSER)
    ran = subprocess.run(["go", "run", ".", *files], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert ran.returncode == 0, ran.stderr
    scanned = [f"{path} {f.name} {f.first} {f.last}" for path in files
               for f in outline("go")(Path(path).read_text(encoding="utf-8"))]
    assert scanned == ran.stdout.splitlines()


# every form a TypeScript function takes, and the text that may hold braces, slashes and backquotes
TS_FORMS = """\
import { x } from "./x.js"; // a comment with { a brace

/** Documented: the comment is not part of it. */
export function plain(a: string): { text: string } {
  const brace = "}";
  return { text: `${a}${brace}` };
}

export async function later(ms: number): Promise<Map<string, Array<number>>> {
  const re = /[/}]+\\/{/g;
  const nested = `outer ${`inner ${"}"} }`} end {`;
  return new Map([[nested.replace(re, ""), [ms / 2]]]);
}

function* counter(): Generator<number> {
  yield 1; /* } */
}

async function* stream<T extends { id: number }>(items: T[]): AsyncGenerator<T> {
  for (const item of items) yield item;
}

export declare function declared(a: number): void;
function overloaded(a: string): string;
function overloaded(a: number): number;
function overloaded(a: unknown): unknown {
  return a;
}

const arrow = (a: number): number => a * 2;
export const asyncArrow = async (a: string) => {
  const inner = () => {
    return a;
  };
  return inner();
};
let single = x => x + 1, expression = function named(b: number) {
  return b;
};
const typed: (a: number) => number = a =>
  a + 1;
const generic = <T,>(value: T): T[] => [value];
const notAFunction = (1 + 2) * 3;
const table = { key: () => 1 };

export default class Reader<T extends object = {}> extends Array<T> implements Iterable<T> {
  static readonly limit = 10;
  #count = 0;
  private handler = (event: string): void => {
    this.#count += event.length;
  };
  declare shape: { inside(): void };

  constructor(private readonly source: string) {
    super();
  }

  static create(): Reader<{}> {
    return new Reader("");
  }

  get count(): number {
    return this.#count;
  }

  set count(value: number) {
    this.#count = value;
  }

  #bump(by = 1): void {
    this.#count += by;
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<T> {
    yield* [];
  }

  async load(): Promise<void> {
    class Inner {
      method(): void {}
    }
    new Inner().method();
  }

  "quoted name"(): string {
    return "{";
  }

  static {
    Reader.prototype.toString = () => "reader";
  }

  optional?(): void;
}

abstract class Shape {
  abstract area(): number;
  protected describe(): string { return `${this.area()}`; }
}

interface Port {
  open(): void;
}

type Handler = (event: string) => void;

if (typeof process === "object") {
  function guarded(): void {}
}
"""

TS_FORMS_FUNCTIONS = [
    Function("plain", 4, 7), Function("later", 9, 13), Function("counter", 15, 17), Function("stream", 19, 21),
    Function("overloaded", 26, 28), Function("arrow", 30, 30), Function("asyncArrow", 31, 36),
    Function("single", 37, 37), Function("expression", 37, 39), Function("typed", 40, 41),
    Function("generic", 42, 42), Function("Reader.handler", 49, 51), Function("Reader.constructor", 54, 56),
    Function("Reader.create", 58, 60), Function("Reader.count", 62, 64), Function("Reader.count", 66, 68),
    Function("Reader.#bump", 70, 72), Function("Reader.[Symbol.asyncIterator]", 74, 76), Function("Reader.load", 78, 83),
    Function("Reader.quoted name", 85, 87), Function("Shape.describe", 98, 98)]


def test_typescript_functions_methods_and_the_text_that_holds_braces() -> None:
    assert outline("typescript")(TS_FORMS) == TS_FORMS_FUNCTIONS
    assert outline("typescript")("const t = `${\n") == [], "a file the scanner cannot read has no functions"
    # a slash after a value divides; after an operator it starts a regular expression, braces and all
    source = "const half = total / 2 / count;\nconst re = /}/;\nfunction after() {\n  return re;\n}\n"
    assert outline("typescript")(source) == [Function("after", 3, 5)]


# TypeScript's own parser (the pinned compiler, through its API: typescript/unstable/sync), printing
# what the scanner must find, the same way: "path name first last"
TS_PARSER = """\
// the functions of each .ts file named on the command line, as TypeScript's own parser reads them
import { writeFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [typescript, ...files] = process.argv.slice(2);
const { API } = await import(pathToFileURL(join(typescript, "dist/api/sync/api.js")).href);
const { SyntaxKind } = await import(pathToFileURL(join(typescript, "dist/enums/syntaxKind.js")).href);
const folder = mkdtempSync(join(tmpdir(), "outline-"));
writeFileSync(join(folder, "tsconfig.json"), JSON.stringify({
  compilerOptions: { noEmit: true, noLib: true, noResolve: true, types: [] }, files }));
const api = new API({ cwd: folder });
try {
  const program = api.updateSnapshot({ openProjects: [join(folder, "tsconfig.json")] }).getProjects()[0].program;
  for (const path of files) {
    const file = program.getSourceFile(path);
    const text = file.text;
    const line = (at) => text.slice(0, at).split(/\\r\\n|[\\n\\r\\u2028\\u2029]/).length;
    const say = (name, from, to) => console.log(`${path} ${name} ${line(from.getStart(file))} ${line(to.end)}`);
    const isFunction = (node) => node !== undefined
      && (node.kind === SyntaxKind.ArrowFunction || node.kind === SyntaxKind.FunctionExpression);
    const nameOf = (node) => node.kind === SyntaxKind.ComputedPropertyName ? node.getText(file) : node.text;
    for (const statement of file.statements) {
      if (statement.kind === SyntaxKind.FunctionDeclaration && statement.body && statement.name) {
        say(statement.name.text, statement, statement);
      } else if (statement.kind === SyntaxKind.VariableStatement) {
        statement.declarationList.declarations.forEach((declaration, n) => {
          if (declaration.name.kind === SyntaxKind.Identifier && isFunction(declaration.initializer)) {
            say(declaration.name.text, n === 0 ? statement : declaration, declaration.initializer);
          }
        });
      } else if (statement.kind === SyntaxKind.ClassDeclaration && statement.name) {
        for (const member of statement.members) {
          const owner = statement.name.text;
          if (member.kind === SyntaxKind.Constructor && member.body) {
            say(`${owner}.constructor`, member, member);
          } else if ((member.kind === SyntaxKind.MethodDeclaration || member.kind === SyntaxKind.GetAccessor
                      || member.kind === SyntaxKind.SetAccessor) && member.body) {
            say(`${owner}.${nameOf(member.name)}`, member, member);
          } else if (member.kind === SyntaxKind.PropertyDeclaration && isFunction(member.initializer)) {
            say(`${owner}.${nameOf(member.name)}`, member, member.initializer);
          }
        }
      }
    }
  }
} finally {
  api.close();
  rmSync(folder, { recursive: true, force: true });
}
"""


def _typescript_sources(tmp_path: Path) -> list[Path]:
    """Every .ts file of the course's TypeScript tracks: the references, the catalogs, and the stubs
    a learner receives (rendered into tmp_path), with the forms above."""
    from course import chapters, scaffold

    files = [p for root in ("reference", "tests") for p in (REPO / root / "typescript").rglob("*.ts")
             if "node_modules" not in p.parts]
    for chapter in chapters.load_all():
        track = chapter.tracks.get("typescript")
        if track is not None:
            into = tmp_path / "stubs" / chapter.id
            scaffold.render_all(chapter, track, into)
            files += [into / name for name in track.files if name.endswith(".ts")]
    (tmp_path / "forms.ts").write_text(TS_FORMS, encoding="utf-8")
    return sorted(files) + [tmp_path / "forms.ts"]


@pytest.mark.skipif(shutil.which("node") is None, reason="the TypeScript track needs node on PATH")
def test_the_typescript_scanner_agrees_with_the_compilers_parser_on_every_file_of_the_course(tmp_path: Path) -> None:
    from course.languages.typescript import toolchain

    files = _typescript_sources(tmp_path)
    assert any("stubs" in p.parts for p in files) and any(p.name.endswith(".test.ts") for p in files)
    (tmp_path / "outline.mjs").write_text(TS_PARSER, encoding="utf-8")
    compiler = toolchain.find().tools / "node_modules" / "typescript"
    ran = subprocess.run([toolchain.find().node, str(tmp_path / "outline.mjs"), str(compiler), *map(str, files)],
                         cwd=tmp_path, capture_output=True, text=True, timeout=300, env=toolchain.environment())
    assert ran.returncode == 0, ran.stderr
    parsed = ran.stdout.splitlines()
    assert f"{tmp_path / 'forms.ts'} Reader.[Symbol.asyncIterator] 74 76" in parsed, "the parser read the forms"
    scanned = [f"{path} {f.name} {f.first} {f.last}" for path in files
               for f in outline("typescript")(path.read_text(encoding="utf-8"))]
    assert scanned == parsed

"""The Outline capability (the functions of a source file with their lines), which places a failure's
frame or a documented mutant's change in a function: Python's from ast, Go's from a token scanner
that must agree with go/parser on every Go file of the course."""

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

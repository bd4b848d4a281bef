// Command schema writes one Go file that holds an original file and variants of it (the documented
// mutants of a chapter's reference), each variant chosen at run time: a mutant schema. The course
// harness builds the catalog once against the schemas of a reference instead of once per mutant,
// and runs the one binary per mutant with the mutant's id in an environment variable.
//
// A variant may change only function bodies. Each changed function keeps its own body and starts
// with one dispatch on the line of its opening brace (so no line of the original moves):
//
//	func (r *T) F(a int) error { if courseMutant__ == "s05" { return r.F__mutant4(a) };
//
// and the variant's version of the function follows the original, renamed, behind a //line
// directive that gives it the variant file's lines, so a failure inside it is placed where it is in
// the mutant. A variant that changes anything else (a type, an import, a signature, an init
// function), or does not parse, is named in "unsupported": the harness builds that one on its own.
//
// stdin:  {"path": file path for //line, "original": text, "variable": dispatch variable,
//
//	"variants": [{"id", "text"}]}
//
// stdout: {"package": name, "text": the schema file, "unsupported": {id: why}}
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"sort"
	"strconv"
	"strings"
)

type variant struct {
	ID   string `json:"id"`
	Text string `json:"text"`
}

type request struct {
	Path     string    `json:"path"`
	Original string    `json:"original"`
	Variable string    `json:"variable"`
	Variants []variant `json:"variants"`
}

type answer struct {
	Package     string            `json:"package"`
	Text        string            `json:"text"`
	Unsupported map[string]string `json:"unsupported"`
}

// a parsed file and its source
type source struct {
	fset *token.FileSet
	file *ast.File
	text string
}

func parse(text string) (*source, error) {
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, "x.go", text, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	return &source{fset, file, text}, nil
}

func (s *source) off(p token.Pos) int { return s.fset.Position(p).Offset }

func (s *source) span(from, to token.Pos) string { return s.text[s.off(from):s.off(to)] }

// header is a function's text from `func` to its body's opening brace; body, the brace to the end
func (s *source) header(f *ast.FuncDecl) string { return s.span(f.Type.Func, f.Body.Lbrace) }
func (s *source) body(f *ast.FuncDecl) string   { return s.span(f.Body.Lbrace, f.Body.End()) }

// changedFuncs: the indexes of the top-level functions whose bodies differ, or why the variant
// cannot be expressed by dispatching on function bodies alone
func changedFuncs(orig, mut *source) ([]int, string) {
	if orig.file.Name.Name != mut.file.Name.Name {
		return nil, "it changes the package clause"
	}
	if len(orig.file.Decls) != len(mut.file.Decls) {
		return nil, "it adds or removes a declaration"
	}
	var changed []int
	for i, d := range orig.file.Decls {
		od, ok := d.(*ast.FuncDecl)
		md, mok := mut.file.Decls[i].(*ast.FuncDecl)
		if !ok || !mok {
			if ok != mok || orig.span(d.Pos(), d.End()) != mut.span(mut.file.Decls[i].Pos(), mut.file.Decls[i].End()) {
				return nil, "it changes a declaration outside a function body"
			}
			continue
		}
		if od.Body == nil || md.Body == nil {
			if orig.span(od.Pos(), od.End()) != mut.span(md.Pos(), md.End()) {
				return nil, "it changes a function without a body"
			}
			continue
		}
		if orig.header(od) != mut.header(md) {
			return nil, "it changes a function's signature"
		}
		if orig.body(od) == mut.body(md) {
			continue
		}
		if od.Recv == nil && (od.Name.Name == "init" || od.Name.Name == "main") {
			return nil, "it changes " + od.Name.Name + ", which nothing calls"
		}
		changed = append(changed, i)
	}
	return changed, ""
}

// edit: replace text[from:to] with with
type edit struct {
	from, to int
	with     string
}

// call is how the original function hands over to a variant of itself, and the names its
// parameters need for that (unnamed and blank ones get one: p0, p1, ...; the receiver, recv)
func call(s *source, f *ast.FuncDecl, name string) (string, []edit) {
	var edits []edit
	var args []string
	n := 0
	named := func(field *ast.Field, fallback func() string) []string {
		if len(field.Names) == 0 {
			nm := fallback()
			edits = append(edits, edit{s.off(field.Type.Pos()), s.off(field.Type.Pos()), nm + " "})
			return []string{nm}
		}
		var names []string
		for _, id := range field.Names {
			nm := id.Name
			if nm == "_" {
				nm = fallback()
				edits = append(edits, edit{s.off(id.Pos()), s.off(id.End()), nm})
			}
			names = append(names, nm)
		}
		return names
	}
	target := name
	if f.Recv != nil && len(f.Recv.List) == 1 {
		target = named(f.Recv.List[0], func() string { return "recv__" })[0] + "." + name
	}
	if f.Type.TypeParams != nil {
		var tps []string
		for _, field := range f.Type.TypeParams.List {
			for _, id := range field.Names {
				tps = append(tps, id.Name)
			}
		}
		target += "[" + strings.Join(tps, ", ") + "]"
	}
	for _, field := range f.Type.Params.List {
		_, variadic := field.Type.(*ast.Ellipsis)
		for _, nm := range named(field, func() string { n++; return "p" + strconv.Itoa(n-1) + "__" }) {
			if variadic {
				nm += "..."
			}
			args = append(args, nm)
		}
	}
	return target + "(" + strings.Join(args, ", ") + ")", edits
}

func main() {
	var req request
	if err := json.NewDecoder(os.Stdin).Decode(&req); err != nil {
		fail(err)
	}
	orig, err := parse(req.Original)
	if err != nil {
		fail(fmt.Errorf("the original does not parse: %w", err))
	}
	out := answer{Package: orig.file.Name.Name, Unsupported: map[string]string{}}
	type version struct {
		id  string
		n   int // the variant's place in the request: its functions' names (an id need not be a Go name)
		src *source
		fn  *ast.FuncDecl
	}
	versions := map[int][]version{} // function index -> the variants that change it
	for n, v := range req.Variants {
		mut, err := parse(v.Text)
		if err != nil {
			out.Unsupported[v.ID] = "it does not parse"
			continue
		}
		changed, why := changedFuncs(orig, mut)
		if why != "" {
			out.Unsupported[v.ID] = why
			continue
		}
		for _, i := range changed {
			versions[i] = append(versions[i], version{v.ID, n, mut, mut.file.Decls[i].(*ast.FuncDecl)})
		}
	}
	var edits []edit
	var tail bytes.Buffer
	indexes := make([]int, 0, len(versions))
	for i := range versions {
		indexes = append(indexes, i)
	}
	sort.Ints(indexes)
	for _, i := range indexes {
		f := orig.file.Decls[i].(*ast.FuncDecl)
		var dispatch strings.Builder
		var names []edit
		for _, v := range versions[i] {
			renamed := f.Name.Name + "__mutant" + strconv.Itoa(v.n)
			target, paramEdits := call(orig, f, renamed)
			names = paramEdits // the same for every variant of this function
			hand := "return " + target
			if f.Type.Results == nil || len(f.Type.Results.List) == 0 {
				hand = target + "; return"
			}
			fmt.Fprintf(&dispatch, " if %s == %q { %s };", req.Variable, v.id, hand)
			// the variant's function, renamed, at the variant file's lines
			from, to := v.src.off(v.fn.Pos()), v.src.off(v.fn.End())
			nameAt, nameEnd := v.src.off(v.fn.Name.Pos()), v.src.off(v.fn.Name.End())
			line := v.src.fset.Position(v.fn.Pos()).Line
			fmt.Fprintf(&tail, "\n//line %s:%d\n%s%s%s\n", req.Path, line, v.src.text[from:nameAt], renamed, v.src.text[nameEnd:to])
		}
		edits = append(edits, names...)
		at := orig.off(f.Body.Lbrace) + 1
		edits = append(edits, edit{at, at, dispatch.String()})
	}
	sort.SliceStable(edits, func(a, b int) bool { return edits[a].from < edits[b].from })
	var text strings.Builder
	last := 0
	for _, e := range edits {
		text.WriteString(req.Original[last:e.from])
		text.WriteString(e.with)
		last = e.to
	}
	text.WriteString(req.Original[last:])
	text.Write(tail.Bytes())
	out.Text = text.String()
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "schema:", err)
	os.Exit(1)
}

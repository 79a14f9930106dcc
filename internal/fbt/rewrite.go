package fbt

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/gosdt/gosdt/internal/spec"
	"github.com/gosdt/gosdt/internal/tracedcopy"
)

// SDTPath is the import path the rewritten files import: the runtime of generated
// code, which imports package sdt. It is internal to gosdt's module: the files reach
// it through the import configuration the wrapper adds it to, as cmd/cover's runtime.
const SDTPath = "github.com/gosdt/gosdt/sdt/internal/fbtrt"

// Result is what Rewrite did to one package.
type Result struct {
	Files   map[string][]byte // rewritten content by original path; files with no match are absent
	Matched map[int]bool      // the rules (by line) that matched a function
	Funcs   []string          // instrumented functions, as rules name them
	Skipped []string          // functions a rule matched that were left alone, and why
}

func hash(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:8])
}

// Rewrite instruments the functions of package pkg (import path) that rules match,
// in files. Lines keep their numbers: every insertion is on the line of the code it
// instruments, and each rewritten file starts with a //line directive naming the
// original, so panics, stack traces and coverage point at the user's lines.
func Rewrite(pkg string, files []string, rules []Rule) (*Result, error) {
	res := &Result{Files: map[string][]byte{}, Matched: map[int]bool{}}
	if len(rules) == 0 {
		return res, nil
	}
	for fi, path := range files {
		src, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, src, parser.ParseComments)
		if err != nil {
			return nil, err // the compiler will say the same; do not hide it
		}
		if f.Name.Name == "_" || strings.HasSuffix(path, "_cgo_gotypes.go") {
			continue
		}
		rw := &fileRewrite{fset: fset, src: src, pkg: pkg, file: fi}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			name, sym := funcNames(fd)
			var hit []Rule
			for _, r := range rules {
				if r.Match(name) {
					hit = append(hit, r)
				}
			}
			if len(hit) == 0 {
				continue
			}
			if why := refuse(fd); why != "" {
				res.Skipped = append(res.Skipped, fmt.Sprintf("%s.%s: %s", pkg, name, why))
				continue
			}
			for _, r := range hit {
				res.Matched[r.Line] = true
			}
			rw.instrument(fd, name, sym)
			res.Funcs = append(res.Funcs, name)
		}
		if len(rw.edits) == 0 {
			continue
		}
		// The import, on the package clause's line; the definitions after the last line.
		rw.insert(f.Name.End(), `;import __sdt "`+SDTPath+`"`)
		rw.insert(token.Pos(rw.fset.File(f.Pos()).Base()+len(src)), "\n"+rw.defs.String())
		out := rw.apply()
		res.Files[path] = append([]byte("//line "+path+":1\n"), out...)
	}
	return res, nil
}

// funcNames returns the function's name as rules write it ((*T).M, T.M, F) and as
// its symbol is written after the package (type parameters as [...]).
func funcNames(fd *ast.FuncDecl) (rule, sym string) {
	gen := ""
	if fd.Type.TypeParams != nil && len(fd.Type.TypeParams.List) > 0 {
		gen = "[...]"
	}
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name, fd.Name.Name + gen
	}
	// A method's own type parameters (go1.27's generic methods) follow its name; its
	// receiver's, its type's.
	method, recvGen := gen, ""
	t := fd.Recv.List[0].Type
	star := false
	if s, ok := t.(*ast.StarExpr); ok {
		star, t = true, s.X
	}
	switch x := t.(type) {
	case *ast.IndexExpr:
		t, recvGen = x.X, "[...]"
	case *ast.IndexListExpr:
		t, recvGen = x.X, "[...]"
	}
	typ := "?"
	if id, ok := t.(*ast.Ident); ok {
		typ = id.Name
	}
	if star {
		return "(*" + typ + ")." + fd.Name.Name, "(*" + typ + recvGen + ")." + fd.Name.Name + method
	}
	return typ + "." + fd.Name.Name, typ + recvGen + "." + fd.Name.Name + method
}

// refuse says why a matched function is left alone: the runtime's directives promise
// things (no stack growth, no write barriers) that a call into sdt would break.
func refuse(fd *ast.FuncDecl) string {
	if fd.Name.Name == "_" {
		return "a blank function"
	}
	if fd.Doc != nil {
		for _, c := range fd.Doc.List {
			if d, ok := strings.CutPrefix(c.Text, "//go:"); ok {
				d, _, _ = strings.Cut(d, " ")
				switch d {
				case "noinline", "norace", "nocheckptr", "build":
				default:
					return "has a //go:" + d + " directive"
				}
			}
		}
	}
	return ""
}

type edit struct {
	off  int
	end  int // > off: the bytes [off, end) are replaced
	text string
}

type fileRewrite struct {
	fset  *token.FileSet
	src   []byte
	pkg   string
	file  int
	n     int
	edits []edit
	defs  bytes.Buffer
}

func (rw *fileRewrite) off(p token.Pos) int { return rw.fset.Position(p).Offset }

func (rw *fileRewrite) insert(p token.Pos, text string) {
	o := rw.off(p)
	rw.edits = append(rw.edits, edit{off: o, end: o, text: text})
}

func (rw *fileRewrite) replace(from, to token.Pos, text string) {
	rw.edits = append(rw.edits, edit{off: rw.off(from), end: rw.off(to), text: text})
}

func (rw *fileRewrite) text(n ast.Node) string {
	return string(rw.src[rw.off(n.Pos()):rw.off(n.End())])
}

func (rw *fileRewrite) apply() []byte {
	sort.SliceStable(rw.edits, func(i, j int) bool { return rw.edits[i].off < rw.edits[j].off })
	var out bytes.Buffer
	last := 0
	for _, e := range rw.edits {
		out.Write(rw.src[last:e.off])
		out.WriteString(e.text)
		last = max(last, e.end, e.off)
	}
	out.Write(rw.src[last:])
	return out.Bytes()
}

// instrument gives fd two gates at its entry, one per probe, and a traced copy of its
// body, which is what runs while either probe is on:
//
//	func F(a A) (R0, error) {
//		if E.Enabled() { return __sdt_fbtN_t(a) }   // guard sites
//		if R.Enabled() { return __sdt_fbtN_t(a) }
//		... the body, as written ...
//	}
//	func __sdt_fbtN_t(a A) (r0 R0, r1 error) {
//		c := R.Begin(&cv)                            // the Call, in this frame
//		if E.Enabled() { E.Enter(c, n, ints...) }   // the entry's fire site (ints: the USDT note's)
//		entry arguments and hooks; a deferred check for panics
//		... the body again, every return a return site of R:
//		if l := c.Elapsed(); R.Enabled() { R.Return(c, l) ... }  // l: the USDT note's latency_ns
//		...
//	}
//
// While both probes are off F pays two jumps and nothing else: no variable lives
// across its body for the probes' sake, no argument is spilled, no return is touched. The copy keeps the
// user's lines (a /*line*/ directive), and its sites are named after F (tracedcopy).
func (rw *fileRewrite) instrument(fd *ast.FuncDecl, name, sym string) {
	id := tracedcopy.Ident(rw.file, rw.n)
	rw.n++
	E, R, T := id+"e", id+"r", id+"t"

	var argNames, argTypes, callArgs, params, ins []string
	k := 0
	// names gives every parameter a name, in F itself too (F passes them on).
	names := func(field *ast.Field, prefix string) []string {
		if len(field.Names) == 0 {
			n := fmt.Sprintf("__sdt_%s%d", prefix, k)
			k++
			rw.insert(field.Type.Pos(), n+" ")
			return []string{n}
		}
		var ns []string
		for _, id := range field.Names {
			n := id.Name
			if n == "_" {
				n = fmt.Sprintf("__sdt_%s%d", prefix, k)
				rw.replace(id.Pos(), id.End(), n)
			}
			k++
			ns = append(ns, n)
		}
		return ns
	}
	recv := ""
	if fd.Recv != nil && len(fd.Recv.List) > 0 {
		field := fd.Recv.List[0]
		n := names(field, "recv")[0]
		recv = "(" + n + " " + rw.text(field.Type) + ") "
		argNames, argTypes = append(argNames, "this"), append(argTypes, rw.text(field.Type))
		ins = append(ins, "__sdt.In(__sdt_c, "+n+");")
	}
	var ints []string // the integer parameters, for the entry's USDT note (Enter)
	for _, field := range fd.Type.Params.List {
		t := rw.text(field.Type)
		_, variadic := field.Type.(*ast.Ellipsis)
		for _, n := range names(field, "p") {
			if intTypes[t] && len(ints) < maxNoteInts {
				ints = append(ints, "int64("+n+")")
			}
			argNames, argTypes = append(argNames, strings.TrimPrefix(n, "__sdt_")), append(argTypes, t)
			ins = append(ins, "__sdt.In(__sdt_c, "+n+");")
			params = append(params, n+" "+t)
			if variadic {
				n += "..."
			}
			callArgs = append(callArgs, n)
		}
	}
	typeParams, typeArgs := "", ""
	if tp := fd.Type.TypeParams; tp != nil && len(tp.List) > 0 {
		typeParams = rw.text(tp) // with its brackets
		var ns []string
		for _, field := range tp.List {
			for _, n := range field.Names {
				ns = append(ns, n.Name)
			}
		}
		typeArgs = "[" + strings.Join(ns, ", ") + "]"
	}

	// Results: their types, and names (the copy names them all).
	var resTypes, resNames []string
	if fl := fd.Type.Results; fl != nil {
		for _, field := range fl.List {
			t := rw.text(field.Type)
			if len(field.Names) == 0 {
				resNames = append(resNames, fmt.Sprintf("__sdt_r%d", len(resNames)))
				resTypes = append(resTypes, t)
				continue
			}
			for _, id := range field.Names {
				n := id.Name
				if n == "_" {
					n = fmt.Sprintf("__sdt_r%d", len(resNames))
				}
				resNames = append(resNames, n)
				resTypes = append(resTypes, t)
			}
		}
	}
	temps := make([]string, len(resTypes))
	var results []string
	for i := range temps {
		temps[i] = fmt.Sprintf("__sdt_t%d", i)
		results = append(results, resNames[i]+" "+resTypes[i])
	}
	retSite := func(vals []string) string {
		var b strings.Builder
		fmt.Fprintf(&b, "__sdt_c.Done(); if __sdt_l := __sdt_c.Elapsed(); %s.Enabled() { if __sdt_x := %s.Return(__sdt_c, __sdt_l); __sdt_x != nil { ", R, R)
		for _, v := range vals {
			fmt.Fprintf(&b, "__sdt.Out(__sdt_x, %s); ", v)
		}
		b.WriteString("__sdt_x.Returned(); ")
		for i, v := range vals {
			fmt.Fprintf(&b, "%s = __sdt.Result(__sdt_x, %d, %s); ", v, i, v)
		}
		b.WriteString("} }; ")
		return b.String()
	}
	declTemps := func() string {
		var b strings.Builder
		for i, t := range resTypes {
			fmt.Fprintf(&b, "var %s %s; ", temps[i], t)
		}
		return b.String()
	}

	// The gates, on the line of F's opening brace: checks of the probes' flags around a
	// call of the copy (guard sites; the probes' fire sites are in the copy).
	call := fmt.Sprintf("%s%s(%s)", T, typeArgs, strings.Join(callArgs, ", "))
	if recv != "" {
		rn := strings.Fields(recv[1:])[0]
		call = fmt.Sprintf("%s.%s(%s)", rn, T, strings.Join(callArgs, ", "))
	}
	gate := func(p string) string {
		if len(resTypes) == 0 {
			return fmt.Sprintf("if %s.Enabled() { %s; return }; ", p, call)
		}
		return fmt.Sprintf("if %s.Enabled() { return %s }; ", p, call)
	}
	rw.insert(fd.Body.Lbrace+1, gate(E)+gate(R))

	// The traced copy: the body, its returns made return sites.
	body := &copyRewrite{base: rw.off(fd.Body.Pos()), src: rw.src[rw.off(fd.Body.Pos()):rw.off(fd.Body.End())]}
	skip := ""
	for i, n := range resNames {
		skip += fmt.Sprintf("%s = __sdt.Result(__sdt_c, %d, %s); ", n, i, n)
	}
	skip += retSite(resNames) + "return"
	// A call that panics returns through the deferred check, which fires return with
	// panicking set and the results as they are.
	unwind := fmt.Sprintf("defer func() { if __sdt_c.Unwinding() { if __sdt_l := __sdt_c.Elapsed(); %s.Enabled() { if __sdt_x := %s.Return(__sdt_c, __sdt_l); __sdt_x != nil { ", R, R)
	for _, n := range resNames {
		unwind += fmt.Sprintf("__sdt.Out(__sdt_x, %s); ", n)
	}
	unwind += "__sdt_x.Returned() } } }; __sdt_c.Release() }(); "
	// The Call lives in the copy's frame unless hooks are attached (Begin).
	enter := fmt.Sprintf("%s.Enter(__sdt_c, %d", E, len(ints))
	for i := range maxNoteInts {
		v := "0"
		if i < len(ints) {
			v = ints[i]
		}
		enter += ", " + v
	}
	body.insert(1, fmt.Sprintf("var __sdt_cv __sdt.Call; __sdt_c := %s.Begin(&__sdt_cv); if %s.Enabled() { %s) }; "+
		"if __sdt_c.EntryFired() { %s if __sdt_c.Entered() { %s } }; %s", R, E, enter, strings.Join(ins, " "), skip, unwind))
	lastIsReturn := false
	if n := len(fd.Body.List); n > 0 {
		_, lastIsReturn = fd.Body.List[n-1].(*ast.ReturnStmt)
	}
	ast.Inspect(fd.Body, func(n ast.Node) bool {
		switch r := n.(type) {
		case *ast.FuncLit:
			return false
		case *ast.ReturnStmt:
			var b strings.Builder
			b.WriteString("{ ")
			switch {
			case len(resTypes) == 0:
				b.WriteString(retSite(nil) + "return")
			case len(r.Results) == 0: // bare return of named results
				b.WriteString(retSite(resNames) + "return")
			default:
				var exprs []string
				for _, e := range r.Results {
					exprs = append(exprs, rw.text(e))
				}
				b.WriteString(declTemps())
				fmt.Fprintf(&b, "%s = %s; ", strings.Join(temps, ", "), strings.Join(exprs, ", "))
				b.WriteString(retSite(temps) + "return " + strings.Join(temps, ", "))
			}
			b.WriteString(" }")
			body.replace(rw.off(r.Pos()), rw.off(r.End()), b.String())
		}
		return true
	})
	if len(resTypes) == 0 && !lastIsReturn {
		body.insert(len(body.src)-1, "; "+retSite(nil))
	}
	pos := rw.fset.Position(fd.Body.Lbrace)
	fmt.Fprintf(&rw.defs, "\n// %s is the traced copy of %s.\nfunc %s%s%s(%s) (%s) /*line %s:%d:%d*/%s\n", T, name, recv, T, typeParams,
		strings.Join(params, ", "), strings.Join(results, ", "),
		pos.Filename, pos.Line, pos.Column, body.apply())

	module, function := spec.SplitFunc(rw.pkg + "." + sym)
	usdt := usdtName(rw.pkg, name)
	resArgNames := []string{"latency_ns", "panicking"}
	resArgTypes := []string{"int64", "bool"}
	for i, t := range resTypes {
		n := fmt.Sprintf("r%d", i)
		if !strings.HasPrefix(resNames[i], "__sdt_") {
			n = resNames[i]
		}
		resArgNames, resArgTypes = append(resArgNames, n), append(resArgTypes, t)
	}
	q := strconv.Quote
	fmt.Fprintf(&rw.defs, "var %s = __sdt.DefineFunc(\"fbt\", %s, %s, %s, \"entry\", %s, %s)\n", E,
		q(usdt+"__entry"), q(module), q(function), q(strings.Join(argNames, "\n")), q(strings.Join(argTypes, "\n")))
	fmt.Fprintf(&rw.defs, "var %s = __sdt.DefineFunc(\"fbt\", %s, %s, %s, \"return\", %s, %s)\n", R,
		q(usdt+"__return"), q(module), q(function), q(strings.Join(resArgNames, "\n")), q(strings.Join(resArgTypes, "\n")))
}

// maxNoteInts is how many integer parameters an entry fire passes for its USDT note
// (fbtrt's Func.Enter).
const maxNoteInts = 4

// intTypes are the parameter types, as written, that an entry's USDT note carries:
// Go's integer types, converted to int64 (a uint64 above 1<<63 reads negative).
var intTypes = map[string]bool{
	"int": true, "int8": true, "int16": true, "int32": true, "int64": true, "rune": true,
	"uint": true, "uint8": true, "uint16": true, "uint32": true, "uint64": true, "uintptr": true, "byte": true,
}

// copyRewrite edits a copy of a function's body: offsets are the file's.
type copyRewrite struct {
	base  int
	src   []byte
	edits []edit
}

func (c *copyRewrite) insert(rel int, text string) {
	c.edits = append(c.edits, edit{off: rel, end: rel, text: text})
}

func (c *copyRewrite) replace(from, to int, text string) {
	c.edits = append(c.edits, edit{off: from - c.base, end: to - c.base, text: text})
}

func (c *copyRewrite) apply() string {
	rw := fileRewrite{src: c.src, edits: c.edits}
	return string(rw.apply())
}

// usdtName is a function's USDT probe name stem: package path and function with
// every character bpftrace does not take in a probe name made an underscore.
func usdtName(pkg, fn string) string {
	var b strings.Builder
	under := false
	for _, r := range pkg + "__" + fn {
		ok := r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
		if !ok {
			if !under {
				b.WriteByte('_')
			}
			under = true
			continue
		}
		under = false
		b.WriteRune(r)
	}
	return strings.Trim(b.String(), "_")
}

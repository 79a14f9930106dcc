package control_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"reflect"
	"strings"
	"testing"

	"github.com/gosdt/gosdt/sdt/control"
)

// TestAliasDocsNameMethods: control's types are aliases of sdt/internal/consume's,
// whose methods go doc does not list under control; each alias's comment names
// them instead, and must name every one, also those added later.
func TestAliasDocsNameMethods(t *testing.T) {
	docs := map[string]string{}
	f, err := parser.ParseFile(token.NewFileSet(), "control.go", nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.TYPE {
			continue
		}
		for _, sp := range g.Specs {
			ts := sp.(*ast.TypeSpec)
			doc := ts.Doc
			if doc == nil && len(g.Specs) == 1 {
				doc = g.Doc
			}
			docs[ts.Name.Name] = doc.Text()
		}
	}
	for _, v := range []any{
		(*control.Trace)(nil), (*control.Record)(nil), (*control.Aggregation)(nil),
		(*control.PredicateError)(nil), (*control.Event)(nil), (*control.Snapshot)(nil),
	} {
		typ := reflect.TypeOf(v)
		name := typ.Elem().Name()
		doc, ok := docs[name]
		if !ok {
			t.Errorf("control.go declares no %s", name)
			continue
		}
		for i := range typ.NumMethod() {
			m := typ.Method(i).Name
			if m == "Error" || m == "String" {
				continue // what the interface it satisfies says
			}
			if !strings.Contains(doc, m) {
				t.Errorf("the comment of control.%s does not name its method %s", name, m)
			}
		}
	}
}

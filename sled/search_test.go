package sled

import (
	"bytes"
	"debug/gosym"
	"reflect"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"testing"

	"github.com/gosdt/gosdt/sled/internal/fakesdt"
)

// TestPackageOf: packageOf agrees with debug/gosym's reading of the name of every
// function of this test binary (generic instantiations and their methods among them),
// a name without a package being its own, and takes the compiler's names (go:, type:)
// for none of the program's packages.
func TestPackageOf(t *testing.T) {
	l := Self()
	if l.tab == nil {
		t.Skipf("no function table read on %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	generic := 0
	for i := 0; i < l.tab.Len(); i++ {
		name := string(l.tab.Name(i))
		got := string(packageOf([]byte(name)))
		if strings.HasPrefix(name, "go:") || strings.HasPrefix(name, "type:") {
			// The compiler's, of no package since go1.20 (gosym knows it only from
			// a table's version): no module of this program may claim it.
			if mayHoldSites(got, programModules()) {
				t.Errorf("packageOf(%q) = %q, a package that may hold sites", name, got)
			}
			continue
		}
		want := (&gosym.Sym{Name: name}).PackageName()
		if want == "" {
			want = name
		}
		if got != want {
			t.Errorf("packageOf(%q) = %q, want %q", name, got, want)
		}
		if strings.Contains(name, "[") {
			generic++
		}
	}
	if generic == 0 {
		t.Error("no generic instantiation among the functions")
	}
	t.Logf("%d functions, %d of them instantiations", l.tab.Len(), generic)
}

func TestMayHoldSites(t *testing.T) {
	mods := []string{"example.com/app", "github.com/gosdt/gosdt", "busyprog"}
	for pkg, want := range map[string]bool{
		"main":                        true,
		"command-line-arguments":      true,
		"example.com/app":             true,
		"example.com/app/store":       true,
		"example.com/app_test":        true,
		"example.com/application":     false,
		"busyprog/w":                  true,
		"github.com/gosdt/gosdt/sdt":  true,
		"runtime":                     false,
		"fmt":                         false,
		"vendor/golang.org/x/net/dns": false,
		"type:":                       false,
	} {
		if got := mayHoldSites(pkg, mods); got != want {
			t.Errorf("mayHoldSites(%q) = %v, want %v", pkg, got, want)
		}
	}
}

// inlinesFake holds a site of the fake probe package that sled_test's TestMain makes
// the probe package of this test binary: searched at start, where its neighbours are not.
//
//go:noinline
func inlinesFake(n int) {
	searchFake.Fire(n)
}

var searchFake = fakesdt.New()

// TestSearchRanges: in this test binary the ranges searched at start cover the
// functions that inlined the probe package, and leave out this package's others, the
// runtime's and reflect's.
func TestSearchRanges(t *testing.T) {
	l := Self()
	if l.tab == nil {
		t.Skipf("no function table read on %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	if !strings.HasSuffix(probePackage, "fakesdt") {
		t.Fatalf("probe package %s: not the fake one of sled_test's TestMain", probePackage)
	}
	inlinesFake(0)
	r, by := l.searchRanges()
	if r == nil {
		t.Fatal("searchRanges: nil (search everything) in a module build:", by)
	}
	t.Log("searched:", by)
	if !strings.Contains(by, "inline trees") {
		t.Errorf("search not chosen by the inline trees: %s", by)
	}
	in := func(f any) bool { return InRanges(r, int(reflect.ValueOf(f).Pointer()-l.Text)) }
	if !in(inlinesFake) {
		t.Error("inlinesFake is not searched")
	}
	for name, f := range map[string]any{"sled.Discover": Discover, "sled.packageOf": packageOf, "this test": TestSearchRanges, "runtime.GC": runtime.GC, "reflect.ValueOf": reflect.ValueOf} {
		if in(f) {
			t.Errorf("%s is searched", name)
		}
	}
	searched := 0
	for i, x := range r {
		if x[0] >= x[1] || i > 0 && r[i-1][1] >= x[0] {
			t.Fatalf("range %d %v: empty, or not after the one before (%v)", i, x, r[max(0, i-1)])
		}
		searched += x[1] - x[0]
	}
	t.Logf("%d ranges, %d of %d bytes of text", len(r), searched, l.Etext-l.Text)
}

// TestInlineTreesUnread: a layout whose inline trees are unknown searches the
// functions of the program's modules, and says why.
func TestInlineTreesUnread(t *testing.T) {
	l := Self()
	if l.tab == nil {
		t.Skipf("no function table read on %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	l.noInline = "pclntab magic 0xfffffff0, not 0xfffffff1"
	r, by := l.searchRanges()
	if r == nil || !strings.Contains(by, "inline trees unread: pclntab magic") {
		t.Fatalf("%d ranges: %s", len(r), by)
	}
}

// TestSearchFindsEverySite: a search of the ranges finds exactly the sites and
// candidates of probe flags that a search of the whole text finds.
func TestSearchFindsEverySite(t *testing.T) {
	if host == nil {
		t.Skip("no site matcher for", runtime.GOARCH)
	}
	src := self()
	if src.Search == nil {
		t.Fatal("no search ranges in a module build")
	}
	part := Scan(host, src)
	src.Search = nil
	all := Scan(host, src)
	if len(all.Sites) == 0 {
		t.Fatal("no site in this test binary")
	}
	if !reflect.DeepEqual(part.Sites, all.Sites) {
		t.Errorf("ranges: %d sites, whole text: %d", len(part.Sites), len(all.Sites))
	}
	if part.Searched >= all.Searched || all.Searched != all.TextBytes {
		t.Errorf("searched %d bytes of ranges against %d of all %d", part.Searched, all.Searched, all.TextBytes)
	}
	t.Logf("ranges: %d candidates, whole text: %d; %d sites", part.Candidates, all.Candidates, len(part.Sites))
}

// BenchmarkSearchRanges: choosing the functions to search in this test binary, from
// tables already read once (the first read of a page at start costs more).
func BenchmarkSearchRanges(b *testing.B) {
	l := Self()
	for b.Loop() {
		l.searchRanges()
	}
}

// TestProbeAPI: the names of package sdt's functions that another package can call,
// as the name table spells them, and those it cannot.
func TestProbeAPI(t *testing.T) {
	for name, want := range map[string]bool{
		"Probe1[go.shape.int]":                   true,
		"Probe1[go.shape.int].func1":             true,
		"(*P1[go.shape.int]).Enabled":            true,
		"(*Func).Begin":                          true,
		"Latency.Start":                          true,
		"List.deferwrap1":                        true,
		"(*P1[go.shape.int]).fire":               false,
		"(*registry).seal":                       false,
		"(*registry).seal.func1":                 false,
		"bump":                                   false,
		"setArg[go.shape.int]":                   false,
		"init":                                   false,
		"init.0":                                 false,
		"init.func2":                             false,
		"(*atomicList[go.shape.func(int)]).load": false,
		"":                                       false,
		"(broken":                                false,
	} {
		if got := probeAPI([]byte(name + "\x00rest")); got != want {
			t.Errorf("probeAPI(%q) = %v, want %v", name, got, want)
		}
	}
}

// TestProgramModules: the modules read from the build info's text are the main
// module and the dependencies debug.ReadBuildInfo parses from it, in its order, and
// the same from the text form of build infos with dependencies, replacements and
// quoted settings, without a main module (go run of a file), and of none.
func TestProgramModules(t *testing.T) {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		t.Skip("this test binary has no build info")
	}
	want := []string{bi.Main.Path}
	for _, d := range bi.Deps {
		want = append(want, d.Path)
	}
	if got := programModules(); !slices.Equal(got, want) {
		t.Errorf("programModules() = %q, want %q", got, want)
	}
	for _, c := range []struct {
		info *debug.BuildInfo
		want []string
	}{
		{&debug.BuildInfo{Path: "command-line-arguments", Deps: []*debug.Module{{Path: "example.com/dep", Version: "v1.0.0", Replace: &debug.Module{Path: "../dep", Version: "(devel)"}}}},
			[]string{"", "example.com/dep"}},
		{&debug.BuildInfo{Path: "example.com/cmd", Main: debug.Module{Path: "example.com", Version: "(devel)"}},
			[]string{"example.com"}},
		{&debug.BuildInfo{Path: "example.com/cmd", Main: debug.Module{Path: "example.com", Version: "v1.2.0", Sum: "h1:x="},
			Deps:     []*debug.Module{{Path: "golang.org/x/sys", Version: "v0.1.0", Sum: "h1:y="}, {Path: "example.org/b", Version: "v2.0.0"}},
			Settings: []debug.BuildSetting{{Key: "-ldflags", Value: "-X \"main.v=a b\""}, {Key: "vcs", Value: "git"}}},
			[]string{"example.com", "golang.org/x/sys", "example.org/b"}},
		{&debug.BuildInfo{Path: "example.com/cmd"}, nil},
		{&debug.BuildInfo{}, nil},
	} {
		if got := modulesOf(c.info.String()); !slices.Equal(got, c.want) {
			t.Errorf("modulesOf(%q) = %q, want %q", c.info.String(), got, c.want)
		}
	}
}

// TestIndex: index finds a separator where bytes.Index does.
func TestIndex(t *testing.T) {
	for _, b := range []string{"", ".", ").", "(*T).M", "(*T)).M", "a.b.__sdt_fbt1_2t", "pkg.F.__sdt_fb", "..__sdt_fbt", "x).).", ")"} {
		for _, sep := range []string{").", ".__sdt_fbt", ".", ")"} {
			if got, want := index([]byte(b), sep), bytes.Index([]byte(b), []byte(sep)); got != want {
				t.Errorf("index(%q, %q) = %d, want %d", b, sep, got, want)
			}
		}
	}
}

//go:build linux

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gosdt/gosdt/internal/goversion"
	"github.com/gosdt/gosdt/internal/testbin"
)

// Go 1.27's names: generic methods (of a plain type and of a generic one) and a
// closure take run-time probes, and specs name them as go tool nm and
// runtime.FuncForPC do. The program is written here, not in testdata: its generic
// methods are not Go 1.26 source, which CI's gofmt reads.

const genStore = `package store

import "strconv"

type Box struct{ v int }

//go:noinline
func (b *Box) Map[T any](f func(int) T) T { return f(b.v) }

type G[T any] struct{ x T }

//go:noinline
func (g G[T]) Conv[U any](f func(T) U) U { return f(g.x) }

//go:noinline
func sink(n int) int { return n * 3 }

//go:noinline
func Adder(n int) func(int) int {
	return func(i int) int { return sink(n + i) }
}

func Itoa(i int) string { return strconv.Itoa(i) }
`

const genMain = `package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"

	"example.com/genapp/store"
	_ "github.com/gosdt/gosdt/sdt"
)

func main() {
	fmt.Println("ready")
	in := bufio.NewScanner(os.Stdin)
	b := &store.Box{}
	add := store.Adder(1)
	for in.Scan() {
		f := strings.Fields(in.Text())
		n, _ := strconv.Atoi(f[len(f)-1])
		for i := range n {
			_ = b.Map(store.Itoa)
			_ = store.G[int]{}.Conv(func(x int) string { return store.Itoa(x + i) })
			_ = add(i)
		}
		fmt.Println("done")
	}
}
`

const genSpec = "fbt:example.com/genapp/store:"

func genAppBin(t *testing.T) string {
	t.Helper()
	if r := goversion.Of(runtime.Version()); r == "go1.26" || r == "" {
		t.Skipf("generic methods are Go 1.27's; this is %s: run with GOTOOLCHAIN=go1.27.3 (CI's Go 1.27 leg does)", runtime.Version())
	}
	if runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64" {
		t.Skipf("run-time function probes are not written for %s", runtime.GOARCH)
	}
	return testbin.Once(t, "genapp", "genapp", func(bin string) error {
		root, _ := filepath.Abs("../..")
		dir, err := os.MkdirTemp("", "genapp")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		sum, _ := os.ReadFile("testdata/plainapp/go.sum")
		files := map[string]string{
			"go.mod":         "module example.com/genapp\n\ngo 1.27\n\nrequire github.com/gosdt/gosdt v0.0.0\n\nreplace github.com/gosdt/gosdt => " + root + "\n",
			"go.sum":         string(sum),
			"store/store.go": genStore,
			"main.go":        genMain,
		}
		for name, src := range files {
			os.MkdirAll(filepath.Join(dir, filepath.Dir(name)), 0o755)
			if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
				return err
			}
		}
		cmd := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "build", "-o", bin, ".")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off", "CGO_ENABLED=0", "GOOS=", "GOARCH="+runtime.GOARCH)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("building genapp: %v\n%s", err, out)
		}
		return nil
	})
}

func TestGo127Names(t *testing.T) {
	bin := genAppBin(t)
	nm, err := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "tool", "nm", bin).Output()
	if err != nil {
		t.Fatalf("go tool nm: %v", err)
	}
	// The names as go tool nm gives them (the linker's, with shapes) and as the
	// runtime prints them.
	const (
		mapNm    = "store.(*Box).Map[go.shape.string]"
		convNm   = "store.G[go.shape.int].Conv[go.shape.string]"
		closure  = "store.Adder.func1"
		mapPrint = "store.(*Box).Map[...]"
	)
	for _, s := range []string{mapNm, convNm, closure} {
		if !strings.Contains(string(nm), "example.com/genapp/"+s+"\n") {
			t.Fatalf("go tool nm has no %s:\n%s", s, nm)
		}
	}
	a := startPlainAppBin(t, bin)
	p := strconv.Itoa(a.pid)
	// Every spelling names the function: by its name alone, as FuncForPC prints it, as
	// go tool nm names it.
	for spec, want := range map[string]string{
		"Map:entry":                    mapNm,
		"(*Box).Map[...]:entry":        mapNm,
		mapPrint + ":entry":            mapNm,
		mapNm + ":entry":               mapNm,
		"Conv:entry":                   convNm,
		"G[...].Conv[...]:entry":       convNm,
		"Adder.func1:entry":            closure,
		"store.Adder.func1:entry":      closure,
		`(*Box).Map\[go.shape.*]:ent*`: mapNm,
	} {
		ps := listed(t, a.pid, genSpec+spec)
		pr, ok := ps[genSpec+want+":entry"]
		if !ok || pr.Kind != "runtime" || len(pr.Sites) != 1 || pr.Sites[0].State == "refused" {
			t.Errorf("list %s: want %s's run-time entry, placeable; got %+v", spec, want, ps)
		}
	}
	// Map's arguments, from 1.27's DWARF: its dictionary (after the receiver, in a
	// register) is not shown, and the arguments after it are in theirs.
	mp := listed(t, a.pid, genSpec+"Map:entry")[genSpec+mapNm+":entry"]
	if got := fmt.Sprint(mp.Args); !strings.Contains(got, "{b *store.Box") || !strings.Contains(got, "{f func(int) go.shape.string") || strings.Contains(got, ".dict") {
		t.Errorf("Map's arguments: %s", got)
	}
	// Events: entries and returns of each, counted exactly.
	tr := runCmd(cmdTrace, "-p", p, genSpec+":", "--json")
	for _, s := range []string{"Map:", "Conv:", "Adder.func1:"} {
		waitHeld(t, a.pid, genSpec+s, 1, 0)
	}
	const n = 200
	a.do(t, fmt.Sprint("calls ", n))
	time.Sleep(100 * time.Millisecond) // return events wait in their rings up to a millisecond
	if err := tr.end(t, time.Minute); err != nil {
		t.Fatalf("trace: %v\n%s", err, tr.stderr.String())
	}
	counts := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(tr.stdout.String()), "\n") {
		var ev struct{ Event struct{ Probe string } }
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("%v: %q", err, line)
		}
		counts[ev.Event.Probe]++
	}
	for _, f := range []string{mapNm, convNm, closure} {
		for _, b := range []string{"entry", "return"} {
			if k := genSpec + f + ":" + b; counts[k] != n {
				t.Errorf("%s: %d events, want %d (all: %v)\n%s", k, counts[k], n, counts, tr.stderr.String())
			}
		}
	}
}

// Command gen writes the disabled-cost kernels of package bench: one function per
// shape and variant, whose bodies differ only in the site snippet, so that every
// variant runs exactly the same loop. It writes one file,
// bench/internal/kernels/kernels_gen.go (loops of n iterations), which both the
// benchmarks and the callgrind program (bench/internal/callgrindprog) run.
//
// Run it from bench/ with `go generate` (see bench/generate.go).
package main

import (
	"bytes"
	"fmt"
	"go/format"
	"log"
	"os"
	"strings"
)

// ManySites is how many distinct sites the front-end-pressure shape has.
const ManySites = 1024

// wideSites is how many sites the wide straight-line body has.
const wideSites = 8

// variant is one way of writing a disabled check.
type variant struct {
	name string
	// site is the snippet for site i of shape, reporting the uint64 expression v.
	site func(shape string, i int, v string) string
	// decl declares what site i of shape needs at package level.
	decl func(shape string, i int) string
	// flag is the address expression of the flag that the cold shape evicts;
	// "" leaves the variant out of the cold shape.
	flag func() string
}

// gosdt is the gosdt variant: one kernel whose sites are sealed at start-up, or keep
// the compiler's branch check when the process runs with SDT_PATCH=off. The benchmark
// names it "sealed" or "branch" by the state its sites are in, so that the headline
// comparison is one function at one address, run twice, with only the sites' bytes
// differing (issue 15: separate functions at separate addresses measured alignment
// more than the site on some cores).
func gosdt(provider string) variant {
	pv := func(shape string, i int) string { return fmt.Sprintf("%s_%s%d", provider, shape, i) }
	return variant{
		name: "gosdt",
		site: func(shape string, i int, v string) string {
			return fmt.Sprintf("sdt.Probe1(&%s, int(%s))", pv(shape, i), v)
		},
		decl: func(shape string, i int) string {
			return fmt.Sprintf("var %s = sdt.Define1[int](%q, \"%s%d\", \"v\")", pv(shape, i), provider, shape, i)
		},
		flag: func() string { return "unsafe.Pointer(&" + pv("cold", 0) + ")" },
	}
}

var variants = []variant{
	{
		name: "none",
		site: func(string, int, string) string { return "" },
		decl: func(string, int) string { return "" },
		flag: func() string { return "unsafe.Pointer(&noneLine[64])" },
	},
	gosdt("bsdt"),
	{
		// The cheap idiomatic form: the Enabled guard, then LogAttrs (no boxing).
		name: "slog",
		site: func(shape string, i int, v string) string {
			return fmt.Sprintf("if logger.Enabled(ctx, slog.LevelDebug) { logger.LogAttrs(ctx, slog.LevelDebug, %q, slog.Uint64(\"v\", %s)) }", shape, v)
		},
		decl: func(string, int) string { return "" },
		flag: func() string { return "unsafe.Pointer(&logLevel)" },
	},
	{
		// runtime/trace's flag is runtime-internal: it cannot be evicted, so no cold shape.
		name: "trace",
		site: func(shape string, i int, v string) string {
			return fmt.Sprintf("if trace.IsEnabled() { trace.Log(ctx, %q, strconv.FormatUint(%s, 10)) }", shape, v)
		},
		decl: func(string, int) string { return "" },
		flag: func() string { return "" },
	},
	{
		name: "atomicbool",
		site: func(shape string, i int, v string) string {
			return fmt.Sprintf("if flag_%s%d.Load() { hook(%s) }", shape, i, v)
		},
		decl: func(shape string, i int) string { return fmt.Sprintf("var flag_%s%d atomic.Bool", shape, i) },
		flag: func() string { return "unsafe.Pointer(&flag_cold0)" },
	},
}

// shape writes the kernel of one shape for variant v. loop is the loop header
// ("for b.Loop() {" or "for range n {"); sig the function signature.
type shape struct {
	name  string
	sites int
	body  func(w *bytes.Buffer, v variant, loop string)
	cold  bool // needs a flag to evict
}

// Odd 64-bit constants, distinct per site, so that no two sites' work is the same.
func konst(i int) string { return fmt.Sprintf("%#x", uint64(0x9E3779B97F4A7C15)*uint64(2*i+1)|1) }

var shapes = []shape{
	{name: "chain", sites: 1, body: func(w *bytes.Buffer, v variant, loop string) {
		// Each iteration depends on the previous one through x.
		fmt.Fprintf(w, "x := uint64(1)\n%s\nx = x*6364136223846793005 + 1442695040888963407\n%s\n}\nSink = x\n",
			loop, v.site("chain", 0, "x"))
	}},
	{name: "wide", sites: wideSites, body: func(w *bytes.Buffer, v variant, loop string) {
		// Independent accumulators: the sites are off the critical path.
		var acc []string
		for i := range wideSites {
			acc = append(acc, fmt.Sprintf("a%d", i))
		}
		fmt.Fprintf(w, "var %s uint64\n%s\n", strings.Join(acc, ", "), loop)
		for i := range wideSites {
			fmt.Fprintf(w, "a%d += %s\n%s\n", i, konst(i), v.site("wide", i, fmt.Sprintf("a%d", i)))
		}
		fmt.Fprintf(w, "}\nSink = %s\n", strings.Join(acc, " ^ "))
	}},
	{name: "cold", sites: 1, cold: true, body: func(w *bytes.Buffer, v variant, loop string) {
		// The flag's cache line is flushed before every check.
		fmt.Fprintf(w, "x := uint64(1)\n%s\nevict(%s)\nx = x*6364136223846793005 + 1442695040888963407\n%s\n}\nSink = x\n",
			loop, v.flag(), v.site("cold", 0, "x"))
	}},
	{name: "many", sites: ManySites, body: func(w *bytes.Buffer, v variant, loop string) {
		fmt.Fprintf(w, "x := uint64(1)\n%s\nx = sites_%s(x)\n}\nSink = x\n", loop, v.name)
	}},
}

// manyChunk is how many sites one generated function holds. A function of more than
// 5000 IR nodes is "big" to the inliner, which then inlines only callees costing at
// most 20: sdt.Probe1 is not inlined there and such a site stays a call into sdt's
// shared body (branch-only). 1024 sites in one function are big; 128 are not.
const manyChunk = 128

// many writes sites_<variant>: ManySites straight-line sites, in functions of
// manyChunk called one after the other.
func many(w *bytes.Buffer, v variant) {
	fmt.Fprintf(w, "\n//go:noinline\nfunc sites_%s(x uint64) uint64 {\n", v.name)
	for c := range ManySites / manyChunk {
		fmt.Fprintf(w, "x = sites_%s_%d(x)\n", v.name, c)
	}
	fmt.Fprintln(w, "return x\n}")
	for c := range ManySites / manyChunk {
		fmt.Fprintf(w, "\n//go:noinline\nfunc sites_%s_%d(x uint64) uint64 {\n", v.name, c)
		var acc []string
		for i := range 8 {
			acc = append(acc, fmt.Sprintf("a%d", i))
			fmt.Fprintf(w, "a%d := x + %d\n", i, i)
		}
		for i := c * manyChunk; i < (c+1)*manyChunk; i++ {
			// A rotate between the adds, or the compiler folds a run of them into one.
			fmt.Fprintf(w, "a%d = bits.RotateLeft64(a%d, %d) + %s\n", i%8, i%8, 1+i%63, konst(i))
			if s := v.site("many", i, fmt.Sprintf("a%d", i%8)); s != "" {
				fmt.Fprintln(w, s)
			}
		}
		fmt.Fprintf(w, "return %s\n}\n", strings.Join(acc, " ^ "))
	}
}

func header(w *bytes.Buffer, pkg string, imports ...string) {
	fmt.Fprintln(w, "// Code generated by bench/internal/gen; DO NOT EDIT.")
	fmt.Fprintln(w, "// Regenerate with: cd bench && go generate")
	fmt.Fprintln(w)
	fmt.Fprintf(w, "package %s\n\nimport (\n", pkg)
	for _, im := range imports {
		if strings.Contains(im, ".") {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "%q\n", im)
	}
	fmt.Fprintln(w, ")")
}

func decls(w *bytes.Buffer) {
	for _, v := range variants {
		for _, s := range shapes {
			if s.cold && v.flag() == "" {
				continue
			}
			for i := range s.sites {
				if d := v.decl(s.name, i); d != "" {
					fmt.Fprintln(w, d)
				}
			}
		}
	}
}

// kernels writes every shape x variant function, named fn(shape, variant).
func kernels(w *bytes.Buffer, sig, loop string) {
	for _, s := range shapes {
		for _, v := range variants {
			if s.cold && v.flag() == "" {
				continue
			}
			fmt.Fprintf(w, "\nfunc %s_%s%s {\n", s.name, v.name, sig)
			s.body(w, v, loop)
			fmt.Fprintln(w, "}")
		}
	}
	for _, v := range variants {
		many(w, v)
	}
}

// table writes the list of kernels by shape, in variant order.
func table(w *bytes.Buffer) {
	fmt.Fprintf(w, "\n// Kernels lists every shape's variants, \"none\" first.\nvar Kernels = []Kernel{\n")
	for _, s := range shapes {
		fmt.Fprintf(w, "{%q, %d, []Variant{\n", s.name, s.sites)
		for _, v := range variants {
			if s.cold && v.flag() == "" {
				continue
			}
			fmt.Fprintf(w, "{%q, %s_%s},\n", v.name, s.name, v.name)
		}
		fmt.Fprintln(w, "}},")
	}
	fmt.Fprintln(w, "}")
}

// Pads is how many code alignments the alignment kernels put each cross-peer loop at.
const Pads = 4 // kernels.Pads

// alignShapes are the shapes whose loops are small enough for their alignment to decide
// more than their checks do (issue 15).
var alignShapes = []string{"chain", "wide"}

// padded writes the alignment kernels: for each shape of alignShapes and each variant,
// Pads copies whose loops start at different offsets, after 0..Pads-1 increments of
// distinct package-level counters (7 bytes each on amd64) that the loop does not touch.
// The gosdt variant's copies define their own probes (provider bpad), so that the
// headline kernels' site count is unchanged.
func padded(w *bytes.Buffer, sig, loop string) {
	fmt.Fprintf(w, "\n// padCounters shift the alignment kernels' loops.\nvar padCounters [%d]uint64\n", Pads)
	for _, name := range alignShapes {
		s := shapeNamed(name)
		for _, v := range variants {
			if v.name == "gosdt" {
				v = gosdt("bpad")
			}
			for p := range Pads {
				pv := v
				if v.name == "gosdt" {
					// Distinct definitions per copy: each site belongs to one function.
					inner := v
					pv.site = func(shape string, i int, x string) string { return inner.site(fmt.Sprintf("%sp%d_", shape, p), i, x) }
					pv.decl = func(shape string, i int) string { return inner.decl(fmt.Sprintf("%sp%d_", shape, p), i) }
				}
				fmt.Fprintf(w, "\nfunc %s_%s_pad%d%s {\n", s.name, v.name, p, sig)
				for j := range p {
					fmt.Fprintf(w, "padCounters[%d]++\n", j)
				}
				s.body(w, pv, loop)
				fmt.Fprintln(w, "}")
				if v.name == "gosdt" {
					for i := range s.sites {
						fmt.Fprintln(w, pv.decl(s.name, i))
					}
				}
			}
		}
	}
	fmt.Fprintf(w, "\n// Aligned lists the alignment kernels: Aligned[shape][variant][pad].\nvar Aligned = []Kernel{\n")
	for _, name := range alignShapes {
		s := shapeNamed(name)
		fmt.Fprintf(w, "{%q, %d, []Variant{\n", s.name, s.sites)
		for _, v := range variants {
			for p := range Pads {
				fmt.Fprintf(w, "{\"%s/pad=%d\", %s_%s_pad%d},\n", v.name, p, s.name, v.name, p)
			}
		}
		fmt.Fprintln(w, "}},")
	}
	fmt.Fprintln(w, "}")
}

func shapeNamed(name string) shape {
	for _, s := range shapes {
		if s.name == name {
			return s
		}
	}
	panic("gen: no shape " + name)
}

func write(path string, b *bytes.Buffer) {
	src, err := format.Source(b.Bytes())
	if err != nil {
		os.WriteFile(path+".broken", b.Bytes(), 0o644)
		log.Fatalf("gen: %s: %v", path, err)
	}
	if err := os.WriteFile(path, src, 0o644); err != nil {
		log.Fatal(err)
	}
}

func main() {
	imports := []string{"log/slog", "math/bits", "runtime/trace", "strconv", "sync/atomic", "unsafe", "github.com/gosdt/gosdt/sdt"}

	var b bytes.Buffer
	header(&b, "kernels", imports...)
	fmt.Fprint(&b, `
// Kernel is one shape's variants.
type Kernel struct {
	Shape    string
	Sites    int // sites per iteration
	Variants []Variant
}

// Variant is one way of writing the shape's checks: Fn runs n iterations.
type Variant struct {
	Name string
	Fn   func(n int)
}
`)
	decls(&b)
	kernels(&b, "(n int)", "for range n {")
	table(&b)
	padded(&b, "(n int)", "for range n {")
	write("internal/kernels/kernels_gen.go", &b)
}

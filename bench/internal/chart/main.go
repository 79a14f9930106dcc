// Command chart reads `go test -bench` output of BenchmarkDisabled and
// BenchmarkEnabled, writes an SVG bar chart of the median ns/op of every shape's
// variants (one panel per shape, each with its own scale), and prints a Markdown
// table of medians and of each variant's added time over "none" relative to
// "branch". Usage:
//
//	go run ./bench/internal/chart -o bench/disabled.svg < bench.txt
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// line matches "BenchmarkDisabled/shape=wide/variant=sealed-2  123  4.5 ns/op ...".
var line = regexp.MustCompile(`^BenchmarkDisabled/shape=([^/]+)/variant=([^-\s]+)(?:-\d+)?\s+\d+\s+([0-9.]+) ns/op`)

type series struct {
	shapes   []string
	variants map[string][]string // per shape, in order of appearance
	values   map[[2]string][]float64
}

func parse(r io.Reader) (*series, error) {
	s := &series{variants: map[string][]string{}, values: map[[2]string][]float64{}}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		m := line.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		v, err := strconv.ParseFloat(m[3], 64)
		if err != nil {
			return nil, err
		}
		k := [2]string{m[1], m[2]}
		if !slices.Contains(s.shapes, m[1]) {
			s.shapes = append(s.shapes, m[1])
		}
		if !slices.Contains(s.variants[m[1]], m[2]) {
			s.variants[m[1]] = append(s.variants[m[1]], m[2])
		}
		s.values[k] = append(s.values[k], v)
	}
	for _, sh := range s.shapes {
		slices.SortStableFunc(s.variants[sh], func(a, b string) int { return rank(a) - rank(b) })
	}
	return s, sc.Err()
}

// rank orders variants as the README reads them; the report merges runs in which
// branch comes last.
func rank(v string) int {
	if i := slices.Index([]string{"none", "branch", "sealed", "slog", "trace", "atomicbool"}, v); i >= 0 {
		return i
	}
	return 100
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	ys := slices.Clone(xs)
	slices.Sort(ys)
	if n := len(ys); n%2 == 1 {
		return ys[n/2]
	} else {
		return (ys[n/2-1] + ys[n/2]) / 2
	}
}

var colors = map[string]string{
	"none": "#9e9e9e", "branch": "#e07b39", "sealed": "#2f7ed8",
	"slog": "#8c564b", "trace": "#9467bd", "atomicbool": "#2ca02c",
}

func svg(w io.Writer, s *series) {
	const pw, ph, top, left, barw, gap = 260, 220, 40, 50, 30, 8
	width := left + len(s.shapes)*(pw+20)
	height := top + ph + 80
	fmt.Fprintf(w, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="11">`+"\n", width, height)
	fmt.Fprintf(w, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(w, `<text x="10" y="18" font-size="14">Disabled check, median ns per loop iteration (BenchmarkDisabled; each panel has its own scale)</text>`+"\n")
	for i, shape := range s.shapes {
		x0 := left + i*(pw+20)
		vs := s.variants[shape]
		maxv := 0.0
		for _, v := range vs {
			maxv = max(maxv, median(s.values[[2]string{shape, v}]))
		}
		fmt.Fprintf(w, `<text x="%d" y="%d" font-size="13">shape=%s</text>`+"\n", x0, top-5, shape)
		fmt.Fprintf(w, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`+"\n", x0, top+ph, x0+pw, top+ph)
		for j, v := range vs {
			m := median(s.values[[2]string{shape, v}])
			h := 0.0
			if maxv > 0 {
				h = m / maxv * (ph - 20)
			}
			bx := x0 + 5 + j*(barw+gap)
			fmt.Fprintf(w, `<rect x="%d" y="%.1f" width="%d" height="%.1f" fill="%s"/>`+"\n", bx, top+ph-h, barw, h, colors[v])
			fmt.Fprintf(w, `<text x="%d" y="%.1f" text-anchor="middle">%s</text>`+"\n", bx+barw/2, top+ph-h-3, format(m))
			fmt.Fprintf(w, `<text transform="translate(%d,%d) rotate(45)">%s</text>`+"\n", bx+barw/2-4, top+ph+12, v)
		}
	}
	fmt.Fprintln(w, "</svg>")
}

func format(v float64) string {
	switch {
	case v >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

// table prints, per shape, each variant's median, its added time over none, and
// that added time as a fraction of branch's (when branch's is not within noise).
func table(w io.Writer, s *series) {
	fmt.Fprintln(w, "| shape | variant | median ns/op | added over none | added / branch's added |")
	fmt.Fprintln(w, "|---|---|---:|---:|---:|")
	for _, shape := range s.shapes {
		none := median(s.values[[2]string{shape, "none"}])
		branch := median(s.values[[2]string{shape, "branch"}]) - none
		for _, v := range s.variants[shape] {
			m := median(s.values[[2]string{shape, v}])
			ratio := "-"
			// A ratio to an added time within noise (under 5% of none) means nothing.
			if v != "none" && branch > 0.05*none {
				ratio = fmt.Sprintf("%.2f", (m-none)/branch)
			}
			fmt.Fprintf(w, "| %s | %s | %s | %+.2f | %s |\n", shape, v, format(m), m-none, ratio)
		}
	}
}

func main() {
	out := flag.String("o", "disabled.svg", "SVG file to write")
	flag.Parse()
	s, err := parse(os.Stdin)
	if err != nil {
		log.Fatal(err)
	}
	if len(s.shapes) == 0 {
		log.Fatal("chart: no BenchmarkDisabled lines on stdin")
	}
	var b strings.Builder
	svg(&b, s)
	if err := os.WriteFile(*out, []byte(b.String()), 0o644); err != nil {
		log.Fatal(err)
	}
	table(os.Stdout, s)
}

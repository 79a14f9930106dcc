// Command exporttrees measures sdtctl export's span trees of run-time function probes
// on a real server, go-httpbin (a module of its own, so that gosdt does not depend on
// it):
//
//	exporttrees serve ADDR             go-httpbin on ADDR, with gosdt's control server
//	exporttrees load URL G N           G clients make N requests each to URL
//	exporttrees spans FILE HANDLER     figures of the spans a collector's file exporter
//	                                   wrote: spans, traces, gosdt.unfinished,
//	                                   gosdt.entry_unseen, and the spans of HANDLER whose
//	                                   tree is exact
//
// A HANDLER span is exact when every span under it has its entry and its return, lies
// within its parent's time on its parent's goroutine and trace, and the tree of their
// names is the one most HANDLER spans have (every request takes the same path).
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"

	_ "github.com/gosdt/gosdt/sdt"
	"github.com/mccutchen/go-httpbin/v2/httpbin"
)

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: exporttrees serve ADDR | load URL G N | spans FILE HANDLER")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "serve":
		fmt.Fprintln(os.Stderr, http.ListenAndServe(os.Args[2], httpbin.New()))
		os.Exit(1)
	case "load":
		g, _ := strconv.Atoi(os.Args[3])
		n, _ := strconv.Atoi(os.Args[4])
		if err := load(os.Args[2], g, n); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	case "spans":
		if err := figures(os.Args[2], os.Args[3]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}

func load(url string, g, n int) error {
	var wg sync.WaitGroup
	errs := make(chan error, g)
	for range g {
		wg.Go(func() {
			for range n {
				r, err := http.Get(url)
				if err != nil {
					errs <- err
					return
				}
				io.Copy(io.Discard, r.Body)
				r.Body.Close()
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

type span struct {
	TraceID, SpanID, ParentSpanID, Name string
	Start, End                          uint64
	goroutine                           int64
	bad                                 bool // gosdt.unfinished or gosdt.entry_unseen
	kids                                []*span
}

type otlp struct {
	ResourceSpans []struct {
		ScopeSpans []struct {
			Spans []struct {
				TraceID           string `json:"traceId"`
				SpanID            string `json:"spanId"`
				ParentSpanID      string `json:"parentSpanId"`
				Name              string `json:"name"`
				StartTimeUnixNano string `json:"startTimeUnixNano"`
				EndTimeUnixNano   string `json:"endTimeUnixNano"`
				Attributes        []struct {
					Key   string
					Value map[string]any
				}
			}
		}
	}
}

func figures(file, handler string) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	var spans []*span
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<30)
	unfinished, unseen := 0, 0
	for sc.Scan() {
		var d otlp
		if err := json.Unmarshal(sc.Bytes(), &d); err != nil {
			return err
		}
		for _, rs := range d.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					sp := &span{TraceID: s.TraceID, SpanID: s.SpanID, ParentSpanID: s.ParentSpanID, Name: s.Name}
					sp.Start, _ = strconv.ParseUint(s.StartTimeUnixNano, 10, 64)
					sp.End, _ = strconv.ParseUint(s.EndTimeUnixNano, 10, 64)
					for _, a := range s.Attributes {
						switch a.Key {
						case "gosdt.unfinished":
							sp.bad = true
							unfinished++
						case "gosdt.entry_unseen":
							sp.bad = true
							unseen++
						case "gosdt.goroutine":
							s, _ := a.Value["intValue"].(string)
							sp.goroutine, _ = strconv.ParseInt(s, 10, 64)
						}
					}
					spans = append(spans, sp)
				}
			}
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	byID := map[string]*span{}
	traces := map[string]bool{}
	for _, s := range spans {
		byID[s.SpanID] = s
		traces[s.TraceID] = true
	}
	for _, s := range spans {
		if p := byID[s.ParentSpanID]; p != nil {
			p.kids = append(p.kids, s)
		}
	}
	for _, s := range spans {
		sort.Slice(s.kids, func(i, j int) bool { return s.kids[i].Start < s.kids[j].Start })
	}
	var hs []*span
	shapes := map[string]int{}
	for _, s := range spans {
		if s.Name == handler {
			hs = append(hs, s)
			if !s.bad {
				shapes[shape(s)]++
			}
		}
	}
	modal, most := "", 0
	for sh, n := range shapes {
		if n > most {
			modal, most = sh, n
		}
	}
	exact := 0
	for _, s := range hs {
		if !s.bad && sound(s) && shape(s) == modal {
			exact++
		}
	}
	pct := 0.0
	if len(hs) > 0 {
		pct = 100 * float64(exact) / float64(len(hs))
	}
	fmt.Printf("%d spans, %d traces, %d gosdt.unfinished, %d gosdt.entry_unseen; %d spans of %s, %d (%.1f%%) exact; their tree: %s\n",
		len(spans), len(traces), unfinished, unseen, len(hs), handler, exact, pct, modal)
	return nil
}

// shape is the tree of names under s.
func shape(s *span) string {
	var b strings.Builder
	b.WriteString(s.Name)
	if len(s.kids) > 0 {
		b.WriteString("(")
		for i, k := range s.kids {
			if i > 0 {
				b.WriteString(" ")
			}
			b.WriteString(shape(k))
		}
		b.WriteString(")")
	}
	return b.String()
}

// sound reports whether every span under s has its entry and return, and lies
// within its parent's time, on its goroutine and in its trace.
func sound(s *span) bool {
	for _, k := range s.kids {
		if k.bad || k.Start < s.Start || k.End > s.End || k.goroutine != s.goroutine || k.TraceID != s.TraceID || !sound(k) {
			return false
		}
	}
	return true
}

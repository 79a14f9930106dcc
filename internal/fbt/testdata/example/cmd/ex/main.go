// Command ex exercises the instrumented package store. "hooks" checks fbt through
// in-process hooks and prints what it saw; "serve" runs the workload once per line
// of stdin, for sdtctl.
package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"example.com/fbtex/store"
	"github.com/gosdt/gosdt/sdt"
)

func workload() {
	db := store.New()
	db.Put("a", 1)
	db.Get("a")
	db.Get("zz")
	store.Fib(10)
	store.Counter(3)
	store.Pair{A: 1, B: 2}.Sum()
	store.Div(7, 2)
	store.Map([]int{1, 2}, func(x int) string { return fmt.Sprint(x * 2) })
	var s store.Stack[string]
	s.Push("x")
	s.Pop()
	s.Pop()
	store.Parallel(4, 5)
	store.Blank(1, "")
	db.Len()
	store.Sum(1, 2, 3)
	store.Pair{}.Zero()
	store.Shadow(1)
	store.Shadow(0)
	func() {
		defer func() { recover() }()
		store.Div(1, 0)
	}()
}

func main() {
	switch os.Args[1] {
	case "hooks":
		hooks()
	case "panic": // a panic in a traced call: its trace shows the user's lines
		must(sdt.Enable("fbt:example.com/fbtex/store:store.Div:"))
		store.Div(1, 0)
	case "plainpanic":
		store.Div(1, 0)
	case "loop": // the workload, over and over (for the README's sdtctl stat)
		fmt.Println("ready")
		for {
			workload()
		}
	case "serve":
		fmt.Println("ready")
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			workload()
			fmt.Println("done")
		}
	}
}

func must(n int, err error) {
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
}

func hooks() {
	const all = "fbt:example.com/fbtex/store::"
	infos, err := sdt.List(all)
	must(0, err)
	sites, branch := 0, 0
	fns := map[string]bool{}
	for _, pi := range infos {
		if pi.Kind == "runtime" {
			continue // the functions rules did not instrument, which run-time probes could take
		}
		fns[pi.Function] = true
		for _, s := range pi.Sites {
			sites++
			if s.State == sdt.BranchOnly {
				branch++
				fmt.Println("branch-only:", pi, s.Reason)
			}
		}
	}
	names := make([]string, 0, len(fns))
	for f := range fns {
		names = append(names, f)
	}
	slices.Sort(names)
	fmt.Println("functions:", strings.Join(names, " "))
	fmt.Println("branch-only sites:", branch, "of", sites > 0)

	// Counts and values of every call, through hooks.
	var mu sync.Mutex
	enters, exits := map[string]int{}, map[string]int{}
	var log []string
	detach, n, err := sdt.HookFuncs(all, 0, sdt.FuncHook{
		Enter: func(c *sdt.Call) {
			mu.Lock()
			enters[c.Func()]++
			if !strings.HasSuffix(c.Func(), "Fib") {
				log = append(log, fmt.Sprintf("enter %s recv=%v args=%v", short(c.Func()), c.Recv() != nil, show(c.Args())))
			}
			mu.Unlock()
		},
		Exit: func(c *sdt.Call) {
			mu.Lock()
			exits[c.Func()]++
			if !strings.HasSuffix(c.Func(), "Fib") {
				log = append(log, fmt.Sprintf("exit %s results=%v panicking=%v", short(c.Func()), c.Results(), c.Panicking()))
			}
			mu.Unlock()
		},
	})
	must(n, err)
	fmt.Println("hooked functions:", n)
	workload() // off: hooks do not run
	fmt.Println("calls while off:", len(enters), len(exits))
	must(sdt.Enable(all))
	workload()
	must(sdt.Disable(all))
	workload()
	detach()
	for _, l := range log {
		fmt.Println(l)
	}
	keys := make([]string, 0, len(enters))
	for k := range enters {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Printf("%s entries=%d exits=%d\n", short(k), enters[k], exits[k])
	}

	// Order: outermost first in, last out; SkipCall; results changed at exit.
	var order []string
	for i, name := range []string{"outer", "inner"} {
		d, _, err := sdt.HookFuncs("fbt:example.com/fbtex/store:store.Div:", i, sdt.FuncHook{
			Enter: func(c *sdt.Call) {
				order = append(order, "enter "+name)
				if name == "inner" && c.Args()[1] == 0 {
					c.SkipCall(42, -1)
				}
			},
			Exit: func(c *sdt.Call) {
				order = append(order, fmt.Sprintf("exit %s %v", name, c.Results()))
				if name == "outer" {
					c.SetResult(1, 99)
				}
			},
		})
		must(0, err)
		defer d()
	}
	must(sdt.Enable("fbt:example.com/fbtex/store:store.Div:"))
	q, r := store.Div(1, 0) // skipped by the inner hook: no panic
	fmt.Println("Div(1, 0) skipped:", q, r, order)
	order = nil
	q, r = store.Div(7, 2)
	fmt.Println("Div(7, 2):", q, r, order)
	must(sdt.Disable("fbt:example.com/fbtex/store:store.Div:"))
	q, r = store.Div(7, 2)
	fmt.Println("Div(7, 2) off:", q, r)

	// Goroutines: exact counts under concurrency.
	var fibs atomic.Int64
	d, _, err := sdt.HookFuncs("fbt:example.com/fbtex/store:store.Fib:", 0, sdt.FuncHook{Exit: func(*sdt.Call) { fibs.Add(1) }})
	must(0, err)
	must(sdt.Enable("fbt:example.com/fbtex/store:store.Fib:return"))
	fmt.Println("Parallel(8, 12):", store.Parallel(8, 12), "Fib returns:", fibs.Load())
	must(sdt.Disable("fbt:example.com/fbtex/store:store.Fib:return"))
	d()
	_, _, err = sdt.HookFuncs("fbt:nosuch::", 0, sdt.FuncHook{})
	fmt.Println("no match:", errors.Is(err, sdt.ErrNoMatch))
}

// show prints functions by type: their addresses change from build to build.
func show(xs []any) []any {
	out := append([]any(nil), xs...)
	for i, x := range out {
		if x != nil && reflect.TypeOf(x).Kind() == reflect.Func {
			out[i] = reflect.TypeOf(x).String()
		}
	}
	return out
}

func short(f string) string { return strings.TrimPrefix(f, "example.com/fbtex/store.") }

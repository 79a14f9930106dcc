package sled

import (
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"
)

// Config tells discovery about the probe package without importing it.
type Config struct {
	// ProbePackage is the import path of package sdt. Its own functions hold no sites:
	// a check there is the body of a Probe function that was not inlined, shared by
	// every probe of that shape, so patching it would switch all of them at once.
	ProbePackage string
	// IsFire reports whether a call to the function named sym fires a probe.
	IsFire func(sym string) bool
}

// Discover finds, verifies and describes every probe site in the running program. It
// only reads; converting sites to their sleds is the caller's job (package patch). A
// sealed binary's sites come from its site table, checked byte for byte, not a scan.
func Discover(cfg Config) *Table {
	start := time.Now()
	var t *Table
	if SealedBinary() {
		t = loadSealed(self(), cfg)
	} else {
		t = discoverArch(runtime.GOARCH, self(), cfg)
	}
	t.Elapsed = time.Since(start)
	return t
}

// discoverArch runs the site matcher of goarch over src.
func discoverArch(goarch string, src source, cfg Config) *Table {
	var t *Table
	switch {
	case len(src.text) == 0:
		return &Table{Reason: "text section not found"}
	case goarch == "amd64":
		t = discoverAMD64(src, cfg)
	case goarch == "arm64":
		t = discoverARM64(src, cfg)
	default:
		return &Table{Reason: "no site matcher for " + goarch + ": probes work through their branch check"}
	}
	sort.Slice(t.Sites, func(i, j int) bool { return t.Sites[i].Addr < t.Sites[j].Addr })
	return t
}

// raceCall reports calls that -race inserts around memory accesses; they may precede
// the fire call in a guarded block and do not end it.
func raceCall(sym string) bool {
	return strings.HasPrefix(sym, "runtime.race")
}

// refuseInside refuses a site whose function (entry) is in the probe package itself.
// No user code is ever inlined into that package's functions, so its outermost
// function being there means no frame of the inline tree is the user's.
func (s *Site) refuseInside(src source, entry uintptr, probePkg string) {
	s.probePkg, s.syms = probePkg, src.syms
	if entry == 0 || s.Reason != "" {
		return
	}
	if mod, _ := SplitFunc(src.syms.name(entry)); mod == probePkg {
		s.Reason = "check inside package " + probePkg + " itself (Probe body not inlined, as with -gcflags=-l): patching it would switch every probe of that shape"
	}
}

// Describe names the function that holds the probe statement (inlining resolved), its
// package, file and line. Discovery leaves it for later, when a probe is first listed
// or enabled: walking the inline tree costs a scan of the function's tables from its
// start, per site, which in large functions made discovery quadratic. Callers
// serialise calls (package sdt does so under its lock).
func (s *Site) Describe() {
	if s.described {
		return
	}
	s.described = true
	if s.syms != nil {
		s.Func, s.Module, s.File, s.Line = s.syms.holder(s.Addr, s.probePkg)
	}
}

// minPerWorker is the fewest candidates worth a goroutine of their own (a variable for
// the tests): below it, the start of a goroutine and the functions two workers would
// both walk cost more than they save.
var minPerWorker = 32

// parallelism is how many goroutines prove n candidates: one per core (GOMAXPROCS),
// fewer when there are few candidates.
func parallelism(n int) int {
	return max(1, min(runtime.GOMAXPROCS(0), n/minPerWorker))
}

// minScanPerWorker is the least text worth searching on a goroutine of its own (a
// variable for the tests).
var minScanPerWorker = 1 << 20

// scanParallelism is how many goroutines search n bytes of text for candidates.
func scanParallelism(n int) int {
	return max(1, min(runtime.GOMAXPROCS(0), n/minScanPerWorker))
}

// inParallel calls do(w, i) for every i in [0, n), worker w taking the w-th of
// workers contiguous runs, and waits for all. One worker runs on the caller's
// goroutine.
func inParallel(workers, n int, do func(w, i int)) {
	run := func(w int) {
		for i := w * n / workers; i < (w+1)*n/workers; i++ {
			do(w, i)
		}
	}
	var wg sync.WaitGroup
	for w := 1; w < workers; w++ {
		wg.Go(func() { run(w) })
	}
	run(0)
	wg.Wait()
}

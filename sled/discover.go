package sled

import (
	"runtime"
	"sort"
	"sync"
	"time"

	"github.com/gosdt/gosdt/arch"
	"github.com/gosdt/gosdt/internal/goversion"
	"github.com/gosdt/gosdt/internal/sealfmt"
)

// Discover finds, verifies and describes every probe site in the running program. It
// only reads; converting sites to their sleds is the caller's job (package patch). A
// sealed binary's sites come from its site table, checked byte for byte, not a scan.
func Discover() *Table {
	start := time.Now()
	var t *Table
	switch src := self(); {
	case goversion.CheckRunning(goversion.FuncTab) != nil:
		// Its function table is not read: no text, no site (a sealed binary's table
		// is checked against the text through it too).
		t = &Table{Reason: goversion.CheckRunning(goversion.FuncTab).Error()}
	case sealfmt.Sealed():
		t = loadSealed(src)
	case len(src.Text) == 0:
		t = &Table{Reason: "text section not found"}
	case host == nil:
		t = &Table{Reason: "no site matcher for " + runtime.GOARCH + ": probes work through their branch check"}
	default:
		t = Scan(host, src)
	}
	t.Elapsed = time.Since(start)
	return t
}

// Scan finds and proves the probe sites of src's text, whose code is a's. It searches
// the text for checks (Arch.Candidates), keeps those that read data or bss, and
// proves each, cheapest first: the code after it is a site's branch (Follow), whose
// fire target calls a fire method with the flag as receiver (GuardedCall); only then
// is its function walked to prove the site on instruction boundaries with no branch
// into it (Walk, Match), and its sled proven and encoded (Seal). A check of a flag that
// some proven site reads, around other code (if p.Enabled() { ... }), is then a guard
// site when it matches the shape, and otherwise a site refused with the reason. Every
// other candidate is rejected with the reason. The text is searched and the candidates
// proven on several goroutines when it pays.
func Scan(a *arch.Arch, src Source) *Table {
	text := src.Text
	t := &Table{TextBytes: len(text)}
	if len(text) == 0 {
		t.Reason = "text section not found"
		return t
	}
	search := src.Search
	t.Search = src.SearchBy
	if search == nil {
		search = [][2]int{{0, len(text)}}
		if t.Search == "" {
			t.Search = "all the text"
		}
	}
	for _, r := range search {
		t.Searched += r[1] - r[0]
	}
	// The search reads the text, which takes most of discovery's time in a large
	// program with few sites: each core searches its part.
	pieces := cutRanges(search, scanParallelism(t.Searched))
	parts := make([][]arch.Check, len(pieces))
	inParallel(scanParallelism(t.Searched), len(pieces), func(_, p int) {
		found := a.Candidates(text, src.Base, pieces[p][0], pieces[p][1])
		parts[p] = found[:0]
		for _, c := range found {
			if src.InData(c.Flag) { // not noptrdata/noptrbss (write barrier flags and the like): never a probe
				parts[p] = append(parts[p], c)
			}
		}
	})
	// Memory a program has not touched yet costs a page fault a page (and more in a
	// VM): discovery allocates what it needs once, and compacts in place.
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	cands := make([]candidate, 0, n)
	for _, p := range parts {
		for _, c := range p {
			cands = append(cands, candidate{site: arch.Site{Check: c}})
		}
	}
	t.Candidates = len(cands)

	// Each worker proves a contiguous run of candidates, with its own walked functions
	// and decoded instructions: candidates in one function go to one worker.
	workers := make([]prover, parallelism(len(cands)))
	for i := range workers {
		workers[i] = newProver(a, src)
	}
	// A fired check that matches the site shape makes its flag a probe's: it is a site,
	// proven at once while its instructions are in the worker's cache.
	sites := make([]Site, len(cands))
	made := make([]bool, len(cands))
	inParallel(len(workers), len(cands), func(wi, i int) {
		c, w := &cands[i], &workers[wi]
		w.mem.Reset()
		if w.check(c); c.fired && c.matchErr == nil {
			sites[i], made[i] = w.site(c), true
		}
	})
	probes := map[uint64]bool{}
	for i := range cands {
		if made[i] {
			probes[cands[i].site.Check.Flag] = true
		}
	}
	inParallel(len(workers), len(cands), func(wi, i int) {
		c, w := &cands[i], &workers[wi]
		switch {
		case made[i] || !probes[c.site.Check.Flag]:
			return
		case c.followErr != nil && c.site.Addr == 0:
			// The check of a known probe's flag leads to no branch we can see (arm64:
			// the loaded value is reused, or tested through other code): nothing to
			// patch, and the code keeps working through whatever it does with the flag.
			return
		}
		w.mem.Reset()
		if !c.fired && c.followErr == nil {
			// A check of a known probe around other code (if p.Enabled() { ... }): a
			// site if it matches the shape; otherwise site says why not.
			w.match(c)
		}
		sites[i], made[i] = w.site(c), true
	})
	t.Sites = sites[:0] // in place: the i-th site goes to an index at most i
	for i := range cands {
		if made[i] {
			t.Sites = append(t.Sites, sites[i])
			continue
		}
		c := &cands[i]
		why := c.why
		if c.matchErr != nil {
			why = c.matchErr.Error()
		}
		t.Rejected = append(t.Rejected, Rejection{Addr: uintptr(c.site.Check.Addr), Flag: uintptr(c.site.Check.Flag), Reason: why})
	}
	sort.Slice(t.Sites, func(i, j int) bool { return t.Sites[i].Addr < t.Sites[j].Addr })
	return t
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

// cutRanges cuts ranges so that none is longer than an n-th of their total, for n
// workers to share.
func cutRanges(ranges [][2]int, n int) [][2]int {
	total := 0
	for _, r := range ranges {
		total += r[1] - r[0]
	}
	step := max(1, (total+n-1)/n)
	var out [][2]int
	for _, r := range ranges {
		for lo := r[0]; lo < r[1]; lo += step {
			out = append(out, [2]int{lo, min(lo+step, r[1])})
		}
	}
	return out
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

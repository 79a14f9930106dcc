package sled

import (
	"bytes"
	"runtime"
	"runtime/debug"
	"sort"
	"strings"
)

// Which of the running program's text discovery searches. A probe site reads a probe
// definition's flag, and definitions live in packages that import sdt, which no package
// of the standard library does. With inlining a site can land in another package's
// function, but only in one that imports, directly or not, the package that holds the
// probe statement: again never the standard library. So only the functions of the
// program's own modules (the main module and its dependencies, from the build info)
// and of package main can hold a site, and also those of a standard package that
// `sdtctl toolexec -rules` instrumented: its traced copies are named
// pkg.__sdt_fbt<i>_<j>t. Searching only those spares the start-up most of the text
// (hello world with one probe: 1.1 MB of text, almost all of it the runtime and fmt).
// But a site is always the flag check of one of package sdt's functions inlined into
// another (package sdt itself reads flags only through pointers, which are no sites),
// so only the functions whose inline tree names a function of sdt's API (the call that
// brought sdt's code in) can hold one (inltree.go): in a large program with few sites
// that spares the first read of almost all its text, and needs neither the build info
// nor the names. Where the
// inline trees cannot be read, discovery searches all the functions of the packages
// above; where the build info or the function names are not there either (a GOPATH
// build, names that do not check out), all the text. A site that a search misses
// would still work, through its branch check.

// fbtCopy marks the traced copies of functions instrumented by rules (internal/fbt).
var fbtCopy = []byte(".__sdt_fbt")

// searchRanges returns the parts of the text, as offsets [lo, hi) sorted and merged,
// that can hold probe sites, nil when it cannot tell (search everything), and how it
// chose them (Table.Search): the functions whose inline tree names a function of
// package sdt, or where the inline trees cannot be read, those of the packages that
// can hold sites.
func (l Layout) searchRanges() ([][2]int, string) {
	return l.searchRangesOf(programModules(), true)
}

// searchRangesOf is searchRanges for a program of modules mods (nil: no build info),
// checking first that the inline trees read as the runtime's if live.
func (l Layout) searchRangesOf(mods []string, live bool) ([][2]int, string) {
	if len(l.funcs) < 2 || l.funcnames == nil {
		return nil, "all the text: function names unknown"
	}
	why := l.inl.why
	if why == "" && live {
		if err := l.checkInlineTrees(); err != nil {
			why = err.Error()
		}
	}
	if why == "" {
		r, err := l.inliners()
		if err == nil {
			return r, "functions that inlined package sdt's (inline trees)"
		}
		why = err.Error()
	}
	if mods == nil {
		return nil, "all the text: no build info, no inline trees (" + why + ")"
	}
	r := l.packageFuncs(mods)
	if r == nil {
		return nil, "all the text: function names unknown"
	}
	return r, "functions of the program's modules (inline trees unread: " + why + ")"
}

// minInlinersPerWorker is the fewest functions worth a goroutine of their own when
// reading inline trees: most of the time goes in first reads of the function table.
var minInlinersPerWorker = 8192

// inliners returns the text of the functions whose inline tree names a function of
// package sdt's API, as offsets [lo, hi) sorted and merged; never nil. It finds them
// from the trees' side (inlinersByTree) where trees are dense enough, and otherwise,
// or where that cannot tell, from every function's record. Both give the same
// functions (FileSearch's check, in every build TestSearchBuilds makes).
func (l Layout) inliners() ([][2]int, error) {
	prefix := []byte(probePackage + ".")
	if l.treesDense() {
		r, err := l.inlinersByTree(prefix)
		if err != errUnexplained && err != errSparse {
			return r, err
		}
	}
	return l.inlinersByRecord(prefix)
}

// treesDense reports whether the functions' funcdata, where their inline trees are,
// average at least 12 bytes a function. Where they are fewer, few functions inlined
// anything (a program of 48,000 functions that inline nothing: 7 bytes a function;
// the go command: 120), and the search for the function of a tree would read about
// as many records as inlinersByRecord. (Reading a sample of the records to tell
// costs more: at start each record far from the last read faults on its own page.)
func (l Layout) treesDense() bool {
	return len(l.inl.gofunc) >= 12*(len(l.funcs)-1)
}

// inlinersByRecord is inliners from each function's _func record and, for those that
// inlined anything, their inline tree: on several goroutines in a large program.
func (l Layout) inlinersByRecord(prefix []byte) ([][2]int, error) {
	n := len(l.funcs) - 1
	workers := max(1, min(runtime.GOMAXPROCS(0), n/minInlinersPerWorker))
	parts := make([][][2]int, workers)
	errs := make([]error, workers)
	inParallel(workers, workers, func(_, w int) {
		out := [][2]int{}
		for i := w * n / workers; i < (w+1)*n/workers; i++ {
			inlines, err := l.inlinesProbe(i, prefix)
			if err != nil {
				errs[w] = err
				return
			}
			if inlines {
				out = appendRange(out, int(l.funcs[i].entryoff), int(l.funcs[i+1].entryoff))
			}
		}
		parts[w] = out
	})
	out := [][2]int{}
	for w, p := range parts {
		if errs[w] != nil {
			return nil, errs[w]
		}
		for _, r := range p {
			out = appendRange(out, r[0], r[1])
		}
	}
	return out, nil
}

// appendRange appends [lo, hi) to ranges sorted and merged, which end at or before lo.
func appendRange(ranges [][2]int, lo, hi int) [][2]int {
	if n := len(ranges); n > 0 && ranges[n-1][1] == lo {
		ranges[n-1][1] = hi
		return ranges
	}
	return append(ranges, [2]int{lo, hi})
}

// packageFuncs returns the text of the functions of the packages that can hold sites
// in a program of modules mods, and of those that rules instrumented, sorted and
// merged (never nil), or nil if a function's name cannot be read.
func (l Layout) packageFuncs(mods []string) [][2]int {
	type pkgRuns struct {
		holds bool
		runs  [][2]int
	}
	byPkg := map[string]*pkgRuns{}
	var cur *pkgRuns
	var curPkg []byte
	for i := 0; i < len(l.funcs)-1; i++ {
		name := l.funcName(i)
		if name == nil {
			return nil
		}
		pkg := packageOf(name)
		if cur == nil || !bytes.Equal(pkg, curPkg) {
			if cur = byPkg[string(pkg)]; cur == nil {
				cur = &pkgRuns{holds: mayHoldSites(string(pkg), mods)}
				byPkg[string(pkg)] = cur
			}
			curPkg = pkg
		}
		if !cur.holds && bytes.Contains(name, fbtCopy) {
			cur.holds = true
		}
		cur.runs = appendRange(cur.runs, int(l.funcs[i].entryoff), int(l.funcs[i+1].entryoff))
	}
	var out [][2]int
	for _, p := range byPkg {
		if p.holds {
			out = append(out, p.runs...)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i][0] < out[j][0] })
	merged := [][2]int{} // nothing can hold a site: search nothing, not everything
	for _, r := range out {
		merged = appendRange(merged, r[0], r[1])
	}
	return merged
}

// programModules returns the module paths of the program's build info (the main module
// and every dependency), or nil when there is none to read.
func programModules() []string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return nil
	}
	return modulesOf(bi)
}

// modulesOf returns the module paths of build info bi, nil if it names no main module.
func modulesOf(bi *debug.BuildInfo) []string {
	if bi.Main.Path == "" && bi.Path != "command-line-arguments" {
		return nil
	}
	mods := []string{bi.Main.Path}
	for _, d := range bi.Deps {
		mods = append(mods, d.Path)
	}
	return mods
}

// mayHoldSites reports whether functions of package pkg can hold probe sites: package
// main, a package of one of the program's modules, or an external test package of one.
func mayHoldSites(pkg string, mods []string) bool {
	pkg = strings.TrimSuffix(pkg, "_test")
	if pkg == "main" || pkg == "command-line-arguments" {
		return true
	}
	for _, m := range mods {
		if m != "" && (pkg == m || strings.HasPrefix(pkg, m+"/")) {
			return true
		}
	}
	return false
}

// packageOf returns the package path of a function's symbol name, by the rule of
// SplitFunc, without allocating.
func packageOf(sym []byte) []byte {
	c := sym
	if i := bytes.IndexByte(c, '['); i >= 0 {
		c = c[:i]
	}
	slash := bytes.LastIndexByte(c, '/')
	dot := bytes.IndexByte(sym[slash+1:], '.')
	if dot < 0 {
		return sym
	}
	return sym[:slash+1+dot]
}

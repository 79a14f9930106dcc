package sled

import (
	"bytes"
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
// Where the build info or the function names are not there (a GOPATH build, names
// that do not check out), discovery searches all of it. A site that a search misses
// would still work, through its branch check.

// fbtCopy marks the traced copies of functions instrumented by rules (internal/fbt).
var fbtCopy = []byte(".__sdt_fbt")

// searchRanges returns the parts of the text, as offsets [lo, hi) sorted and merged,
// that can hold probe sites; nil when it cannot tell (search everything).
func (l Layout) searchRanges() [][2]int {
	mods := programModules()
	if mods == nil || len(l.funcs) < 2 || l.funcnames == nil {
		return nil
	}
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
		lo, hi := int(l.funcs[i].entryoff), int(l.funcs[i+1].entryoff)
		if n := len(cur.runs); n > 0 && cur.runs[n-1][1] == lo {
			cur.runs[n-1][1] = hi
		} else {
			cur.runs = append(cur.runs, [2]int{lo, hi})
		}
	}
	var out [][2]int
	for _, p := range byPkg {
		if p.holds {
			out = append(out, p.runs...)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i][0] < out[j][0] })
	merged := out[:0]
	for _, r := range out {
		if n := len(merged); n > 0 && merged[n-1][1] == r[0] {
			merged[n-1][1] = r[1]
		} else {
			merged = append(merged, r)
		}
	}
	if merged == nil {
		merged = [][2]int{} // nothing can hold a site: search nothing, not everything
	}
	return merged
}

// programModules returns the module paths of the program's build info (the main module
// and every dependency), or nil when there is none to read.
func programModules() []string {
	bi, ok := debug.ReadBuildInfo()
	if !ok || bi.Main.Path == "" && bi.Path != "command-line-arguments" {
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

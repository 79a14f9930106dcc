package sled

import (
	"bytes"
	"sort"
	"strings"
	_ "unsafe" // for go:linkname

	"github.com/gosdt/gosdt/internal/functab"
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
// (in hello world with one probe, almost all of the text is the runtime's and fmt's).
// But a site is always the flag check of one of package sdt's functions inlined into
// another (package sdt itself reads flags only through pointers, which are no sites),
// so only the functions whose inline tree names a function of sdt's API (the call that
// brought sdt's code in) can hold one (functab.Inliners): in a large program with few sites
// that spares the first read of almost all its text, and needs neither the build info
// nor the names. Where the
// inline trees cannot be read, discovery searches all the functions of the packages
// above; where the build info or the function names are not there either (a GOPATH
// build, names that do not check out), all the text. A site that a search misses
// would still work, through its branch check.

// fbtCopy marks the traced copies of functions instrumented by rules (internal/fbt).
const fbtCopy = ".__sdt_fbt"

// searchRanges returns the parts of the text, as offsets [lo, hi) sorted and merged,
// that can hold probe sites, nil when it cannot tell (search everything), and how it
// chose them (Table.Search): the functions whose inline tree names a function of
// package sdt, or where the inline trees cannot be read, those of the packages that
// can hold sites.
func (l Layout) searchRanges() ([][2]int, string) {
	return l.searchRangesOf(programModules)
}

// searchRangesOf is searchRanges for a program whose modules modules returns (nil:
// no build info): asked only where the inline trees cannot be read, since parsing the
// build info is most of what a start of a small program would otherwise spend on it.
func (l Layout) searchRangesOf(modules func() []string) ([][2]int, string) {
	if l.tab == nil || !l.namesOK {
		return nil, "all the text: function names unknown"
	}
	why := l.noInline
	if why == "" {
		r, err := l.inliners()
		if err == nil {
			return r, "functions that inlined package sdt's (inline trees)"
		}
		why = err.Error()
	}
	mods := modules()
	if mods == nil {
		return nil, "all the text: no build info, no inline trees (" + why + ")"
	}
	r := l.packageFuncs(mods)
	if r == nil {
		return nil, "all the text: function names unknown"
	}
	return r, "functions of the program's modules (inline trees unread: " + why + ")"
}

// inliners returns the text of the functions whose inline tree names a function of
// package sdt's API, as offsets [lo, hi) sorted and merged; never nil.
func (l Layout) inliners() ([][2]int, error) {
	return l.tab.Inliners([]byte(probePackage), probePackageAPI)
}

// probePackageAPI reports whether a name that follows the probe package's path is a
// function of its API, or of the API of generated fbt code's runtime.
func probePackageAPI(rest []byte) bool {
	rest, _ = bytes.CutPrefix(rest, []byte(funcRuntime))
	return len(rest) > 0 && rest[0] == '.' && probeAPI(rest[1:])
}

// probeAPI reports whether a function of package sdt, named name after the package's
// path, is one another package can call: a function or a method with an exported
// name. A site's inline tree always names one, the call that brought package sdt's
// code into the caller; the functions sdt inlines into its own (its registry's locks,
// a site's hit count) hold no site and are left out, which spares a start the search
// for each function of sdt's that inlined them.
func probeAPI(name []byte) bool {
	if end := bytes.IndexByte(name, 0); end >= 0 {
		name = name[:end]
	}
	// A method: (*T).M, (*T[...]).M, T.M; else a function, F or F[...] or a closure of one.
	if len(name) == 0 {
		return false
	}
	if name[0] == '(' {
		close := index(name, ").")
		if close < 0 {
			return false
		}
		name = name[close+2:]
	} else if dot := dotOrBracket(name); dot >= 0 && name[dot] == '.' && !isClosureSuffix(name[dot+1:]) {
		name = name[dot+1:]
	}
	return len(name) > 0 && name[0] >= 'A' && name[0] <= 'Z'
}

// index is bytes.Index(b, sep) for the short separators of symbol names: by
// bytes.IndexByte, not bytes.Index, whose general search (Rabin-Karp, its own
// dispatch) every traced program would link for these two calls.
func index(b []byte, sep string) int {
	for i := 0; i+len(sep) <= len(b); i++ {
		j := bytes.IndexByte(b[i:], sep[0])
		if j < 0 {
			return -1
		}
		if i += j; i+len(sep) <= len(b) && string(b[i:i+len(sep)]) == sep {
			return i
		}
	}
	return -1
}

// dotOrBracket is the index of name's first '.' or '[', or -1: bytes.IndexAny(name,
// ".["), whose general search (IndexRune, UTF-8) every traced program would link for
// this one call.
func dotOrBracket(name []byte) int {
	for i, c := range name {
		if c == '.' || c == '[' {
			return i
		}
	}
	return -1
}

// isClosureSuffix reports whether what follows a function's name and a dot names a
// closure or a deferred call's wrapper of it (func1, deferwrap1, gowrap1), not a method.
func isClosureSuffix(s []byte) bool {
	for _, p := range []string{"func", "deferwrap", "gowrap"} {
		if bytes.HasPrefix(s, []byte(p)) && len(s) > len(p) && s[len(p)] >= '0' && s[len(p)] <= '9' {
			return true
		}
	}
	return false
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
	for i := 0; i < l.tab.Len(); i++ {
		name := l.tab.Name(i)
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
		if !cur.holds && index(name, fbtCopy) >= 0 {
			cur.holds = true
		}
		cur.runs = functab.AppendRange(cur.runs, l.tab.EntryOffset(i), l.tab.EndOffset(i))
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
		merged = functab.AppendRange(merged, r[0], r[1])
	}
	return merged
}

// programModules returns the module paths of the program's build info (the main module
// and every dependency), or nil when there is none to read.
func programModules() []string {
	// The build info as the linker wrote it, between 16 bytes of magic on each side
	// (what debug.ReadBuildInfo reads): its parser, which unquotes every build setting,
	// would cost every traced program more than this whole search.
	info := modinfo()
	if len(info) < 32 {
		return nil
	}
	return modulesOf(info[16 : len(info)-16])
}

// modinfo is runtime/debug's own source of the build info, which the runtime provides.
//
//go:linkname modinfo runtime/debug.modinfo
func modinfo() string

// modulesOf returns the module paths of build info in its text form (lines "path",
// "mod" and "dep" of debug.BuildInfo.String), nil if it names no main module.
func modulesOf(info string) []string {
	var path, main string
	var deps []string
	for line := range strings.Lines(info) {
		key, rest, _ := strings.Cut(strings.TrimSuffix(line, "\n"), "\t")
		field, _, _ := strings.Cut(rest, "\t")
		switch key {
		case "path":
			path = field
		case "mod":
			main = field
		case "dep":
			deps = append(deps, field)
		}
	}
	if main == "" && path != "command-line-arguments" {
		return nil
	}
	return append([]string{main}, deps...)
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
// spec.SplitFunc, without allocating.
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

package sled

import (
	"bytes"
	"runtime/debug"
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
// Of those functions only the ones whose inline tree names a function of package sdt
// can hold a site, and package sdt's own, and the traced copies (inltree.go): in a
// large program with few sites that spares the first read of almost all its text.
// Where the inline trees cannot be read, discovery searches all the functions of those
// packages; where the build info or the function names are not there either (a GOPATH
// build, names that do not check out), all the text. A site that a search misses
// would still work, through its branch check.

// fbtCopy marks the traced copies of functions instrumented by rules (internal/fbt).
var fbtCopy = []byte(".__sdt_fbt")

// searchRanges returns the parts of the text, as offsets [lo, hi) sorted and merged,
// that can hold probe sites, nil when it cannot tell (search everything), and how it
// chose them (Table.Search). Of the functions of the packages that can hold sites, it
// keeps those that inlined a function of package sdt, the fbt copies, and package sdt's
// own (a Probe body that was not inlined: refused, but listed); when the inline trees
// cannot be read, all of them.
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
	if mods == nil && why != "" {
		return nil, "all the text: no build info, no inline trees (" + why + ")"
	}
	// Which packages can hold sites: a traced copy makes its package one.
	holds := map[string]bool{}
	var curPkg []byte
	for i := 0; i < len(l.funcs)-1; i++ {
		name := l.funcName(i)
		if name == nil {
			return nil, "all the text: function names unknown"
		}
		pkg := packageOf(name)
		if curPkg == nil || !bytes.Equal(pkg, curPkg) {
			if _, ok := holds[string(pkg)]; !ok {
				holds[string(pkg)] = mods == nil || mayHoldSites(string(pkg), mods)
			}
			curPkg = pkg
		}
		if bytes.Contains(name, fbtCopy) {
			holds[string(pkg)] = true
		}
	}
	if why == "" {
		r, err := l.searchFuncs(holds, true)
		if err == nil {
			return r, "functions that inlined package sdt's (inline trees)"
		}
		why = err.Error()
	}
	r, _ := l.searchFuncs(holds, false)
	return r, "functions of the program's modules (inline trees unread: " + why + ")"
}

// searchFuncs returns the text of the functions of the packages that holds says can
// hold sites, only those that inlined package sdt's functions (or are sdt's, or fbt
// copies) if byInline, as offsets [lo, hi) sorted and merged; never nil.
func (l Layout) searchFuncs(holds map[string]bool, byInline bool) ([][2]int, error) {
	prefix := []byte(probePackage + ".")
	out := [][2]int{}
	var curPkg []byte
	var held, probePkg bool
	for i := 0; i < len(l.funcs)-1; i++ {
		name := l.funcName(i)
		if pkg := packageOf(name); curPkg == nil || !bytes.Equal(pkg, curPkg) {
			held, probePkg, curPkg = holds[string(pkg)], string(pkg) == probePackage, pkg
		}
		if !held {
			continue
		}
		if byInline && !probePkg && !bytes.Contains(name, fbtCopy) {
			inlines, err := l.inlinesProbe(i, prefix)
			if err != nil {
				return nil, err
			}
			if !inlines {
				continue
			}
		}
		lo, hi := int(l.funcs[i].entryoff), int(l.funcs[i+1].entryoff)
		if n := len(out); n > 0 && out[n-1][1] == lo {
			out[n-1][1] = hi
		} else {
			out = append(out, [2]int{lo, hi})
		}
	}
	return out, nil
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

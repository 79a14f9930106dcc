package sled

import (
	"debug/buildinfo"
	"debug/elf"
	"fmt"
	"slices"

	"github.com/gosdt/gosdt/internal/functab/elffile"
)

// SetProbePackage makes path the probe package for a test, and returns what puts the
// real one back.
func SetProbePackage(path string) (restore func()) {
	old := probePackage
	probePackage = path
	return func() { probePackage = old }
}

// SetParallelism sets the fewest candidates and the least text worth a goroutine of
// their own, and returns what puts the defaults back.
func SetParallelism(candidates, text int) (restore func()) {
	c, x := minPerWorker, minScanPerWorker
	minPerWorker, minScanPerWorker = candidates, text
	return func() { minPerWorker, minScanPerWorker = c, x }
}

// FileSearch returns what the start-up discovery of the Go ELF binary at path would
// search, as offsets [lo, hi) from its runtime.text (text), with the same code as the
// running program's (searchRanges), its tables read from the file's .gopclntab and its
// build info, not the runtime's; nil ranges: all the text. The runtime's check of the
// inline trees needs the running program, and is left out. Where the inline trees are
// read, the two ways of finding the functions that inlined the probe package must both
// work and agree: an error says where they do not.
func FileSearch(path string) (text uint64, ranges [][2]int, how string, err error) {
	f, err := elf.Open(path)
	if err != nil {
		return 0, nil, "", err
	}
	defer f.Close()
	tab, err := elffile.Read(f)
	if err != nil {
		return 0, nil, "", fmt.Errorf("%s: %v", path, err)
	}
	l := Layout{tab: tab, namesOK: true}
	if tab.Gofunc() == nil {
		l.noInline = "no go:func.* found"
	}
	var mods []string
	if bi, err := buildinfo.ReadFile(path); err == nil {
		mods = modulesOf(bi.String())
	}
	ranges, how = l.searchRangesOf(func() []string { return mods })
	if l.noInline == "" {
		prefix := []byte(probePackage)
		byTree, err := tab.InlinersByTree(prefix, probePackageAPI)
		if err != nil {
			return 0, nil, "", fmt.Errorf("%s: inliners from the trees: %v", path, err)
		}
		byRecord, err := tab.InlinersByRecord(prefix, probePackageAPI)
		if err != nil {
			return 0, nil, "", fmt.Errorf("%s: inliners from the records: %v", path, err)
		}
		if !slices.Equal(byTree, byRecord) {
			return 0, nil, "", fmt.Errorf("%s: inliners from the trees: %d ranges, from the records %d", path, len(byTree), len(byRecord))
		}
	}
	return tab.Text, ranges, how, nil
}

// InRanges says whether off lies in one of ranges: sorted, disjoint [lo, hi) offsets
// from the text, as searchRanges and FileSearch return them.
func InRanges(ranges [][2]int, off int) bool {
	_, found := slices.BinarySearchFunc(ranges, off, func(r [2]int, off int) int {
		switch {
		case off < r[0]:
			return 1
		case off >= r[1]:
			return -1
		}
		return 0
	})
	return found
}

package sled

import (
	"debug/buildinfo"
	"debug/elf"
	"fmt"
	"slices"
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
// inline trees (checkInlineTrees) needs the running program, and is left out. Where
// the inline trees are read, the two ways of finding the functions that inlined the
// probe package must both work and agree: an error says where they do not.
func FileSearch(path string) (text uint64, ranges [][2]int, how string, err error) {
	f, err := elf.Open(path)
	if err != nil {
		return 0, nil, "", err
	}
	defer f.Close()
	sec := f.Section(".gopclntab")
	if sec == nil {
		return 0, nil, "", fmt.Errorf("%s: no .gopclntab", path)
	}
	pcln, err := sec.Data()
	if err != nil {
		return 0, nil, "", err
	}
	word := func(i int) int { return int(f.ByteOrder.Uint64(pcln[8+8*i:])) }
	if len(pcln) < 8+8*8 || f.ByteOrder.Uint32(pcln) != pclntabMagic || pcln[7] != 8 {
		return 0, nil, "", fmt.Errorf("%s: not a go1.20+ 64-bit pclntab", path)
	}
	nfunc, names, pctab, pclnOff := word(0), word(3), word(6), word(7)
	var l Layout
	l.funcnames = pcln[names:word(4)]
	l.pclntable = pcln[pclnOff:]
	for i := 0; i <= nfunc; i++ {
		l.funcs = append(l.funcs, functab{f.ByteOrder.Uint32(l.pclntable[8*i:]), f.ByteOrder.Uint32(l.pclntable[8*i+4:])})
	}
	syms, err := f.Symbols()
	if err != nil {
		return 0, nil, "", err
	}
	for _, s := range syms {
		if s.Name == "runtime.text" { // the header's textStart is the runtime's to fill in
			l.Text = uintptr(s.Value)
		}
		if s.Name == "go:func.*" && s.Value >= sec.Addr && s.Value < sec.Addr+sec.Size {
			l.inl = inlTables{pctab: pcln[pctab:pclnOff], gofunc: pcln[s.Value-sec.Addr:], quantum: uint32(pcln[6])}
		}
	}
	if l.inl.gofunc == nil {
		l.inl.why = "no go:func.* symbol in the pclntab"
	}
	var mods []string
	if bi, err := buildinfo.ReadFile(path); err == nil {
		mods = modulesOf(bi)
	}
	if l.Text == 0 {
		return 0, nil, "", fmt.Errorf("%s: no runtime.text symbol", path)
	}
	ranges, how = l.searchRangesOf(mods, false)
	if l.inl.why == "" {
		prefix := []byte(probePackage + ".")
		byTree, err := l.inlinersByTree(prefix)
		if err != nil {
			return 0, nil, "", fmt.Errorf("%s: inliners from the trees: %v", path, err)
		}
		byRecord, err := l.inlinersByRecord(prefix)
		if err != nil {
			return 0, nil, "", fmt.Errorf("%s: inliners from the records: %v", path, err)
		}
		if !slices.Equal(byTree, byRecord) {
			return 0, nil, "", fmt.Errorf("%s: inliners from the trees: %d ranges, from the records %d", path, len(byTree), len(byRecord))
		}
	}
	return uint64(l.Text), ranges, how, nil
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

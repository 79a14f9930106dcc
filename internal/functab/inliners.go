package functab

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
)

// Inliners returns the code of the functions whose inline tree names a function whose
// name starts with prefix and whose rest accept takes, as offsets [lo, hi) from Text,
// sorted and merged; never nil. A program's start asks this of its own table (which
// functions inlined one of package sdt's), so it is written to read few pages: it finds
// the trees from the names' side where trees are dense enough (ByTree), and otherwise,
// or where that cannot tell, reads each function's record (ByRecord). Both give the
// same functions.
func (t *Table) Inliners(prefix []byte, accept func(rest []byte) bool) ([][2]int, error) {
	if t.treesDense() {
		r, err := t.InlinersByTree(prefix, accept)
		if !errors.Is(err, errUnexplained) && !errors.Is(err, errSparse) {
			return r, err
		}
	}
	return t.InlinersByRecord(prefix, accept)
}

// treesDense reports whether the funcdata, where the inline trees are, average at least
// 12 bytes a function. Where they are fewer, few functions inlined anything (a large
// generated program that inlines nothing has about half that; the go command ten
// times as much), and the search for the function of a tree would read about as many records as
// InlinersByRecord. (Reading a sample of the records to tell costs more: at start each
// record far from the last read faults on its own page.)
func (t *Table) treesDense() bool { return len(t.gofunc) >= 12*t.nfunc }

// MinInlinersPerWorker is the fewest functions worth a goroutine of their own when
// InlinersByRecord reads records: most of the time goes in first reads of the table.
var MinInlinersPerWorker = 8192

// InlinersByRecord is Inliners from each function's record and, for those that inlined
// anything, their inline tree: on several goroutines in a large program.
func (t *Table) InlinersByRecord(prefix []byte, accept func(rest []byte) bool) ([][2]int, error) {
	n := t.nfunc
	workers := max(1, min(runtime.GOMAXPROCS(0), n/MinInlinersPerWorker))
	parts := make([][][2]int, workers)
	errs := make([]error, workers)
	run := func(w int) {
		out := [][2]int{}
		for i := w * n / workers; i < (w+1)*n/workers; i++ {
			inlines, err := t.inlines(i, prefix, accept)
			if err != nil {
				errs[w] = err
				return
			}
			if inlines {
				out = AppendRange(out, t.EntryOffset(i), t.EndOffset(i))
			}
		}
		parts[w] = out
	}
	var wg sync.WaitGroup
	for w := 1; w < workers; w++ {
		wg.Go(func() { run(w) })
	}
	run(0)
	wg.Wait()
	out := [][2]int{}
	for w, p := range parts {
		if errs[w] != nil {
			return nil, errs[w]
		}
		for _, r := range p {
			out = AppendRange(out, r[0], r[1])
		}
	}
	return out, nil
}

// inlines reports whether function i's inline tree names a function that prefix and
// accept take.
func (t *Table) inlines(i int, prefix []byte, accept func([]byte) bool) (bool, error) {
	tree, _, err := t.InlineTree(i)
	for k := 0; k < tree.Len(); k++ {
		off := tree.NameOff(k)
		if off < 0 || int(off) >= len(t.names) {
			return false, fmt.Errorf("function %d: inlined call %d: name out of the name table", i, k)
		}
		if n := t.names[off:]; bytes.HasPrefix(n, prefix) && accept(cutNUL(n[len(prefix):])) {
			return true, nil
		}
	}
	return false, err
}

func cutNUL(b []byte) []byte {
	if end := bytes.IndexByte(b, 0); end >= 0 {
		return b[:end]
	}
	return b
}

// AppendRange appends [lo, hi) to ranges sorted and merged, which end at or before lo.
func AppendRange(ranges [][2]int, lo, hi int) [][2]int {
	if n := len(ranges); n > 0 && ranges[n-1][1] == lo {
		ranges[n-1][1] = hi
		return ranges
	}
	return append(ranges, [2]int{lo, hi})
}

// Finding the inliners from the other end. Reading every function's record
// (InlinersByRecord) reads most of the pclntab, megabytes of it in a large program,
// and at start a page read for the first time is expensive, more so when its
// neighbours were not just read (bench/README.md, "Discovery"). The funcdata hold the inline trees, and the
// linker writes them in the order of the functions (cmd/link's pclntab: funcdata in the
// functions' order, sorted stably by alignment, each tree 4-aligned), so the tree
// entries that name the functions sought can be found by a scan of the funcdata (a
// tenth of that size) for those names' offsets, taken from a scan of the name table, and
// each entry's function by a binary search over the function table that reads a few
// records. Every entry the scan finds must be explained: a field of some function's
// tree, or the name of one of its calls; one that is not (a layout this code does not
// know) sends the caller to the records.

// InlinersByTree cannot tell: a word of the funcdata names a function sought and lies
// in no inline tree the binary search finds, or the trees are too far apart for the
// search to place them for less than reading every record.
var (
	errUnexplained = errors.New("an inline tree entry naming the function sought outside every tree found")
	errSparse      = errors.New("inline trees too sparse to place by search")
)

// nameOffs returns the offsets in the name table of the names that start with prefix
// and whose rest accept takes, sorted. The linker writes each name whole (cmd/link's
// funcnametab), so a name the prefix occurs inside (a type argument) is not one.
func (t *Table) nameOffs(prefix []byte, accept func([]byte) bool) []uint32 {
	var offs []uint32
	f := newFinder(prefix)
	for i := 0; ; {
		at := f.next(t.names, i)
		if at < 0 {
			return offs
		}
		if (at == 0 || t.names[at-1] == 0) && accept(cutNUL(t.names[at+len(prefix):])) {
			offs = append(offs, uint32(at))
		}
		i = at + 1
	}
}

// finder searches for a pattern by Horspool's rule: it compares the window's last
// byte first and, on a mismatch, skips by how far that byte lies from the pattern's
// end. Every byte of package sdt's path is common in a name table (one in 50 to 130 in
// hello world's), so bytes.Index, which looks for the first byte and then compares,
// stops every few dozen bytes; this one skips most of the pattern's length at a time
// (a tenth of the instructions on hello world's table, bench/README.md "Start-up").
type finder struct {
	pat  []byte
	skip [256]int32
}

func newFinder(pat []byte) *finder {
	f := &finder{pat: pat}
	for i := range f.skip {
		f.skip[i] = int32(len(pat))
	}
	for i, c := range pat[:len(pat)-1] {
		f.skip[c] = int32(len(pat) - 1 - i)
	}
	return f
}

// next returns the first index at or after i where s holds the pattern, or -1.
func (f *finder) next(s []byte, i int) int {
	n := len(f.pat)
	last := f.pat[n-1]
	for i+n <= len(s) {
		c := s[i+n-1]
		if c == last && s[i] == f.pat[0] && bytes.Equal(s[i+1:i+n-1], f.pat[1:n-1]) {
			return i
		}
		i += int(f.skip[c])
	}
	return -1
}

const filterWords = 64

// InlinersByTree is Inliners from the trees' side; errUnexplained or errSparse when it
// cannot tell.
func (t *Table) InlinersByTree(prefix []byte, accept func([]byte) bool) ([][2]int, error) {
	out := [][2]int{}
	names := t.nameOffs(prefix, accept)
	if len(names) == 0 {
		return out, nil // no tree can name what the name table does not hold
	}
	// A 4 KiB filter on the low bits of a name offset spares most words a search
	// (small: on the stack, whose growth would cost fresh pages at start).
	var filter [filterWords]uint64
	for _, o := range names {
		filter[o>>6%filterWords] |= 1 << (o & 63)
	}
	const nameField = 4 // of an inlinedCall
	g := t.gofunc
	owner, last := treeOwner{fn: -1}, -1
	// The search may read an eighth of the records, and a few for each site, before
	// reading them all is cheaper.
	budget := t.nfunc/8 + 64
	for p := nameField; ; p += 4 {
		if p = nextFiltered(g, p, names[0], names[len(names)-1]-names[0], &filter); p < 0 {
			break
		}
		w := binary.LittleEndian.Uint32(g[p:])
		if _, found := slices.BinarySearch(names, w); !found {
			continue
		}
		e := p - nameField // where the entry starts, if this is a name
		if !owner.covers(e) {
			budget += 64
			if err := t.findTreeOwner(e, &owner, &budget); err != nil {
				return nil, err
			}
			if !owner.covers(e) {
				return nil, errUnexplained
			}
		}
		if e >= owner.end || (e-owner.off)%inlinedCallSize != 0 {
			// Another funcdata between two trees (stack objects hold offsets of the
			// same size), or another field of an entry, that happens to be equal.
			continue
		}
		if f := owner.fn; f != last { // a tree may name several of the functions sought
			out = AppendRange(out, t.EntryOffset(f), t.EndOffset(f))
			last = f
		}
	}
	return out, nil
}

// nextFiltered returns the first offset from p on, by steps of 4, of a word of g that
// lies in [lo, lo+span] and that filter passes, or -1. It is the loop that reads every
// word of the funcdata: on its own so that the compiler keeps it in registers (inlined,
// the loop spilled to the stack), two words a step. The names sought are those of one
// package, written together, so their span is a small part of the name table's and
// one comparison rejects most words.
//
//go:noinline
func nextFiltered(g []byte, p int, lo, span uint32, filter *[filterWords]uint64) int {
	if p < 0 || p > len(g) {
		return -1
	}
	pass := func(w uint32) bool { return w-lo <= span && filter[w>>6%filterWords]&(1<<(w&63)) != 0 }
	b := g[p:]
	for len(b) >= 16 {
		// Every start of every traced program reads the whole funcdata here: four
		// words a compare on amd64 (inrange_amd64.s).
		i := firstInRange(b, lo, span)
		if i+16 > len(b) {
			b = b[i:]
			break
		}
		for k := range 4 {
			if pass(binary.LittleEndian.Uint32(b[i+4*k:])) {
				return len(g) - len(b) + i + 4*k
			}
		}
		b = b[i+16:]
	}
	for ; len(b) >= 4; b = b[4:] {
		if pass(binary.LittleEndian.Uint32(b)) {
			return len(g) - len(b)
		}
	}
	return -1
}

// treeOwner is a function with an inline tree, where that tree is in the funcdata, and
// where the next function's tree starts: what lies between is other funcdata.
type treeOwner struct {
	fn       int // -1: none
	off, end int // the tree: gofunc[off:end]
	next     int // the next tree's offset, or the end of the funcdata
}

func (o treeOwner) covers(e int) bool { return o.fn >= 0 && o.off <= e && e < o.next }

// treeOff returns where function i's inline tree starts in the funcdata, -1 if it has
// none: its record alone, without the pc-value table that sizes the tree.
func (t *Table) treeOff(i int) (int, error) {
	f := int(binary.LittleEndian.Uint32(t.ftab[8*i+4:]))
	if f < 0 || f+funcSize > len(t.funcs) {
		return -1, fmt.Errorf("function %d: _func at %d out of the pclntab", i, f)
	}
	npcdata, nfuncdata := int(u32(t.funcs, f+funcNpcdata)), int(t.funcs[f+funcNfuncdata])
	if npcdata <= PCDataInlTreeIndex || nfuncdata <= FuncDataInlTree {
		return -1, nil
	}
	at := f + funcSize + 4*(npcdata+FuncDataInlTree)
	if at+4 > len(t.funcs) {
		return -1, fmt.Errorf("function %d: %d pcdata and %d funcdata out of the pclntab", i, npcdata, nfuncdata)
	}
	off := u32(t.funcs, at)
	if off == noFuncdata {
		return -1, nil
	}
	if int64(off) >= int64(len(t.gofunc)) {
		return -1, fmt.Errorf("function %d: inline tree at %d out of bounds", i, off)
	}
	return int(off), nil
}

// recordSize returns the size of function i's record: its fields, then its pc-value
// table and funcdata offsets, padded to a pointer's alignment (cmd/link).
func (t *Table) recordSize(i int) int {
	f := int(binary.LittleEndian.Uint32(t.ftab[8*i+4:]))
	size := funcSize + 4*(int(u32(t.funcs, f+funcNpcdata))+int(t.funcs[f+funcNfuncdata]))
	return (size + t.ptrSize - 1) &^ (t.ptrSize - 1)
}

// findTreeOwner sets o to the last function whose inline tree starts at or before
// funcdata offset e, searching the functions from o's on (trees come in the order of
// their functions, and e grows from call to call): the function with a tree that
// holds e, if any does. It gallops from o's function, where the next owner usually
// is (a package's functions inline the same few), then searches in halves; a
// function without a tree says nothing of the order, so each probe reads on to the
// next function that has one. Every record read counts against budget.
func (t *Table) findTreeOwner(e int, o *treeOwner, budget *int) error {
	n := t.nfunc
	// nextTree returns the first function in [i, limit) with a tree, and where its
	// tree is; limit if there is none.
	nextTree := func(i, limit int) (int, int, error) {
		for ; i < limit; i++ {
			// The records lie one after the other, so the function table alone
			// tells each one's size: one too small to hold a tree (a function of
			// the race runtime's, without pc-value tables) need not be read.
			size := -1
			if i+1 < n {
				size = int(u32(t.ftab, 8*(i+1)+4)) - int(u32(t.ftab, 8*i+4))
			}
			if size >= funcSize && size < funcSize+4*(PCDataInlTreeIndex+1+FuncDataInlTree+1) {
				continue
			}
			if *budget--; *budget < 0 {
				return 0, 0, errSparse
			}
			off, err := t.treeOff(i)
			if err == nil && size >= 0 && size != t.recordSize(i) {
				err = errUnexplained // not the layout whose sizes this reads
			}
			if err != nil || off >= 0 {
				return i, off, err
			}
		}
		return limit, -1, nil
	}
	best, bestOff := -1, 0
	lo, hi := max(o.fn, 0), n
	for step := 1; lo+step < hi; step *= 2 {
		j, off, err := nextTree(lo+step, hi)
		if err != nil {
			return err
		}
		if j == hi || off > e {
			hi = lo + step
			break
		}
		best, bestOff = j, off
	}
	for lo < hi {
		mid := lo + (hi-lo)/2
		j, off, err := nextTree(mid, hi)
		switch {
		case err != nil:
			return err
		case j == hi || off > e:
			hi = mid
		default:
			best, bestOff, lo = j, off, j+1
		}
	}
	if best < 0 {
		*o = treeOwner{fn: -1}
		return nil
	}
	tree, _, err := t.InlineTree(best)
	if err != nil {
		return err
	}
	_, next, err := nextTree(best+1, n)
	if err != nil {
		return err
	}
	if next < 0 {
		next = len(t.gofunc)
	}
	end := bestOff + len(tree)
	if next < end {
		return fmt.Errorf("function %d: inline tree [%d, %d) overlaps the next function's at %d", best, bestOff, end, next)
	}
	*o = treeOwner{fn: best, off: bestOff, end: end, next: next}
	return nil
}

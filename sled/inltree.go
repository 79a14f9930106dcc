package sled

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"slices"
)

// Which functions can hold a probe site, told by the pclntab instead of the code. A
// site is the flag check of one of package sdt's functions (ProbeN, Fire, Enabled, the
// latency and fbt helpers) inlined into its caller, so the caller's inline tree (its
// FUNCDATA_InlTree, indexed by its PCDATA_InlTreeIndex table) names that function.
// Reading a function's _func record, and for those that inlined anything a few bytes of
// their pc-value table and tree, touches far fewer pages than reading its code: at
// start a page read for the first time costs microseconds (bench/README.md), so in a
// large program with few sites most of discovery was the first read of text that
// holds no site. This is a pre-filter of where to search, not part of the proof: a
// function it left out would keep its branch check. The layout read here is go1.20's
// and later's (runtime/symtab.go, symtabinl.go); it is used only when the pclntab's
// magic says so and an inline tree read by this code names what the runtime names for
// the same pc (checkInlineTrees).

// pclntabMagic is the pclntab's magic of go1.20 and later (abi.Go120PCLnTabMagic).
const pclntabMagic = 0xfffffff1

// The layout of a _func record (runtime._func) and of inlinedCall, and the table
// indexes of internal/abi.
const (
	funcNpcdata        = 28 // uint32: how many pc-value table offsets follow the record
	funcNfuncdata      = 43 // uint8: how many funcdata offsets follow those
	funcSize           = 44
	pcdataInlTreeIndex = 2  // the pc-value table of each pc's innermost inlined call
	funcdataInlTree    = 3  // the inline tree: inlinedCall entries
	inlinedCallSize    = 16 // funcID uint8, 3 bytes pad, nameOff, parentPc, startLine int32
	inlinedCallName    = 4
	noFuncdata         = ^uint32(0)
)

// inlTables is where the inline trees are, when the pclntab's magic and bounds are
// the layout this code reads (checkInlineTrees checks further before they are used);
// otherwise only why says why not.
type inlTables struct {
	pctab   []byte // the pc-value tables
	gofunc  []byte // funcdata, from moduledata.gofunc to the end of the pclntab
	quantum uint32 // the unit of pc deltas in pc-value tables (1 on amd64, 4 on arm64)
	why     string // why there are none, if there are none
}

// inlineTree returns function i's inline tree, sized by the largest index its
// PCDATA_InlTreeIndex table holds (the compiler numbers a function's inlined calls
// densely, an inlined call after the one it is inlined into), and the table, nil if
// the function inlined nothing. An offset out of its table is an error: then the
// layout is not what this code reads.
func (l Layout) inlineTree(i int) (tree, pcs []byte, err error) {
	f := int(l.funcs[i].funcoff)
	if f < 0 || f+funcSize > len(l.pclntable) {
		return nil, nil, fmt.Errorf("function %d: _func at %d out of the pclntab", i, f)
	}
	npcdata := int(binary.NativeEndian.Uint32(l.pclntable[f+funcNpcdata:]))
	nfuncdata := int(l.pclntable[f+funcNfuncdata])
	if npcdata <= pcdataInlTreeIndex || nfuncdata <= funcdataInlTree {
		return nil, nil, nil
	}
	if f+funcSize+4*(npcdata+nfuncdata) > len(l.pclntable) {
		return nil, nil, fmt.Errorf("function %d: %d pcdata and %d funcdata out of the pclntab", i, npcdata, nfuncdata)
	}
	pcOff := binary.NativeEndian.Uint32(l.pclntable[f+funcSize+4*pcdataInlTreeIndex:])
	treeOff := binary.NativeEndian.Uint32(l.pclntable[f+funcSize+4*(npcdata+funcdataInlTree):])
	if pcOff == 0 || treeOff == noFuncdata {
		return nil, nil, nil
	}
	if int64(pcOff) >= int64(len(l.inl.pctab)) || int64(treeOff) >= int64(len(l.inl.gofunc)) {
		return nil, nil, fmt.Errorf("function %d: inline tables at %d, %d out of bounds", i, pcOff, treeOff)
	}
	pcs = l.inl.pctab[pcOff:]
	maxIndex, err := maxValue(pcs)
	if err != nil {
		return nil, nil, fmt.Errorf("function %d: %v", i, err)
	}
	if maxIndex < 0 {
		return nil, nil, nil
	}
	end := int64(treeOff) + (int64(maxIndex)+1)*inlinedCallSize
	if end > int64(len(l.inl.gofunc)) {
		return nil, nil, fmt.Errorf("function %d: inline tree of %d calls out of bounds", i, maxIndex+1)
	}
	return l.inl.gofunc[treeOff:end], pcs, nil
}

// maxValue returns the largest value of a pc-value table: eachValue's loop, without
// the pcs, for the many functions discovery reads at start.
func maxValue(p []byte) (int32, error) {
	val, most := int32(-1), int32(-1)
	for first := true; ; first = false {
		uv := uint32(0)
		if len(p) > 0 && p[0] < 0x80 {
			uv, p = uint32(p[0]), p[1:]
		} else {
			v, n := binary.Uvarint(p)
			if n <= 0 || v > 1<<32-1 {
				return 0, fmt.Errorf("pc-value table: bad varint")
			}
			uv, p = uint32(v), p[n:]
		}
		if uv == 0 && !first {
			return most, nil
		}
		val += int32(-(uv & 1) ^ (uv >> 1))
		most = max(most, val)
		if len(p) > 0 && p[0] < 0x80 { // the pc delta
			p = p[1:]
		} else if _, n := binary.Uvarint(p); n > 0 {
			p = p[n:]
		} else {
			return 0, fmt.Errorf("pc-value table: bad varint")
		}
	}
}

// eachValue calls do(lo, hi, v) for each run of a pc-value table (pcs [lo, hi) from the
// function's entry have value v) until do returns false.
func eachValue(p []byte, quantum uint32, do func(lo, hi uint32, v int32) bool) error {
	val, pc := int32(-1), uint32(0)
	for first := true; ; first = false {
		uv, n := binary.Uvarint(p)
		if n <= 0 || uv > 1<<32-1 {
			return fmt.Errorf("pc-value table: bad varint")
		}
		if uv == 0 && !first {
			return nil
		}
		p = p[n:]
		val += int32(-(uint32(uv) & 1) ^ (uint32(uv) >> 1))
		d, n := binary.Uvarint(p)
		if n <= 0 || d > 1<<32-1 {
			return fmt.Errorf("pc-value table: bad varint")
		}
		p = p[n:]
		lo := pc
		pc += uint32(d) * quantum
		if !do(lo, pc, val) {
			return nil
		}
	}
}

// callName returns the name of the function of the k-th call of an inline tree, nil
// if its offset is out of the name table.
func (l Layout) callName(tree []byte, k int) []byte {
	off := int32(binary.NativeEndian.Uint32(tree[k*inlinedCallSize+inlinedCallName:]))
	if off < 0 || int(off) >= len(l.funcnames) {
		return nil
	}
	n := l.funcnames[off:]
	if end := bytes.IndexByte(n, 0); end >= 0 {
		n = n[:end]
	}
	return n
}

// inlinesProbe reports whether function i has a function of package sdt's API (prefix:
// the package's path and a dot; probeAPI) inlined into it.
func (l Layout) inlinesProbe(i int, prefix []byte) (bool, error) {
	tree, _, err := l.inlineTree(i)
	for k := 0; k < len(tree)/inlinedCallSize; k++ {
		off := int32(binary.NativeEndian.Uint32(tree[k*inlinedCallSize+inlinedCallName:]))
		if off < 0 || int(off) >= len(l.funcnames) {
			return false, fmt.Errorf("function %d: inlined call %d: name out of the name table", i, k)
		}
		if n := l.funcnames[off:]; bytes.HasPrefix(n, prefix) && probeAPI(n[len(prefix):]) {
			return true, nil
		}
	}
	return false, err
}

// Finding the inliners from the other end. Reading every function's _func record
// (inlinersByRecord) reads most of the pclntab: 4.2 MB of it in a program of 48,000
// functions, and at start a page read for the first time costs about a microsecond
// here when its neighbours were just read, 10 to 15 when not. The funcdata hold the
// inline trees, and the linker writes them in the order of
// the functions (cmd/link's pclntab: funcdata in the functions' order, sorted stably by
// alignment, each tree 4-aligned), so the tree entries that name package sdt's functions
// can be found by a scan of the funcdata (340 KB in that program) for those names'
// offsets, taken from a scan of the name table, and each entry's function by a binary
// search over the function table that reads a few records. Every entry the scan finds
// must be explained: a field of some function's tree, or the name of one of its calls;
// one that is not (a layout this code does not know) sends the caller to the records.

// inlinersByTree cannot tell: a word of the funcdata names a function of package sdt
// and lies in no inline tree the binary search finds, or the trees are too far apart
// for the search to place them for less than reading every record.
var (
	errUnexplained = errors.New("an inline tree entry naming the probe package outside every tree found")
	errSparse      = errors.New("inline trees too sparse to place by search")
)

// probeNames returns the offsets in the name table of the names of package sdt's API
// (prefix, then what probeAPI accepts), sorted. The linker writes each name whole
// (cmd/link's funcnametab), so a name the prefix occurs inside (a type argument) is
// not one.
func (l Layout) probeNames(prefix []byte) []uint32 {
	var offs []uint32
	for i := 0; ; {
		k := bytes.Index(l.funcnames[i:], prefix)
		if k < 0 {
			return offs
		}
		at := i + k
		if (at == 0 || l.funcnames[at-1] == 0) && probeAPI(l.funcnames[at+len(prefix):]) {
			offs = append(offs, uint32(at))
		}
		i = at + 1
	}
}

// probeAPI reports whether a function of package sdt, named name after the package's
// path (up to a NUL or the end), is one another package can call: a function or a
// method with an exported name. A site's inline tree always names one, the call that
// brought package sdt's code into the caller; the functions sdt inlines into its own
// (its registry's locks, a site's hit count) hold no site and are left out, which
// spares a start the search for each function of sdt's that inlined them.
func probeAPI(name []byte) bool {
	if end := bytes.IndexByte(name, 0); end >= 0 {
		name = name[:end]
	}
	// A method: (*T).M, (*T[...]).M, T.M; else a function, F or F[...] or a closure of one.
	if len(name) == 0 {
		return false
	}
	if name[0] == '(' {
		close := bytes.Index(name, []byte(")."))
		if close < 0 {
			return false
		}
		name = name[close+2:]
	} else if dot := bytes.IndexAny(name, ".["); dot >= 0 && name[dot] == '.' && !isClosureSuffix(name[dot+1:]) {
		name = name[dot+1:]
	}
	return len(name) > 0 && name[0] >= 'A' && name[0] <= 'Z'
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

// inlinersByTree returns the text of the functions whose inline tree names a function
// of package sdt's API, as offsets [lo, hi) sorted and merged, never nil;
// errUnexplained if the scan of the funcdata found such a name outside the trees it
// could place, errSparse if placing them would have read too many records.
func (l Layout) inlinersByTree(prefix []byte) ([][2]int, error) {
	out := [][2]int{}
	names := l.probeNames(prefix)
	if len(names) == 0 {
		return out, nil // no tree can name what the name table does not hold
	}
	// A 4 Kib filter on the low bits of a name offset spares most words a search
	// (small: on the stack, whose growth would cost fresh pages at start).
	var filter [filterWords]uint64
	for _, o := range names {
		filter[o>>6%filterWords] |= 1 << (o & 63)
	}
	g := l.inl.gofunc
	owner, last := treeOwner{fn: -1}, -1
	// The search may read an eighth of the records, and a few for each site, before
	// reading them all is cheaper.
	budget := (len(l.funcs)-1)/8 + 64
	for p := inlinedCallName; p+4 <= len(g); p += 4 {
		w := binary.NativeEndian.Uint32(g[p:])
		if filter[w>>6%filterWords]&(1<<(w&63)) == 0 {
			continue
		}
		if _, found := slices.BinarySearch(names, w); !found {
			continue
		}
		e := p - inlinedCallName // where the entry starts, if this is a name
		if !owner.covers(e) {
			budget += 64
			if err := l.findTreeOwner(e, &owner, &budget); err != nil {
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
		if f := owner.fn; f != last { // a tree may name several of sdt's functions
			out = appendRange(out, int(l.funcs[f].entryoff), int(l.funcs[f+1].entryoff))
			last = f
		}
	}
	return out, nil
}

const filterWords = 64

// treeOwner is a function with an inline tree, where that tree is in the funcdata, and
// where the next function's tree starts: what lies between is other funcdata.
type treeOwner struct {
	fn       int // -1: none
	off, end int // the tree: gofunc[off:end]
	next     int // the next tree's offset, or the end of the funcdata
}

func (o treeOwner) covers(e int) bool { return o.fn >= 0 && o.off <= e && e < o.next }

// treeOff returns where function i's inline tree starts in the funcdata, -1 if it has
// none: its _func record alone, without the pc-value table that sizes the tree.
func (l Layout) treeOff(i int) (int, error) {
	f := int(l.funcs[i].funcoff)
	if f < 0 || f+funcSize > len(l.pclntable) {
		return -1, fmt.Errorf("function %d: _func at %d out of the pclntab", i, f)
	}
	npcdata := int(binary.NativeEndian.Uint32(l.pclntable[f+funcNpcdata:]))
	nfuncdata := int(l.pclntable[f+funcNfuncdata])
	if npcdata <= pcdataInlTreeIndex || nfuncdata <= funcdataInlTree {
		return -1, nil
	}
	at := f + funcSize + 4*(npcdata+funcdataInlTree)
	if at+4 > len(l.pclntable) {
		return -1, fmt.Errorf("function %d: %d pcdata and %d funcdata out of the pclntab", i, npcdata, nfuncdata)
	}
	off := binary.NativeEndian.Uint32(l.pclntable[at:])
	if off == noFuncdata {
		return -1, nil
	}
	if int64(off) >= int64(len(l.inl.gofunc)) {
		return -1, fmt.Errorf("function %d: inline tree at %d out of bounds", i, off)
	}
	return int(off), nil
}

// recordSize returns the size of function i's _func record: its fields, then its
// pc-value table and funcdata offsets, padded to a pointer's alignment (cmd/link).
func (l Layout) recordSize(i int) int {
	f := int(l.funcs[i].funcoff)
	npcdata := int(binary.NativeEndian.Uint32(l.pclntable[f+funcNpcdata:]))
	size := funcSize + 4*(npcdata+int(l.pclntable[f+funcNfuncdata]))
	return (size + ptrSize - 1) &^ (ptrSize - 1)
}

// ptrSize is the size of a pointer, to which the linker aligns each _func record.
const ptrSize = 4 << (^uintptr(0) >> 63)

// findTreeOwner sets o to the last function whose inline tree starts at or before
// funcdata offset e, searching the functions from o's on (trees come in the order of
// their functions, and e grows from call to call): the function with a tree that
// holds e, if any does. It gallops from o's function, where the next owner usually
// is (a package's functions inline the same few), then searches in halves; a
// function without a tree says nothing of the order, so each probe reads on to the
// next function that has one. Every record read counts against budget.
func (l Layout) findTreeOwner(e int, o *treeOwner, budget *int) error {
	n := len(l.funcs) - 1
	// nextTree returns the first function in [i, limit) with a tree, and where its
	// tree is; limit if there is none.
	nextTree := func(i, limit int) (int, int, error) {
		for ; i < limit; i++ {
			// The records lie one after the other, so the function table alone
			// tells each one's size: one too small to hold a tree (a function of
			// the race runtime's, without pc-value tables) need not be read.
			size := -1
			if i+1 < n {
				size = int(l.funcs[i+1].funcoff) - int(l.funcs[i].funcoff)
			}
			if size >= funcSize && size < funcSize+4*(pcdataInlTreeIndex+1+funcdataInlTree+1) {
				continue
			}
			if *budget--; *budget < 0 {
				return 0, 0, errSparse
			}
			off, err := l.treeOff(i)
			if err == nil && size >= 0 && size != l.recordSize(i) {
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
	tree, _, err := l.inlineTree(best)
	if err != nil {
		return err
	}
	_, next, err := nextTree(best+1, n)
	if err != nil {
		return err
	}
	if next < 0 {
		next = len(l.inl.gofunc)
	}
	end := bestOff + len(tree)
	if next < end {
		return fmt.Errorf("function %d: inline tree [%d, %d) overlaps the next function's at %d", best, bestOff, end, next)
	}
	*o = treeOwner{fn: best, off: bestOff, end: end, next: next}
	return nil
}

// checkInlineTrees checks that this code reads the inline trees as the runtime does:
// for the first pcs in inlined code of the first few functions that have some (the
// runtime's, in every program) the innermost inlined call it reads is the function
// the runtime's CallersFrames names there. It returns nil when some pcs were compared
// and all agreed.
func (l Layout) checkInlineTrees() error {
	const enough = 3
	compared := 0
	for i := 0; i < len(l.funcs)-1 && compared < enough; i++ {
		tree, pcs, err := l.inlineTree(i)
		if err != nil {
			return err
		}
		if tree == nil {
			continue
		}
		// The first run in inlined code whose call is an ordinary function (the
		// runtime elides wrappers).
		var pc uint32
		var want []byte
		var bad error
		eachValue(pcs, l.inl.quantum, func(lo, hi uint32, v int32) bool {
			if v < 0 || lo == hi || tree[int(v)*inlinedCallSize] != 0 {
				return true
			}
			if want = l.callName(tree, int(v)); want == nil {
				bad = fmt.Errorf("function %d: inlined call %d: name out of the name table", i, v)
			}
			pc = lo
			return false
		})
		if bad != nil {
			return bad
		}
		if want == nil {
			continue
		}
		addr := l.Text + uintptr(l.funcs[i].entryoff) + uintptr(pc)
		// CallersFrames wants return addresses (it looks up pc-1) and expands a pc's
		// inline tree only while more pcs follow: hence +1 and the trailing 0.
		f, _ := runtime.CallersFrames([]uintptr{addr + 1, 0}).Next()
		if !printedAs(want, f.Function) {
			return fmt.Errorf("inline tree of %s at %#x names %q, the runtime %q", l.funcName(i), addr, want, f.Function)
		}
		compared++
	}
	if compared == 0 {
		return fmt.Errorf("no inlined call to compare with the runtime's")
	}
	return nil
}

package sled

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"runtime"
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

// inlinesProbe reports whether function i has a function of package sdt (prefix: its
// path and a dot) inlined into it.
func (l Layout) inlinesProbe(i int, prefix []byte) (bool, error) {
	tree, _, err := l.inlineTree(i)
	for k := 0; k < len(tree)/inlinedCallSize; k++ {
		off := int32(binary.NativeEndian.Uint32(tree[k*inlinedCallSize+inlinedCallName:]))
		if off < 0 || int(off) >= len(l.funcnames) {
			return false, fmt.Errorf("function %d: inlined call %d: name out of the name table", i, k)
		}
		if bytes.HasPrefix(l.funcnames[off:], prefix) {
			return true, nil
		}
	}
	return false, err
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
		// runtime elides wrappers) and has a name as the runtime prints it (no
		// generic type arguments, which it prints as "[...]").
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
		if want == nil || bytes.IndexByte(want, '[') >= 0 {
			continue
		}
		addr := l.Text + uintptr(l.funcs[i].entryoff) + uintptr(pc)
		// CallersFrames wants return addresses (it looks up pc-1) and expands a pc's
		// inline tree only while more pcs follow: hence +1 and the trailing 0.
		f, _ := runtime.CallersFrames([]uintptr{addr + 1, 0}).Next()
		if f.Function != string(want) {
			return fmt.Errorf("inline tree of %s at %#x names %q, the runtime %q", l.funcName(i), addr, want, f.Function)
		}
		compared++
	}
	if compared == 0 {
		return fmt.Errorf("no inlined call to compare with the runtime's")
	}
	return nil
}

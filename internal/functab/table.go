package functab

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
)

// Magic is the pclntab's magic of go1.20 and later (abi.Go120PCLnTabMagic), the only
// layout read here.
const Magic = 0xfffffff1

// The layout of a _func record (runtime._func) and of an inlinedCall
// (runtime/symtabinl.go), and the table indexes of internal/abi.
const (
	funcEntryOff  = 0  // uint32, from Table.Text
	funcNameOff   = 4  // int32, into the name table
	funcArgs      = 8  // int32: bytes of arguments and results on the stack
	funcPCSP      = 16 // uint32: the pc-value table of the SP delta
	funcPCFile    = 20 // uint32: of the file index in the compilation unit
	funcPCLine    = 24 // uint32: of the line
	funcNpcdata   = 28 // uint32: how many pc-value table offsets follow the record
	funcCUOffset  = 32 // uint32: the compilation unit's first entry in cutab
	funcStartLine = 36 // int32
	funcID        = 40 // uint8: abi.FuncID
	funcFlag      = 41 // uint8: abi.FuncFlag
	funcNfuncdata = 43 // uint8: how many funcdata offsets follow the pc-value tables'
	funcSize      = 44

	inlinedCallSize = 16 // funcID uint8, 3 bytes pad, nameOff, parentPc, startLine int32

	noFuncdata = ^uint32(0)
)

// Indexes of a function's pc-value tables (PCDATA_*) and funcdata (FUNCDATA_*), as
// internal/abi numbers them.
const (
	PCDataUnsafePoint   = 0
	PCDataStackMapIndex = 1
	PCDataInlTreeIndex  = 2

	FuncDataArgsPointerMaps   = 0
	FuncDataLocalsPointerMaps = 1
	FuncDataInlTree           = 3
	FuncDataArgInfo           = 5
)

// Table is a Go function table, in this process's memory or in a binary's bytes. Its
// methods read it lazily: a function's record is read when asked for, so that a
// program's start reads only the pages it needs. Every offset read is checked against
// the bounds of its table; what is out of bounds reads as absent (a name of nil, a
// value of -1, ok false), never as a fault.
type Table struct {
	Text    uint64 // runtime.text: function entries are offsets from it
	Quantum uint32 // the unit of pc deltas in pc-value tables (1 on amd64, 4 on arm64)
	ptrSize int    // of the machine: records are aligned to it
	nfunc   int
	ftab    []byte // nfunc+1 entries of {entryOff, funcOff uint32}; the last is the end of text
	funcs   []byte // pclntable: the _func records at ftab's offsets
	names   []byte // funcnametab
	cutab   []byte // uint32 file offsets, each compilation unit's from its cuOffset
	files   []byte // filetab: NUL-terminated file names
	pctab   []byte // the pc-value tables
	gofunc  []byte // funcdata: from go:func.* on (nil: not known)
	// linked: a name offset of 0 is the name table's first name, as the linker wrote
	// it (a binary's table, read as debug/gosym and go tool nm read it), not no name
	// (the running program's, read as its runtime reads it).
	linked bool
}

// header is the start of a pcHeader (runtime/symtab.go) on a 64-bit machine.
const (
	headerMinLC     = 6
	headerPtrSize   = 7
	headerNfunc     = 8
	headerTextStart = 24 // before go1.26
	headerNameOff   = 32
	headerCUOff     = 40
	headerFileOff   = 48
	headerPctabOff  = 56
	headerPclnOff   = 64
	headerSize      = 72
)

// ErrLayout is what New's errors match when the table is not one this package reads.
var ErrLayout = errors.New("function table layout not read")

// New reads the function table whose pcHeader starts pcln (a 64-bit, little-endian
// one: a binary's .gopclntab), for text starting at text (runtime.text), with funcdata
// at gofunc (go:func.*, to the end of its section; nil if it is not known: then there
// are no inline trees).
func New(pcln []byte, text uint64, gofunc []byte) (*Table, error) {
	le := binary.LittleEndian
	if len(pcln) < headerSize {
		return nil, fmt.Errorf("%w: pclntab of %d bytes", ErrLayout, len(pcln))
	}
	if m := le.Uint32(pcln); m != Magic {
		return nil, fmt.Errorf("%w: pclntab magic %#x, not %#x (Go 1.20 or later)", ErrLayout, m, uint32(Magic))
	}
	if pcln[headerPtrSize] != 8 {
		return nil, fmt.Errorf("%w: pclntab of %d-byte pointers", ErrLayout, pcln[headerPtrSize])
	}
	at := func(off int) []byte { return pcln[min(le.Uint64(pcln[off:]), uint64(len(pcln))):] }
	nfunc := le.Uint64(pcln[headerNfunc:])
	t := &Table{
		Text:    text,
		Quantum: uint32(pcln[headerMinLC]),
		ptrSize: 8,
		names:   at(headerNameOff),
		cutab:   at(headerCUOff),
		files:   at(headerFileOff),
		pctab:   at(headerPctabOff),
		funcs:   at(headerPclnOff),
		gofunc:  gofunc,
		linked:  true,
	}
	if nfunc == 0 || nfunc > uint64(len(t.funcs))/8-1 {
		return nil, fmt.Errorf("%w: %d functions in a table of %d bytes", ErrLayout, nfunc, len(t.funcs))
	}
	t.nfunc = int(nfunc)
	t.ftab = t.funcs[:(t.nfunc+1)*8]
	return t, t.check()
}

// check refuses a table whose function entries do not ascend or whose quantum is
// not a machine's.
func (t *Table) check() error {
	if t.Quantum != 1 && t.Quantum != 2 && t.Quantum != 4 {
		return fmt.Errorf("%w: pc quantum %d", ErrLayout, t.Quantum)
	}
	for _, i := range []int{0, t.nfunc / 2, t.nfunc - 1} {
		if t.entryOff(i) > t.entryOff(i+1) {
			return fmt.Errorf("%w: function %d's entry after the next one's", ErrLayout, i)
		}
	}
	return nil
}

// Len is the number of functions.
func (t *Table) Len() int { return t.nfunc }

func (t *Table) entryOff(i int) uint32 { return binary.LittleEndian.Uint32(t.ftab[8*i:]) }

// Entry is function i's first instruction.
func (t *Table) Entry(i int) uint64 { return t.Text + uint64(t.entryOff(i)) }

// End is where function i's code ends: the next function's entry (padding included),
// or the end of the text for the last.
func (t *Table) End(i int) uint64 { return t.Text + uint64(t.entryOff(i+1)) }

// EntryOffset and EndOffset are Entry and End as offsets from Text.
func (t *Table) EntryOffset(i int) int { return int(t.entryOff(i)) }
func (t *Table) EndOffset(i int) int   { return int(t.entryOff(i + 1)) }

// Find returns the function whose code holds pc, -1 if none does.
func (t *Table) Find(pc uint64) int {
	if pc < t.Text || pc >= t.End(t.nfunc-1) {
		return -1
	}
	off := uint32(pc - t.Text)
	lo, hi := 0, t.nfunc // the last function whose entry is at or before off
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if t.entryOff(m+1) <= off {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo >= t.nfunc || t.entryOff(lo) > off {
		return -1
	}
	return lo
}

// record returns function i's _func record with its pc-value and funcdata offsets, nil
// if it is out of the table.
func (t *Table) record(i int) []byte {
	f := int(binary.LittleEndian.Uint32(t.ftab[8*i+4:]))
	if f < 0 || f+funcSize > len(t.funcs) {
		return nil
	}
	r := t.funcs[f:]
	n := funcSize + 4*(int(binary.LittleEndian.Uint32(r[funcNpcdata:]))+int(r[funcNfuncdata]))
	if n > len(r) {
		return nil
	}
	return r[:n]
}

func u32(r []byte, off int) uint32 { return binary.LittleEndian.Uint32(r[off:]) }

// Name is function i's name as the linker wrote it (a generic function's type
// arguments spelled out), nil if it cannot be read. In the running program's table
// (Self) it is empty where the record's name offset is 0, which the runtime reads as
// no name (moduledata.funcName), although the linker puts the first name of its table
// there; a binary's table (New) gives that name.
func (t *Table) Name(i int) []byte {
	r := t.record(i)
	if r == nil {
		return nil
	}
	off := int32(u32(r, funcNameOff))
	if off == 0 && !t.linked {
		return []byte{}
	}
	return t.NameAt(off)
}

// NameAt is the name at offset off of the name table, nil if off is out of it.
func (t *Table) NameAt(off int32) []byte {
	if off < 0 || int(off) >= len(t.names) {
		return nil
	}
	n := t.names[off:]
	if end := bytes.IndexByte(n, 0); end >= 0 {
		n = n[:end]
	}
	return n
}

// NameTable is the whole name table, for a search of it: names are NUL-terminated.
func (t *Table) NameTable() []byte { return t.names }

// Func is what function i's record says besides its name.
type Func struct {
	Args      int32 // bytes of stack arguments and results
	StartLine int32
	ID        uint8 // abi.FuncID: non-zero for the runtime's special functions
	Flag      uint8 // abi.FuncFlag: TopFrame 1, SPWrite 2, Asm 4
}

// FuncFlag bits (abi.FuncFlag).
const (
	FlagTopFrame = 1 << 0
	FlagSPWrite  = 1 << 1
	FlagAsm      = 1 << 2
)

// Func returns function i's record; ok is false if it cannot be read.
func (t *Table) Func(i int) (f Func, ok bool) {
	r := t.record(i)
	if r == nil {
		return Func{}, false
	}
	return Func{Args: int32(u32(r, funcArgs)), StartLine: int32(u32(r, funcStartLine)), ID: r[funcID], Flag: r[funcFlag]}, true
}

// pcdataOff returns the offset in pctab of function i's pc-value table k, 0 if it has
// none.
func (t *Table) pcdataOff(r []byte, k int) uint32 {
	if k < 0 || k >= int(u32(r, funcNpcdata)) {
		return 0
	}
	return u32(r, funcSize+4*k)
}

// FuncData returns the offset from go:func.* of function i's funcdata k, false if it
// has none.
func (t *Table) FuncData(i, k int) (uint32, bool) {
	r := t.record(i)
	if r == nil || k < 0 || k >= int(r[funcNfuncdata]) {
		return 0, false
	}
	off := u32(r, funcSize+4*(int(u32(r, funcNpcdata))+k))
	return off, off != noFuncdata && t.gofunc != nil && int64(off) < int64(len(t.gofunc))
}

// Gofunc is the funcdata, from go:func.* on; nil where it is not known.
func (t *Table) Gofunc() []byte { return t.gofunc }

// value returns the value a pc-value table gives pc, in the function whose entry is
// entry: -1 where it says nothing (the runtime's pcvalue).
func (t *Table) value(off uint32, entry, pc uint64) int32 {
	if off == 0 || int64(off) >= int64(len(t.pctab)) {
		return -1
	}
	v := int32(-1)
	EachValue(t.pctab[off:], t.Quantum, func(lo, hi uint32, val int32) bool {
		if pc < entry+uint64(hi) {
			if pc >= entry+uint64(lo) {
				v = val
			}
			return false
		}
		return true
	})
	return v
}

// PCData returns the value function i's pc-value table k gives pc: -1 where it has
// none or says nothing.
func (t *Table) PCData(i, k int, pc uint64) int32 {
	r := t.record(i)
	if r == nil {
		return -1
	}
	return t.value(t.pcdataOff(r, k), t.Entry(i), pc)
}

// SPDelta is how far function i's SP is below its value at entry when pc is about to
// run (its pcsp table): 0 at entry, the frame size in the body; -1 where it cannot be
// read.
func (t *Table) SPDelta(i int, pc uint64) int32 {
	r := t.record(i)
	if r == nil {
		return -1
	}
	return t.value(u32(r, funcPCSP), t.Entry(i), pc)
}

// Values calls do for each run of function i's pc-value table k (PCData index) with
// pcs from its entry: [lo, hi) have value v, until do returns false.
func (t *Table) Values(i, k int, do func(lo, hi uint32, v int32) bool) error {
	r := t.record(i)
	if r == nil {
		return fmt.Errorf("function %d: no record", i)
	}
	off := t.pcdataOff(r, k)
	if off == 0 || int64(off) >= int64(len(t.pctab)) {
		return nil
	}
	return EachValue(t.pctab[off:], t.Quantum, do)
}

// SPDeltas is Values for the pcsp table.
func (t *Table) SPDeltas(i int, do func(lo, hi uint32, v int32) bool) error {
	r := t.record(i)
	if r == nil {
		return fmt.Errorf("function %d: no record", i)
	}
	off := u32(r, funcPCSP)
	if off == 0 || int64(off) >= int64(len(t.pctab)) {
		return fmt.Errorf("function %d: no SP table", i)
	}
	return EachValue(t.pctab[off:], t.Quantum, do)
}

// FileLine is the file and line of the code at pc in function i (for inlined code,
// the position inside the inlined function: Frames names the calls around it); "" and
// 0 where the table has none (the runtime prints "?").
func (t *Table) FileLine(i int, pc uint64) (file string, line int) {
	r := t.record(i)
	if r == nil {
		return "", 0
	}
	entry := t.Entry(i)
	line = int(t.value(u32(r, funcPCLine), entry, pc))
	fileno := t.value(u32(r, funcPCFile), entry, pc)
	cu := u32(r, funcCUOffset)
	if line < 0 || fileno < 0 || cu == ^uint32(0) {
		return "", 0
	}
	at := 4 * (int64(cu) + int64(fileno))
	if at+4 > int64(len(t.cutab)) {
		return "", line
	}
	off := binary.LittleEndian.Uint32(t.cutab[at:])
	if off == ^uint32(0) || int64(off) >= int64(len(t.files)) {
		return "", line
	}
	f := t.files[off:]
	if end := bytes.IndexByte(f, 0); end >= 0 {
		f = f[:end]
	}
	return string(f), line
}

// EachValue calls do(lo, hi, v) for each run of the pc-value table p (pcs [lo, hi) from
// the function's entry have value v) until do returns false.
func EachValue(p []byte, quantum uint32, do func(lo, hi uint32, v int32) bool) error {
	val, pc := int32(-1), uint32(0)
	for first := true; ; first = false {
		uv, n := binary.Uvarint(p)
		if n <= 0 || uv > 1<<32-1 {
			return errBadVarint
		}
		if uv == 0 && !first {
			return nil
		}
		p = p[n:]
		val += int32(-(uint32(uv) & 1) ^ (uint32(uv) >> 1))
		d, n := binary.Uvarint(p)
		if n <= 0 || d > 1<<32-1 {
			return errBadVarint
		}
		p = p[n:]
		lo := pc
		pc += uint32(d) * quantum
		if !do(lo, pc, val) {
			return nil
		}
	}
}

var errBadVarint = errors.New("pc-value table: bad varint")

// maxValue returns the largest value of a pc-value table: EachValue's loop, without
// the pcs, for the many functions discovery reads at a program's start.
func maxValue(p []byte) (int32, error) {
	val, most := int32(-1), int32(-1)
	for first := true; ; first = false {
		uv := uint32(0)
		if len(p) > 0 && p[0] < 0x80 {
			uv, p = uint32(p[0]), p[1:]
		} else {
			v, n := binary.Uvarint(p)
			if n <= 0 || v > 1<<32-1 {
				return 0, errBadVarint
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
			return 0, errBadVarint
		}
	}
}

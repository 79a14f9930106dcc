package offline

import (
	"debug/elf"
	"debug/gosym"
	"encoding/binary"

	"github.com/gosdt/gosdt/internal/functab"
	"github.com/gosdt/gosdt/internal/functab/elffile"
)

// inlineTree reads the inline tree that the linker leaves in a Go binary's function
// table (.gopclntab, which stripping keeps: the runtime needs it): for a pc in inlined
// code, the calls that put it there, which runtime.CallersFrames walks in a running
// program. It is what names a site's holder offline as the live path does, with or
// without DWARF. The layout is the runtime's since go1.20 (pclntab magic 0xfffffff1,
// runtime/symtab.go and symtabinl.go); any other is not read.
//
// Per function, _func (at ftab's offset) holds npcdata offsets into pctab, then
// nfuncdata offsets from the start of go:func.*; PCDATA_InlTreeIndex (2) maps a pc to
// an index into FUNCDATA_InlTree (3), an array of inlinedCall {funcID uint8; _ [3]byte;
// nameOff, parentPc, startLine int32}. The frame around an inlined call is the one at
// entry+parentPc, an instruction whose position is the call's.
type inlineTree struct {
	tab      *gosym.Table // file and line at a pc
	text     uint64       // runtime.text: function entries are offsets from it
	quantum  uint64       // the pc step of pc-value tables
	names    []byte       // funcnametab
	pctab    []byte
	ftab     []byte // nfunc+1 entries of {entryOff, funcOff uint32}
	funcs    []byte // pclntable: _func records at ftab's offsets
	gofunc   []byte // go:func.*, from its first byte to the end of its section
	nfunc    int
	le       binary.ByteOrder
	gofuncAt uint64
}

const (
	pclnMagic          = 0xfffffff1
	pcdataInlTreeIndex = 2
	funcdataInlTree    = 3
	funcHeaderLen      = 44 // _func up to its pcdata offsets
	inlinedCallLen     = 16
	maxInlineDepth     = 100
	pcHeaderNameOff    = 32
	pcHeaderPctabOff   = 56
	pcHeaderPclnOff    = 64
	pcHeaderLen        = 72
)

// newInlineTree reads the inline tree of f, whose .gopclntab is pcln and runtime.text
// text; nil if the binary's layout is not one it knows.
func newInlineTree(f *elf.File, pcln []byte, text uint64, tab *gosym.Table) *inlineTree {
	le := binary.LittleEndian
	if len(pcln) < pcHeaderLen || le.Uint32(pcln) != pclnMagic || pcln[7] != 8 || f.Class != elf.ELFCLASS64 {
		return nil
	}
	t := &inlineTree{tab: tab, text: text, quantum: uint64(pcln[6]), le: le, nfunc: int(le.Uint64(pcln[8:]))}
	off := func(at int) int { return int(min(le.Uint64(pcln[at:]), uint64(len(pcln)))) }
	t.names, t.pctab, t.funcs = pcln[off(pcHeaderNameOff):], pcln[off(pcHeaderPctabOff):], pcln[off(pcHeaderPclnOff):]
	if t.nfunc <= 0 || t.quantum == 0 || (t.nfunc+1)*8 > len(t.funcs) {
		return nil
	}
	t.ftab = t.funcs[:(t.nfunc+1)*8]
	if t.gofuncAt = goFunc(f, text); t.gofuncAt == 0 {
		return nil
	}
	for _, s := range f.Sections {
		if s.Flags&elf.SHF_ALLOC != 0 && s.Type == elf.SHT_PROGBITS && t.gofuncAt >= s.Addr && t.gofuncAt < s.Addr+s.Size {
			if b, err := s.Data(); err == nil {
				t.gofunc = b[t.gofuncAt-s.Addr:]
			}
		}
	}
	if t.gofunc == nil {
		return nil
	}
	return t
}

// goFunc finds go:func.*, which funcdata offsets are relative to: in the symbol
// table, else as the runtime does, in runtime.firstmoduledata (functab.FindGofunc,
// which knows where each Go release puts it).
func goFunc(f *elf.File, text uint64) uint64 {
	if syms, err := f.Symbols(); err == nil {
		for _, s := range syms {
			if s.Name == "go:func.*" {
				return s.Value
			}
		}
	}
	pcln := f.Section(".gopclntab")
	if pcln == nil {
		return 0
	}
	version := elffile.GoVersion(f)
	for _, name := range []string{".go.module", ".noptrdata"} {
		data := f.Section(name)
		if data == nil {
			continue
		}
		b, err := data.Data()
		if err != nil {
			continue
		}
		if at := functab.FindGofunc(b, data.Addr, pcln.Addr, text, version); at != 0 {
			return at
		}
	}
	return 0
}

// frame is one frame of the inline tree at a pc.
type frame struct {
	fn   string
	file string
	line int
}

// frames returns the frames at pc, innermost first: the inlined calls, then the
// function whose code it is.
func (t *inlineTree) frames(pc uint64) []frame {
	fn, ok := t.funcAt(pc)
	if !ok {
		return nil
	}
	entry := t.text + uint64(t.u32(fn, 0))
	name := t.name(int32(t.u32(fn, 4)))
	npcdata, nfuncdata := t.u32(fn, 28), uint32(fn[funcHeaderLen-1])
	var tree []byte
	var indexTable uint32
	if npcdata > pcdataInlTreeIndex && nfuncdata > funcdataInlTree {
		indexTable = t.u32(fn, funcHeaderLen+4*pcdataInlTreeIndex)
		if off := t.u32(fn, funcHeaderLen+4*int(npcdata)+4*funcdataInlTree); off != ^uint32(0) && uint64(off) < uint64(len(t.gofunc)) {
			tree = t.gofunc[off:]
		}
	}
	var out []frame
	for range maxInlineDepth {
		file, line, _ := t.tab.PCToLine(pc)
		ix := int32(-1)
		if tree != nil && indexTable != 0 {
			ix = t.pcvalue(indexTable, entry, pc)
		}
		if ix < 0 || int(ix+1)*inlinedCallLen > len(tree) {
			return append(out, frame{fn: name, file: file, line: line})
		}
		call := tree[int(ix)*inlinedCallLen:]
		out = append(out, frame{fn: t.name(int32(t.le.Uint32(call[4:]))), file: file, line: line})
		pc = entry + uint64(int32(t.le.Uint32(call[8:])))
	}
	return out
}

// funcAt returns the _func record of the function whose code holds pc.
func (t *inlineTree) funcAt(pc uint64) ([]byte, bool) {
	if pc < t.text {
		return nil, false
	}
	off := pc - t.text
	lo, hi := 0, t.nfunc
	for lo < hi { // the last entry whose entryOff <= off
		m := int(uint(lo+hi) >> 1)
		if uint64(t.le.Uint32(t.ftab[8*(m+1):])) <= off {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo >= t.nfunc || uint64(t.le.Uint32(t.ftab[8*lo:])) > off {
		return nil, false
	}
	fo := int(t.le.Uint32(t.ftab[8*lo+4:]))
	if fo+funcHeaderLen > len(t.funcs) {
		return nil, false
	}
	return t.funcs[fo:], true
}

// u32 reads the uint32 at off of a _func record, 0 beyond the table.
func (t *inlineTree) u32(fn []byte, off int) uint32 {
	if off+4 > len(fn) {
		return 0
	}
	return t.le.Uint32(fn[off:])
}

// name reads a function name from funcnametab.
func (t *inlineTree) name(off int32) string {
	if off < 0 || int(off) >= len(t.names) {
		return ""
	}
	b := t.names[off:]
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return ""
}

// pcvalue returns the value the pc-value table at off of pctab gives target, in the
// function at entry: -1 where it says nothing (the runtime's pcvalue).
func (t *inlineTree) pcvalue(off uint32, entry, target uint64) int32 {
	if uint64(off) >= uint64(len(t.pctab)) {
		return -1
	}
	p := t.pctab[off:]
	pc, val := entry, int32(-1)
	for first := true; ; first = false {
		uv, n := binary.Uvarint(p)
		if n <= 0 || uv == 0 && !first {
			return -1
		}
		p = p[n:]
		if uv&1 != 0 {
			uv = ^(uv >> 1)
		} else {
			uv >>= 1
		}
		val += int32(uv)
		d, n := binary.Uvarint(p)
		if n <= 0 {
			return -1
		}
		p = p[n:]
		pc += d * t.quantum
		if target < pc {
			return val
		}
	}
}

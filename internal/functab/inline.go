package functab

import (
	"encoding/binary"
	"fmt"
)

// A function's inline tree (FUNCDATA_InlTree) lists the calls the compiler inlined into
// it, an inlined call after the one it is inlined into; its PCDATA_InlTreeIndex table
// maps each pc to the innermost inlined call whose code it is (-1: the function's own
// code). runtime.CallersFrames walks the same tree.

// InlinedCall is one entry of an inline tree.
type InlinedCall struct {
	FuncID   uint8  // the inlined function's abi.FuncID
	NameOff  int32  // its name, in the name table (NameAt)
	ParentPC uint32 // from the holder's entry: an instruction whose position is the call's
}

// InlineTree returns function i's inline tree, as many entries as its
// PCDATA_InlTreeIndex table uses (the compiler numbers a function's inlined calls
// densely), and that table; both nil if the function inlined nothing. An offset out of
// its table is an error: then the layout is not what this package reads.
func (t *Table) InlineTree(i int) (tree InlineTree, pcs []byte, err error) {
	r := t.record(i)
	if r == nil {
		return nil, nil, fmt.Errorf("function %d: record out of the table", i)
	}
	npcdata, nfuncdata := int(u32(r, funcNpcdata)), int(r[funcNfuncdata])
	if npcdata <= PCDataInlTreeIndex || nfuncdata <= FuncDataInlTree {
		return nil, nil, nil
	}
	pcOff := u32(r, funcSize+4*PCDataInlTreeIndex)
	treeOff := u32(r, funcSize+4*(npcdata+FuncDataInlTree))
	if pcOff == 0 || treeOff == noFuncdata {
		return nil, nil, nil
	}
	if int64(pcOff) >= int64(len(t.pctab)) || int64(treeOff) >= int64(len(t.gofunc)) {
		return nil, nil, fmt.Errorf("function %d: inline tables at %d, %d out of bounds", i, pcOff, treeOff)
	}
	pcs = t.pctab[pcOff:]
	most, err := maxValue(pcs)
	if err != nil {
		return nil, nil, fmt.Errorf("function %d: %v", i, err)
	}
	if most < 0 {
		return nil, nil, nil
	}
	end := int64(treeOff) + (int64(most)+1)*inlinedCallSize
	if end > int64(len(t.gofunc)) {
		return nil, nil, fmt.Errorf("function %d: inline tree of %d calls out of bounds", i, most+1)
	}
	return InlineTree(t.gofunc[treeOff:end]), pcs, nil
}

// InlineTree is the raw entries of a function's inline tree.
type InlineTree []byte

// Len is the number of inlined calls.
func (tr InlineTree) Len() int { return len(tr) / inlinedCallSize }

// NameOff is the name table offset of the function of call k: what a search for the
// inliners of a name compares, without decoding the rest.
func (tr InlineTree) NameOff(k int) int32 {
	return int32(binary.LittleEndian.Uint32(tr[k*inlinedCallSize+4:]))
}

// Call decodes call k.
func (tr InlineTree) Call(k int) InlinedCall {
	e := tr[k*inlinedCallSize:]
	return InlinedCall{FuncID: e[0], NameOff: tr.NameOff(k), ParentPC: binary.LittleEndian.Uint32(e[8:])}
}

// Frame is one frame of the code at a pc: an inlined call, or the function whose code
// it is.
type Frame struct {
	Func string
	File string
	Line int
}

// maxInlineDepth bounds a walk up an inline tree whose parents could loop.
const maxInlineDepth = 100

// Frames returns the frames at pc, innermost first: the inlined calls whose code it
// is, then the function that holds them, as runtime.CallersFrames expands them (but
// without eliding wrappers); nil if no function holds pc.
func (t *Table) Frames(pc uint64) []Frame {
	i := t.Find(pc)
	if i < 0 {
		return nil
	}
	entry := t.Entry(i)
	tree, _, _ := t.InlineTree(i)
	var out []Frame
	for range maxInlineDepth {
		file, line := t.FileLine(i, pc)
		ix := int32(-1)
		if tree != nil {
			ix = t.PCData(i, PCDataInlTreeIndex, pc)
		}
		if ix < 0 || int(ix) >= tree.Len() {
			return append(out, Frame{Func: string(t.Name(i)), File: file, Line: line})
		}
		c := tree.Call(int(ix))
		out = append(out, Frame{Func: string(t.NameAt(c.NameOff)), File: file, Line: line})
		pc = entry + uint64(c.ParentPC)
	}
	return out
}

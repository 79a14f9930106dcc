package amd64

import (
	"strings"
	"testing"

	"github.com/gosdt/gosdt/arch"
	"github.com/gosdt/gosdt/internal/testbin"
)

// TestInstsIsPlainDecode holds insts, the one pass over a walked function's decoded
// instructions that funcReturns, retJump and argReads share, against the plain decode
// of every function of real binaries (decodeAt from the entry, each instruction's
// length to the next): the same instructions at the same pcs, to the function's end
// and to an end before it (retJump's: where the code ends before the INT3 padding).
func TestInstsIsPlainDecode(t *testing.T) {
	bins := testbin.Binaries(t, &Arch)
	if testing.Short() {
		bins = bins[:1]
	}
	for _, b := range bins {
		funcs, n := 0, 0
		for _, fn := range b.Funcs {
			w, err := walk(b.Text, fn.Entry, fn.End)
			if err != nil {
				continue
			}
			type instAt struct {
				pc uint64
				in inst
			}
			var plain []instAt
			for pc := w.Entry; pc < w.End; {
				in, err := decodeAt(b.Text, pc)
				if err != nil {
					t.Fatalf("%s: walked, but %v", fn.Name, err)
				}
				plain, pc = append(plain, instAt{pc, in}), pc+uint64(in.n)
			}
			code := w.End
			for code > w.Entry && b.Text.Read(code-1, 1)[0] == 0xCC {
				code--
			}
			for _, end := range []uint64{w.End, code} {
				i := 0
				it := insts(b.Text, w, end)
				for ; it.next(); i++ {
					if i >= len(plain) || it.pc != plain[i].pc || it.in != plain[i].in {
						t.Fatalf("%s to %#x: instruction %d at %#x is %+v; the plain decode's %+v", fn.Name, end, i, it.pc, it.in, plain[min(i, len(plain)-1)])
					}
				}
				if it.err != nil || i < len(plain) && plain[i].pc < end {
					t.Fatalf("%s to %#x: %d instructions (%v), the plain decode %d", fn.Name, end, i, it.err, len(plain))
				}
				if it.next() {
					t.Fatalf("%s to %#x: next after the end moved to %#x", fn.Name, end, it.pc)
				}
			}
			funcs, n = funcs+1, n+len(plain)
		}
		t.Logf("%s: %d functions, %d instructions", b.Path, funcs, n)
		if funcs < len(b.Funcs)*99/100 {
			t.Errorf("%s: only %d of %d functions walked", b.Path, funcs, len(b.Funcs))
		}
	}

	// An instruction the decoder cannot read (the bytes changed since the walk) ends
	// the walk with decodeAt's error, and the cursor stays there.
	code := []byte{0xB8, 1, 0, 0, 0, 0x90, 0xC3} // MOVL $1, AX; NOP; RET
	w, err := walk(arch.Bytes{Base: 0x1000, Code: code}, 0x1000, 0x1000+uint64(len(code)))
	if err != nil {
		t.Fatal(err)
	}
	changed := arch.Bytes{Base: 0x1000, Code: []byte{0xB8, 1, 0, 0, 0, 0x06, 0xC3}} // PUSH ES: not in 64-bit mode
	var pcs []uint64
	it := insts(changed, w, w.End)
	for it.next() {
		pcs = append(pcs, it.pc)
	}
	if len(pcs) != 1 || it.pc != 0x1005 || it.err == nil || !strings.Contains(it.err.Error(), "cannot decode") || it.next() {
		t.Errorf("undecodable second instruction: visited %#x, stopped at %#x with %v", pcs, it.pc, it.err)
	}
}

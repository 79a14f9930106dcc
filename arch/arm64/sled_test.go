package arm64

import (
	"encoding/binary"
	"testing"

	"github.com/gosdt/gosdt/arch"
	"golang.org/x/arch/arm64/arm64asm"
)

// decode1 decodes one encoded instruction with arm64asm: every encoder here is checked
// by the disassembler, never by re-reading its own bit layout.
func decode1(t *testing.T, b []byte) arm64asm.Inst {
	t.Helper()
	if len(b) != instLen {
		t.Fatalf("encoding % x is %d bytes, want 4", b, len(b))
	}
	in, err := arm64asm.Decode(b)
	if err != nil {
		t.Fatalf("arm64asm cannot decode % x: %v", b, err)
	}
	return in
}

func TestEncodeB(t *testing.T) {
	const from = 0x1000_0000
	for _, c := range []struct {
		off int64
		ok  bool
	}{
		{4, true}, {-4, true}, {0, true}, {0x18, true}, {-0x1c, true},
		{maxB, true}, {minB, true},
		{maxB + 4, false}, {minB - 4, false}, {2, false}, {1 << 40, false},
	} {
		to := uint64(int64(from) + c.off)
		b, err := encodeB(from, to)
		if !c.ok {
			if err == nil {
				t.Errorf("encodeB(%+d) = % x, want an error", c.off, b)
			}
			continue
		}
		if err != nil {
			t.Errorf("encodeB(%+d): %v", c.off, err)
			continue
		}
		in := decode1(t, b)
		rel, ok := in.Args[0].(arm64asm.PCRel)
		if in.Op != arm64asm.B || !ok || int64(rel) != c.off {
			t.Errorf("encodeB(%+d) = % x decodes as %v", c.off, b, in)
		}
	}
}

// TestSealNOPs: the flag load's rewrite is NOPs over the whole load, 8 or 12 bytes,
// and leaves the sled's forms as they were.
func TestSealNOPs(t *testing.T) {
	for _, add := range []bool{false, true} {
		p, ld := shape{op: "CBZ", recv: flagAddr, add: add}.build()
		m := p.mem()
		s, err := follow(m, ld)
		if err != nil {
			t.Fatal(err)
		}
		sl, err := seal(m, s, callFx)
		if err != nil || len(sl.Also) != 1 || sl.Also[0].Addr != ld.Addr || len(sl.Also[0].New) != ld.Len {
			t.Fatalf("load of %d bytes: sled %+v, %v", ld.Len, sl, err)
		}
		for i := 0; i < ld.Len; i += instLen {
			if in := decode1(t, sl.Also[0].New[i:i+instLen]); in.Op != arm64asm.NOP {
				t.Errorf("load of %d bytes: word %d of its rewrite decodes as %v", ld.Len, i/instLen, in)
			}
		}
		if !jumps(sl.Off) || jumps(sl.On) || decode1(t, sl.On).Op != arm64asm.NOP {
			t.Errorf("load of %d bytes: forms % x, % x", ld.Len, sl.Off, sl.On)
		}
	}
}

func TestCanonical(t *testing.T) {
	for _, c := range []struct {
		op     arm64asm.Op
		offJmp bool // the disabled form is the B
	}{
		{arm64asm.CBZ, true}, {arm64asm.TBZ, true}, {arm64asm.CBNZ, false}, {arm64asm.TBNZ, false},
	} {
		for _, taken := range []uint64{0x2000 + 0x40, 0x2000 - 0x100} {
			s := arch.Site{Addr: 0x2000, Len: 4, Taken: taken, OnZero: c.offJmp, Branch: c.op.String()}
			sl, err := canonical(s)
			if err != nil {
				t.Fatalf("%v: %v", c.op, err)
			}
			jmp, nop := sl.Off, sl.On
			if !c.offJmp {
				jmp, nop = nop, jmp
			}
			if !jumps(jmp) || jumps(nop) {
				t.Errorf("%v: jumps(B form) = %v, jumps(NOP form) = %v", c.op, jumps(jmp), jumps(nop))
			}
			j, n := decode1(t, jmp), decode1(t, nop)
			if rel, _ := j.Args[0].(arm64asm.PCRel); j.Op != arm64asm.B || uint64(int64(s.Addr)+int64(rel)) != taken {
				t.Errorf("%v to %#x: B form decodes as %v", c.op, taken, j)
			}
			if n.Op != arm64asm.NOP || sl.Toggle != 4 || sl.Target != taken {
				t.Errorf("%v: NOP form %v, toggle %d, target %#x", c.op, n, sl.Toggle, sl.Target)
			}
		}
	}
	if _, err := canonical(arch.Site{Addr: 0x2000, Len: 4, Branch: "B", Taken: 0x2004}); err == nil {
		t.Error("canonical accepted a B site")
	}
	// A branch to itself or to the next instruction: both forms would go the same way.
	for _, taken := range []uint64{0x2000, 0x2004} {
		if sl, err := canonical(arch.Site{Addr: 0x2000, Len: 4, Branch: "CBNZ", Taken: taken}); err == nil {
			t.Errorf("canonical of a CBNZ to %#x = %+v, want an error", taken, sl)
		}
	}
}

// The raw field decoders agree with arm64asm on real words (from go1.26 output).
func TestRawDecoders(t *testing.T) {
	const pc = 0x150070
	page, rd, ok := adrp(0x90000fbb, pc) // ADRP X27, .+0x1f4000
	if !ok || rd != 27 || page != pc&^0xfff+0x1f4000 {
		t.Errorf("adrp = %#x, X%d, %v", page, rd, ok)
	}
	if rt, rn, imm, ok := ldrbImm(0x39494365); !ok || rt != 5 || rn != 27 || imm != 592 {
		t.Errorf("ldrbImm = W%d, X%d, %d, %v", rt, rn, imm, ok)
	}
	if rd, rn, imm, ok := addImm(0x91094000); !ok || rd != 0 || rn != 0 || imm != 592 {
		t.Errorf("addImm = X%d, X%d, %d, %v", rd, rn, imm, ok)
	}
	for _, w := range []uint32{0x90000fbb, 0x39494365, 0x91094000} {
		var b [4]byte
		binary.LittleEndian.PutUint32(b[:], w)
		t.Logf("%08x: %v", w, decode1(t, b[:]))
	}
}

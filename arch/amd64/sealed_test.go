package amd64

import (
	"testing"

	"github.com/gosdt/gosdt/arch"
)

// sealedLoop is loopFunc with its site sealed in the file, as sdtctl seal writes it:
// its bytes, the site and its sled.
func sealedLoop(t *testing.T, base uint64) (*asm, []byte, arch.Site, arch.Sled) {
	t.Helper()
	a := loopFunc(base)
	m := a.mem()
	s, err := follow(m, arch.Check{Addr: a.at("site"), Len: cmpbLen, Flag: flagAddr, Reg: -1, Tmp: -1})
	if err != nil {
		t.Fatal(err)
	}
	sl, err := canonical(s)
	if err != nil {
		t.Fatal(err)
	}
	code := a.bytes()
	copy(code[s.Addr-base:], sl.Off)
	return a, code, s, sl
}

// TestSealed reads loopFunc's site back from its sealed text, at every address modulo
// 8, and refuses what seal never writes.
func TestSealed(t *testing.T) {
	for base := uint64(0x1000); base < 0x1008; base++ {
		a, code, s, sl := sealedLoop(t, base)
		m := arch.Bytes{Base: base, Code: code}
		w, err := walk(m, base, base+uint64(len(code)))
		if err != nil {
			t.Fatal(err)
		}
		got, gsl, ok := sealed(m, w, s.Addr)
		if !ok || got.Addr != s.Addr || got.Len != s.Len || got.Taken != s.Taken || !got.OnZero ||
			string(gsl.Off) != string(sl.Off) || string(gsl.On) != string(sl.On) || gsl.At != sl.At {
			t.Fatalf("base %#x: sealed = %+v %+v %v; want %+v %+v", base, got, gsl, ok, s, sl)
		}
		// A guess at any other start is refused.
		for pc := base; pc < base+uint64(len(code)); pc++ {
			if pc == s.Addr {
				continue
			}
			if _, _, ok := sealed(m, w, pc); ok {
				t.Errorf("base %#x: a sealed site at %#x (site %#x)", base, pc, s.Addr)
			}
		}
		// The fire block comes back to the JMP's target; nothing else does.
		g, err := guardedCall(m, s.Next(), nil)
		if err != nil || !rejoins(m, g.Return, s.Taken, nil) || rejoins(m, g.Return, a.at("exit"), nil) {
			t.Errorf("base %#x: rejoins after the fire call: %v", base, err)
		}
		if rejoins(m, a.at("cond"), a.at("exit"), nil) { // a JLE on the way
			t.Error("rejoins through a conditional branch")
		}
		if rejoins(m, g.Return-5, s.Taken, func(uint64) bool { return false }) || !rejoins(m, g.Return-5, s.Taken, func(uint64) bool { return true }) {
			t.Error("rejoins: a call not passed must stop it, a passed one not")
		}
	}

	a, code, s, _ := sealedLoop(t, 0x1000)
	refuse := func(name string, code []byte) {
		t.Helper()
		m := arch.Bytes{Base: 0x1000, Code: code}
		w, err := walk(m, 0x1000, 0x1000+uint64(len(code)))
		if err != nil {
			t.Fatal(err)
		}
		if got, _, ok := sealed(m, w, s.Addr); ok {
			t.Errorf("%s: read as a sealed site: %+v", name, got)
		}
	}
	jmp := s.Addr
	// The same jump as a rel32 (canonical takes rel8 where it fits), padded to the
	// site's length with NOPs.
	rel32 := append([]byte(nil), code...)
	j, _ := encodeJMP32(jmp, s.Taken)
	copy(rel32[jmp-0x1000:], append(j, nop(s.Len-len(j))...))
	refuse("rel32 where rel8 fits", rel32)
	// Other NOPs than the canonical ones after the jump.
	ones := append([]byte(nil), code...)
	for i := jmp + 2; i < s.Next(); i++ {
		ones[i-0x1000] = 0x90
	}
	refuse("one-byte NOPs", ones)
	// A branch onto the block after the sled: it is not the sled's alone.
	onto := append([]byte(nil), code...)
	e, _ := encodeJMP32(a.at("exit"), s.Next())
	copy(onto[a.at("exit")-0x1000:], e) // over ADDQ, POPQ: a JMP to the fire block
	refuse("branch onto the fire block", onto)
}

package amd64

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/gosdt/gosdt/arch"
	"golang.org/x/arch/x86/x86asm"
)

const (
	flagAddr  = uint64(0x525350)
	dictAddr  = uint64(0x498000)
	fireAddr  = uint64(0x47a980)
	raceread  = uint64(0x46a000)
	morestack = uint64(0x475000)
)

// loopFunc is main.loop of the design notes, hand-assembled: a site in a loop
// whose JE goes backward to the loop's increment.
func loopFunc(base uint64) *asm {
	a := newAsm(base)
	a.stackCheck("morestack")
	a.raw(0x55)                   // PUSHQ BP
	a.raw(0x48, 0x89, 0xE5)       // MOVQ SP, BP
	a.raw(0x48, 0x83, 0xEC, 0x20) // SUBQ $0x20, SP
	a.raw(0x31, 0xC9)             // XORL CX, CX
	a.jmp8("cond")
	a.label("incr").incCX().nop(1)
	a.label("cond").cmpAXCX().raw(0x7E).ref("exit", 1, 0) // JLE exit

	a.nop(1) // inline mark
	a.label("site").cmpb(flagAddr).je8("incr")
	a.label("fire").movSpill().leaBX(dictAddr).leaAX(flagAddr).call(fireAddr)
	a.jmp8("incr")
	a.label("exit").addSP().popBP().ret()
	a.label("morestack").call(morestack).jmp32(base)
	a.int3(5)
	return a
}

// isShapeError reports whether err is a *arch.ShapeError whose reason says want.
func isShapeError(err error, want string) bool {
	var se *arch.ShapeError
	return errors.As(err, &se) && strings.Contains(se.Reason, want)
}

// refused fails t unless err is what a case wants: none for "", else a ShapeError
// whose reason says want. It reports whether the case wanted an error (it is done).
func refused(t *testing.T, err error, want string, got any) bool {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Fatal(err)
	case want != "" && !isShapeError(err, want):
		t.Fatalf("got %+v, %v; want ShapeError %q", got, err, want)
	}
	return want != ""
}

func TestCandidates(t *testing.T) {
	text := []byte{0x80, 0x3D, 1, 2, 3, 4, 0, 0x80, 0x3D, 0x80, 0x3D, 0, 0, 0, 0, 0, 0x80, 0x3D, 0, 0, 0, 0, 1, 0x80, 0x3D, 0, 0}
	want := []arch.Check{
		{Addr: 0x1000, Len: 7, Flag: 0x1007 + 0x04030201, Reg: -1, Tmp: -1},
		{Addr: 0x1007, Len: 7, Flag: 0x100e + 0x3D80, Reg: -1, Tmp: -1},
		{Addr: 0x1009, Len: 7, Flag: 0x1010, Reg: -1, Tmp: -1},
	}
	if got := candidates(text, 0x1000, 0, len(text)); !reflect.DeepEqual(got, want) {
		t.Errorf("candidates = %+v, want %+v", got, want)
	}
	if got := candidates(nil, 0x1000, 0, 0); len(got) != 0 {
		t.Errorf("candidates(nil) = %v", got)
	}
}

// TestWalk walks the loop of the design notes: where its instructions start, where
// its branches go, and what stops a walk.
func TestWalk(t *testing.T) {
	a := loopFunc(0x1000)
	m := a.mem()
	end := a.at("morestack") + 5 + 5 // CALL + JMP rel32
	t.Run("whole", func(t *testing.T) {
		w, err := walk(m, 0x1000, end)
		if err != nil {
			t.Fatal(err)
		}
		if w.End != end {
			t.Fatalf("walk ended at %#x, want %#x", w.End, end)
		}
		last, err := decodeAt(m, end-5)
		if err != nil || last.flow != flowJmp || last.target(end-5) != 0x1000 || !w.IsStart(end-5) {
			t.Fatalf("last instruction %+v, %v: want the JMP back to the entry", last, err)
		}
		if !w.IsStart(a.at("site")) || w.IsStart(a.at("site")+1) {
			t.Fatalf("IsStart(site) = %v, IsStart(site+1) = %v", w.IsStart(a.at("site")), w.IsStart(a.at("site")+1))
		}
		for _, l := range []string{"incr", "cond", "exit", "morestack"} {
			if !slices.Contains(w.Targets, a.at(l)) {
				t.Errorf("Targets misses %s", l)
			}
		}
		if slices.Contains(w.Targets, fireAddr) {
			t.Error("Targets has a call target outside the function")
		}
		// x86asm's reading, the oracle: the same starts and targets.
		insts, err := xdecodeFunc(m, 0x1000, end)
		if err != nil {
			t.Fatal(err)
		}
		if w.Insts != len(insts) || !slices.Equal(w.Targets, targetsOf(insts)) {
			t.Fatalf("walk: %d instructions, targets %#x; x86asm %d, %#x", w.Insts, w.Targets, len(insts), targetsOf(insts))
		}
	})
	t.Run("part", func(t *testing.T) {
		w, err := walk(m, 0x1000, a.at("exit"))
		if err != nil || w.End != a.at("exit") {
			t.Fatalf("walk(end=exit) = %+v, %v", w, err)
		}
	})
	t.Run("bad bytes", func(t *testing.T) {
		code := append(append([]byte{}, a.bytes()[:4]...), 0x06) // PUSH ES: invalid in 64-bit mode
		_, err := walk(arch.Bytes{Base: 0x1000, Code: code}, 0x1000, end)
		var se *arch.ShapeError
		if !errors.As(err, &se) || se.PC != 0x1004 || !strings.Contains(se.Reason, "cannot decode 06") {
			t.Fatalf("err = %v, want a ShapeError at 0x1004 naming the byte", err)
		}
	})
	t.Run("truncated before end", func(t *testing.T) {
		// The next function's entry is past the mapped code: the walk ends with it.
		w, err := walk(m, 0x1000, 0x1000+uint64(len(a.b))+16)
		if err != nil || w.End != 0x1000+uint64(len(a.b)) {
			t.Fatalf("walk past the mapped code = %+v, %v", w, err)
		}
	})
}

func TestMatchSite(t *testing.T) {
	type build func(a *asm)
	tests := []struct {
		name   string
		build  build
		op     x86asm.Op
		len    int
		reason string // non-empty: MatchSite must fail with this in the reason
	}{
		{"JE rel8 fwd", func(a *asm) { a.nop(1).label("site").cmpb(flagAddr).je8("skip").movSpill().label("skip").ret() }, x86asm.JE, 9, ""},
		{"JE rel32 back with pad", func(a *asm) {
			a.label("skip").ret().label("site").cmpb(flagAddr).nop(3).je32("skip").ret()
		}, x86asm.JE, 16, ""},
		{"JE rel8 back with pads", func(a *asm) {
			a.label("skip").ret().label("site").cmpb(flagAddr).nop(2).nop(1).je8("skip").ret()
		}, x86asm.JE, 12, ""},
		{"JNE rel32", func(a *asm) {
			a.label("site").cmpb(flagAddr).jne32("fire").ret().label("fire").call(fireAddr).ret()
		}, x86asm.JNE, 13, ""},
		{"imm not 0", func(a *asm) {
			a.label("site").raw(0x80, 0x3D).ref(flagAddr, 4, 1)
			a.raw(1).je8("skip").label("skip").ret()
		}, 0, 0, "not CMPB $0"},
		{"register base", func(a *asm) { a.label("site").raw(0x80, 0x38, 0x00).je8("skip").label("skip").ret() }, 0, 0, "not CMPB $0"},
		{"JB", func(a *asm) { a.label("site").cmpb(flagAddr).raw(0x72).ref("skip", 1, 0); a.label("skip").ret() }, 0, 0, "not JE/JNE"},
		{"code between", func(a *asm) { a.label("site").cmpb(flagAddr).movSpill().je8("skip").label("skip").ret() }, 0, 0, "not JE/JNE"},
		{"branch into site", func(a *asm) {
			a.jmp8("jcc").label("site").cmpb(flagAddr).label("jcc").je8("skip").label("skip").ret()
		}, 0, 0, "inside the site"},
		{"branch into padding", func(a *asm) {
			a.jmp8("pad").label("site").cmpb(flagAddr).label("pad").nop(3).je8("skip").label("skip").ret()
		}, 0, 0, "inside the site"},
		{"branch to site start is fine", func(a *asm) {
			a.jmp8("site").label("site").cmpb(flagAddr).je8("skip").nop(1).label("skip").ret()
		}, x86asm.JE, 9, ""},
		{"branch to its own end", func(a *asm) {
			a.label("site").cmpb(flagAddr).je8("skip").label("skip").nop(1).ret()
		}, 0, 0, "at its end"},
		{"ends after CMPB", func(a *asm) { a.label("site").cmpb(flagAddr) }, 0, 0, "ends after"},
		{"prefixed JE", func(a *asm) { a.label("site").cmpb(flagAddr).raw(0x3E).je8("skip").label("skip").ret() }, 0, 0, "prefixed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := newAsm(0x2000)
			tt.build(a)
			// x86asm's reading of the function: the oracle of the site's branch.
			insts, err := xdecodeFunc(a.mem(), 0x2000, a.pc())
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := index(insts, a.at("site")); !ok {
				t.Fatal("no instruction at site")
			}
			// The shape, from the bytes on the walk's boundaries; then the pipeline
			// discovery runs: the site followed from its check, matched.
			w, err := walk(a.mem(), 0x2000, a.pc())
			if err != nil {
				t.Fatal(err)
			}
			s, err := matchSite(a.mem(), w, a.at("site"))
			if err == nil {
				f, ferr := follow(a.mem(), s.Check)
				if ferr != nil || f != s {
					t.Fatalf("follow = %+v, %v; matchSite %+v", f, ferr, s)
				}
				err = match(a.mem(), w, s)
			}
			if refused(t, err, tt.reason, s) {
				return
			}
			jcc := insts[len(insts)-1]
			for _, in := range insts {
				if in.Op == tt.op && in.PC > s.Addr {
					jcc = in
					break
				}
			}
			want := arch.Site{Check: arch.Check{Addr: a.at("site"), Len: 7, Flag: flagAddr, Reg: -1, Tmp: -1},
				Addr: a.at("site"), Len: tt.len, Taken: jcc.Target, OnZero: tt.op == x86asm.JE, Branch: tt.op.String()}
			if s != want {
				t.Fatalf("site = %+v, want %+v", s, want)
			}
			if tt.op == x86asm.JE && (s.Fire() != s.Next() || s.Skip() != s.Taken) ||
				tt.op == x86asm.JNE && (s.Fire() != s.Taken || s.Skip() != s.Next()) {
				t.Errorf("Fire/Skip = %#x/%#x for %v", s.Fire(), s.Skip(), s.Branch)
			}
			if _, err := canonical(s); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestLoopSite runs discovery's pipeline (Arch's functions, in sled's order) on the
// loop of the design notes, and splices both sled forms into the function.
func TestLoopSite(t *testing.T) {
	a := loopFunc(0x47a740)
	m := a.mem()
	var sites []arch.Site
	for _, c := range Arch.Candidates(a.bytes(), a.base, 0, len(a.bytes())) {
		s, err := Arch.Follow(m, c)
		if err != nil {
			t.Fatal(err)
		}
		w, err := Arch.Walk(m, a.base, a.pc())
		if err != nil {
			t.Fatal(err)
		}
		if err := Arch.Match(m, w, s); err != nil {
			t.Fatal(err)
		}
		sites = append(sites, s)
	}
	if len(sites) != 1 {
		t.Fatalf("found %d sites, want 1", len(sites))
	}
	s := sites[0]
	if s.Taken != a.at("incr") || s.Taken > s.Addr {
		t.Fatalf("site %+v: want a backward JE to %#x", s, a.at("incr"))
	}
	g, err := Arch.GuardedCall(m, s.Fire(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if g.Call != fireAddr || !reflect.DeepEqual(g.Receivers, []uint64{dictAddr, flagAddr}) || g.Return != g.CallPC+5 {
		t.Fatalf("guardedCall = %+v", g)
	}
	if pc, target, err := Offline.CallBefore(m, g.Return); err != nil || pc != g.CallPC || target != fireAddr {
		t.Fatalf("CallBefore(%#x) = %#x, %#x, %v; want %#x, %#x", g.Return, pc, target, err, g.CallPC, fireAddr)
	}
	sl, err := Arch.Seal(m, s, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Both forms, spliced into the function, must decode and keep its instruction
	// boundaries after the site.
	for _, form := range [][]byte{sl.Off, sl.On} {
		code := append([]byte{}, a.bytes()...)
		copy(code[s.Addr-a.base:], form)
		w, err := walk(arch.Bytes{Base: a.base, Code: code}, a.base, a.pc())
		if err != nil {
			t.Fatal(err)
		}
		if !w.IsStart(s.Next()) || !w.IsStart(s.Addr) {
			t.Fatalf("% x: no instruction starts at the sled (whose first instruction holds the toggle) or after it", form)
		}
	}
}

func TestGuardedCall(t *testing.T) {
	pass := func(t uint64) bool { return t == raceread }
	tests := []struct {
		name   string
		build  func(a *asm)
		call   uint64
		leas   []uint64
		reason string
	}{
		{"race", func(a *asm) {
			a.leaAX(dictAddr).call(raceread).leaBX(dictAddr).leaAX(flagAddr).movSpill().call(fireAddr).ret()
		}, fireAddr, []uint64{dictAddr, dictAddr, flagAddr}, ""},
		{"through jumps", func(a *asm) {
			a.jmp8("a").label("b").leaAX(flagAddr).jmp32("c").label("a").jmp8("b").label("c").call(fireAddr)
		}, fireAddr, []uint64{flagAddr}, ""},
		{"enabled guards user code", func(a *asm) { a.movImm(3).call(uint64(0x401000)).leaAX(flagAddr).call(fireAddr) }, 0x401000, nil, ""},
		{"Jcc", func(a *asm) { a.cmpAXCX().je8("x").label("x").call(fireAddr) }, 0, nil, "conditional"},
		{"RET", func(a *asm) { a.ret() }, 0, nil, "RET"},
		{"indirect call", func(a *asm) { a.raw(0xFF, 0xD0) }, 0, nil, "indirect call"},
		{"indirect jump", func(a *asm) { a.raw(0xFF, 0xE0) }, 0, nil, "indirect jump"},
		{"jump loop", func(a *asm) { a.label("l").jmp8("l") }, 0, nil, "jumps"},
		{"undecodable", func(a *asm) { a.raw(0x06) }, 0, nil, "cannot decode"},
		{"too long", func(a *asm) {
			for range 70 {
				a.movSpill()
			}
			a.call(fireAddr)
		}, 0, nil, "no call within"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := newAsm(0x3000)
			tt.build(a)
			g, err := guardedCall(a.mem(), 0x3000, pass)
			if refused(t, err, tt.reason, g) {
				return
			}
			if g.Call != tt.call || !reflect.DeepEqual(g.Receivers, tt.leas) {
				t.Fatalf("guardedCall = %+v, want call %#x receivers %#x", g, tt.call, tt.leas)
			}
		})
	}
}

func TestFlagsDead(t *testing.T) {
	tests := []struct {
		name   string
		build  func(a *asm)
		reason string // "" means proven dead
	}{
		{"ADD", func(a *asm) { a.addSP().popBP().ret() }, ""},
		{"spills then CALL", func(a *asm) { a.movSpill().leaAX(flagAddr).nop(4).call(fireAddr) }, ""},
		{"RET", func(a *asm) { a.popBP().ret() }, ""},
		{"INC then CMP", func(a *asm) { a.incCX().nop(1).cmpAXCX().raw(0x7E, 0) }, ""},
		{"JMP to XOR", func(a *asm) { a.jmp8("x").raw(0x0F, 0x0B).label("x").raw(0x31, 0xC9) }, ""},
		{"SHL imm then TEST", func(a *asm) { a.raw(0x48, 0xC1, 0xE0, 0x03, 0x48, 0x85, 0xC0) }, ""},
		{"UCOMISD", func(a *asm) { a.raw(0x66, 0x0F, 0x2E, 0xC1) }, ""},
		{"vector move then CALL", func(a *asm) { a.raw(0xC5, 0xFE, 0x6F, 0x06).call(fireAddr) }, ""}, // VMOVDQU (SI), Y0
		{"INC then JE", func(a *asm) { a.incCX().je8("x").label("x").ret() }, "CF live"},
		{"JE reads", func(a *asm) { a.je8("x").label("x").ret() }, "reads ZF"},
		{"SETcc", func(a *asm) { a.raw(0x0F, 0x94, 0xC0) }, "reads ZF"},
		{"ADC", func(a *asm) { a.raw(0x48, 0x11, 0xC8) }, "reads CF"},
		{"CMOV", func(a *asm) { a.raw(0x48, 0x0F, 0x4C, 0xC1) }, "reads"},
		{"PUSHF", func(a *asm) { a.raw(0x9C) }, "reads"},
		{"SHL by CL then JE", func(a *asm) { a.raw(0x48, 0xD3, 0xE0).je8("x").label("x").ret() }, "reads"},
		{"unknown op", func(a *asm) { a.raw(0x0F, 0x0B) }, "not understood"},
		{"unknown to the decoder", func(a *asm) { a.raw(0x06) }, "cannot decode"},
		{"LOCK XADD then JE", func(a *asm) { a.raw(0xF0, 0x48, 0x0F, 0xC1, 0x0B).je8("x").label("x").ret() }, ""},
		{"VPTEST then JNE", func(a *asm) { a.raw(0xC4, 0xE2, 0x7D, 0x17, 0xC1, 0x75, 0x00) }, ""},
		{"REP CMPSB then JE", func(a *asm) { a.raw(0xF3, 0xA6).je8("x").label("x").ret() }, "reads ZF"},
		{"SHR by 1 then JA", func(a *asm) { a.raw(0x48, 0xD1, 0xE8, 0x77, 0x00) }, ""},
		{"SHR by 64 then JE", func(a *asm) { a.raw(0x48, 0xC1, 0xE8, 0x40, 0x74, 0x00) }, "reads ZF"},
		{"indirect jump", func(a *asm) { a.raw(0xFF, 0xE0) }, "indirect jump"},
		{"jump loop", func(a *asm) { a.label("l").jmp8("l") }, "jumps"},
		{"too long", func(a *asm) {
			for range 40 {
				a.movSpill()
			}
			a.ret()
		}, "within 32"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := newAsm(0x5000)
			tt.build(a)
			refused(t, flagsDead(a.mem(), 0x5000), tt.reason, nil)
		})
	}
}

package amd64

import (
	"errors"
	"reflect"
	"strings"
	"testing"

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

func TestCandidates(t *testing.T) {
	text := []byte{0x80, 0x3D, 1, 2, 3, 4, 0, 0x80, 0x3D, 0x80, 0x3D, 0, 0, 0, 0, 0, 0x80, 0x3D, 0, 0, 0, 0, 1, 0x80, 0x3D, 0, 0}
	if got, want := Candidates(text), []int{0, 7, 9}; !reflect.DeepEqual(got, want) {
		t.Errorf("Candidates = %v, want %v", got, want)
	}
	if got := Candidates(nil); len(got) != 0 {
		t.Errorf("Candidates(nil) = %v", got)
	}
}

func TestDecodeFunc(t *testing.T) {
	a := loopFunc(0x1000)
	m := a.mem()
	end := a.at("morestack") + 5 + 5 // CALL + JMP rel32
	t.Run("linear sweep", func(t *testing.T) {
		insts, err := DecodeFunc(m, 0x1000, 0, nil)
		if err != nil {
			t.Fatal(err)
		}
		if last := insts[len(insts)-1]; last.End() != end || last.Op != x86asm.JMP || last.Target != 0x1000 {
			t.Fatalf("sweep ended at %v (end %#x), want the JMP back to the entry ending at %#x", last, last.End(), end)
		}
		if i, ok := Index(insts, a.at("site")); !ok || insts[i].PC != a.at("site") {
			t.Fatalf("Index(site) = %d, %v", i, ok)
		}
		if _, ok := Index(insts, a.at("site")+1); ok {
			t.Fatal("Index inside an instruction succeeded")
		}
		tg := BranchTargets(insts)
		for _, l := range []string{"incr", "cond", "exit", "morestack"} {
			if !tg[a.at(l)] {
				t.Errorf("BranchTargets misses %s", l)
			}
		}
		if tg[fireAddr] {
			t.Error("BranchTargets has a call target outside the function")
		}
	})
	t.Run("explicit end", func(t *testing.T) {
		insts, err := DecodeFunc(m, 0x1000, a.at("exit"), nil)
		if err != nil || insts[len(insts)-1].End() != a.at("exit") {
			t.Fatalf("DecodeFunc(end=exit) = %v, %v", insts[len(insts)-1], err)
		}
	})
	t.Run("inFunc", func(t *testing.T) {
		insts, err := DecodeFunc(m, 0x1000, 0, func(pc uint64) bool { return pc < a.at("morestack") })
		if err != nil || insts[len(insts)-1].Op != x86asm.RET {
			t.Fatalf("DecodeFunc(inFunc) stopped at %v, %v; want the RET", insts[len(insts)-1], err)
		}
	})
	t.Run("bad bytes", func(t *testing.T) {
		code := append(append([]byte{}, a.bytes()[:4]...), 0x06) // PUSH ES: invalid in 64-bit mode
		_, err := DecodeFunc(Bytes{Base: 0x1000, Code: code}, 0x1000, 0, nil)
		var se *ShapeError
		if !errors.As(err, &se) || se.PC != 0x1004 {
			t.Fatalf("err = %v, want a ShapeError at 0x1004", err)
		}
	})
	t.Run("truncated before end", func(t *testing.T) {
		if _, err := DecodeFunc(m, 0x1000, 0x1000+uint64(len(a.b))+16, nil); err == nil {
			t.Fatal("decoding past the mapped code succeeded")
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
			a.jmp8("site").label("site").cmpb(flagAddr).je8("skip").label("skip").ret()
		}, x86asm.JE, 9, ""},
		{"ends after CMPB", func(a *asm) { a.label("site").cmpb(flagAddr) }, 0, 0, "ends after"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := newAsm(0x2000)
			tt.build(a)
			insts, err := DecodeFunc(a.mem(), 0x2000, a.pc(), nil)
			if err != nil {
				t.Fatal(err)
			}
			i, ok := Index(insts, a.at("site"))
			if !ok {
				t.Fatal("no instruction at site")
			}
			s, err := MatchSite(insts, i, BranchTargets(insts))
			if tt.reason != "" {
				var se *ShapeError
				if !errors.As(err, &se) || !strings.Contains(se.Reason, tt.reason) {
					t.Fatalf("MatchSite = %+v, %v; want ShapeError %q", s, err, tt.reason)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			jcc := insts[len(insts)-1]
			for _, in := range insts {
				if in.Op == tt.op && in.PC > s.Addr {
					jcc = in
					break
				}
			}
			want := Site{Addr: a.at("site"), Len: tt.len, Flag: flagAddr, Op: tt.op, Taken: jcc.Target, Next: a.at("site") + uint64(tt.len)}
			if s != want {
				t.Fatalf("MatchSite = %+v, want %+v", s, want)
			}
			if tt.op == x86asm.JE && (s.Fire() != s.Next || s.Skip() != s.Taken) ||
				tt.op == x86asm.JNE && (s.Fire() != s.Taken || s.Skip() != s.Next) {
				t.Errorf("Fire/Skip = %#x/%#x for %v", s.Fire(), s.Skip(), s.Op)
			}
			if _, err := Canonical(s); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestLoopSite(t *testing.T) {
	a := loopFunc(0x47a740)
	m := a.mem()
	insts, err := DecodeFunc(m, a.base, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	var sites []Site
	for _, off := range Candidates(a.bytes()) {
		i, ok := Index(insts, a.base+uint64(off))
		if !ok {
			continue
		}
		s, err := MatchSite(insts, i, BranchTargets(insts))
		if err != nil {
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
	g, err := GuardedCall(m, s.Fire(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if g.Call != fireAddr || !reflect.DeepEqual(g.Leas, []uint64{dictAddr, flagAddr}) || g.Return != g.CallPC+5 {
		t.Fatalf("GuardedCall = %+v", g)
	}
	for _, pc := range []uint64{s.Fire(), s.Skip()} {
		if err := FlagsDead(m, pc); err != nil {
			t.Errorf("FlagsDead(%#x): %v", pc, err)
		}
	}
	sl, err := Canonical(s)
	if err != nil {
		t.Fatal(err)
	}
	// Both forms, spliced into the function, must decode and keep its shape.
	for _, form := range [][]byte{sl.Off, sl.On} {
		code := append([]byte{}, a.bytes()...)
		copy(code[s.Addr-a.base:], form)
		if _, err := DecodeFunc(Bytes{Base: a.base, Code: code}, a.base, 0, nil); err != nil {
			t.Fatal(err)
		}
		if target, _, at, n, err := ParseSled(Bytes{Base: a.base, Code: code}, s.Addr); err != nil || n != s.Len || at != sl.At || (target != 0 && target != s.Taken) {
			t.Fatalf("ParseSled = %#x, %d, %d, %v", target, at, n, err)
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
			g, err := GuardedCall(a.mem(), 0x3000, pass)
			if tt.reason != "" {
				var se *ShapeError
				if !errors.As(err, &se) || !strings.Contains(se.Reason, tt.reason) {
					t.Fatalf("GuardedCall = %+v, %v; want ShapeError %q", g, err, tt.reason)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if g.Call != tt.call || !reflect.DeepEqual(g.Leas, tt.leas) {
				t.Fatalf("GuardedCall = %+v, want call %#x leas %#x", g, tt.call, tt.leas)
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
			err := FlagsDead(a.mem(), 0x5000)
			if tt.reason == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var se *ShapeError
			if !errors.As(err, &se) || !strings.Contains(se.Reason, tt.reason) {
				t.Fatalf("FlagsDead = %v, want ShapeError %q", err, tt.reason)
			}
		})
	}
}

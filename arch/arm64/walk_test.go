package arm64

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"golang.org/x/arch/arm64/arm64asm"
)

// adrTarget is the address an ADR takes, as BranchTargets reads it.
func adrTarget(in Inst) uint64 {
	if r, ok := in.Inst.Args[1].(arm64asm.PCRel); ok {
		return in.PC + uint64(int64(r))
	}
	return 0
}

// checkRaw compares the raw decoder with arm64asm on one word: a word raw calls a
// branch, ADR or unconditional transfer decodes to that, with the same target; a word
// it calls other is no direct branch, ADR or unconditional transfer to arm64asm.
func checkRaw(t *testing.T, w uint32, pc uint64) {
	t.Helper()
	kind, target := raw(w, pc)
	in := decodeWord(w, pc)
	var want rawKind
	var wantTarget uint64
	switch {
	case in.Bad:
	case isDirectBranch(in.Op) && in.Op == arm64asm.BL:
		want, wantTarget = rawBL, in.Target
	case isDirectBranch(in.Op) && isCondBranch(in):
		want, wantTarget = rawCond, in.Target
	case isDirectBranch(in.Op):
		want, wantTarget = rawB, in.Target
	case in.Op == arm64asm.ADR:
		want, wantTarget = rawADR, adrTarget(in)
	case isUncond(in):
		want = rawUncond
	}
	if kind != want || target != wantTarget {
		t.Fatalf("%#08x at %#x: raw %d -> %#x; arm64asm %v (bad %v): %d -> %#x", w, pc, kind, target, in.Inst, in.Bad, want, wantTarget)
	}
}

// TestRawAgreesWithArm64asm checks the raw decoder on every word of a real arm64 binary
// (the fixture program, built for linux/arm64 on any host) and on random words, biased
// to the branch encodings.
func TestRawAgreesWithArm64asm(t *testing.T) {
	b := readELF(t, buildFixture(t, "plain"))
	code := b.Text.Code
	for off := 0; off+4 <= len(code); off += 4 {
		checkRaw(t, binary.LittleEndian.Uint32(code[off:]), b.Text.Base+uint64(off))
	}
	rnd := rand.New(rand.NewPCG(3, 4))
	prefixes := []uint32{0x14000000, 0x94000000, 0x54000000, 0x34000000, 0x36000000, 0x10000000, 0xD61F0000, 0xD65F0000, 0xD4200000, 0xD4400000, 0xD69F03E0}
	for i := 0; i < 2_000_000; i++ {
		w := rnd.Uint32()
		if i%2 == 0 { // keep the top byte of a branch class, randomise the rest
			p := prefixes[rnd.IntN(len(prefixes))]
			w = p | w&0x00FFFFFF&^(p&0x00FFFFFF)
			if rnd.IntN(2) == 0 {
				w |= 0x80000000 & rnd.Uint32()
			}
		}
		checkRaw(t, w, 0x400000+uint64(rnd.IntN(1<<20))*4)
	}
	t.Logf("%d words of the fixture and 2,000,000 random words agree", len(code)/4)
}

// TestWalkFuncMatchesDecodeFunc walks every function of the fixture with WalkFunc and
// DecodeFunc under the same end rule and requires the same extent and branch targets,
// and the same verdict of Match and MatchSite on every flag load that leads to a branch.
func TestWalkFuncMatchesDecodeFunc(t *testing.T) {
	b := readELF(t, buildFixture(t, "plain"))
	mem := b.Text
	var funcs, slow, matched int
	for _, fn := range b.Funcs {
		inFunc := func(pc uint64) bool { return pc < fn.End }
		insts, err := DecodeFunc(mem, fn.Start, 0, inFunc)
		wk, werr := WalkFunc(mem, fn.Start, inFunc)
		if err != nil || len(insts) == 0 {
			if werr == nil {
				t.Errorf("%s: DecodeFunc %v (%d), WalkFunc no error", fn.Name, err, len(insts))
			}
			continue
		}
		if werr != nil {
			t.Errorf("%s: WalkFunc: %v", fn.Name, werr)
			continue
		}
		funcs++
		slow += wk.Slow
		if end := insts[len(insts)-1].End(); wk.End != end {
			t.Errorf("%s: WalkFunc ends at %#x, DecodeFunc at %#x", fn.Name, wk.End, end)
			continue
		}
		targets := BranchTargets(insts)
		if len(targets) != len(wk.Targets) {
			t.Errorf("%s: %d targets, DecodeFunc %d", fn.Name, len(wk.Targets), len(targets))
		}
		for _, tg := range wk.Targets {
			if !targets[tg] {
				t.Errorf("%s: target %#x not DecodeFunc's", fn.Name, tg)
			}
		}
		for _, l := range Candidates(mem.Code[fn.Start-mem.Base:fn.End-mem.Base], fn.Start) {
			s, err := FollowLoad(mem, l)
			if err != nil {
				continue
			}
			matched++
			if e1, e2 := MatchSite(insts, s, targets), wk.Match(mem, s); (e1 == nil) != (e2 == nil) {
				t.Errorf("%s: site %#x: MatchSite %v, Match %v", fn.Name, s.Addr, e1, e2)
			}
		}
	}
	if funcs == 0 || matched == 0 {
		t.Fatalf("%d functions, %d sites compared", funcs, matched)
	}
	t.Logf("%d functions agree (%d words decoded by arm64asm to find ends), %d followed loads match alike", funcs, slow, matched)
}

package arm64

import (
	"encoding/binary"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/gosdt/gosdt/arch"
	"github.com/gosdt/gosdt/internal/testbin"
)

// checkRaw compares the raw decoder with arm64asm on one word: a word raw calls a
// branch, ADR or unconditional transfer decodes to that, with the same target; a word
// it calls other is no direct branch, ADR or unconditional transfer to arm64asm.
func checkRaw(t *testing.T, w uint32, pc uint64) {
	t.Helper()
	kind, target := raw(w, pc)
	in := xdecode(w, pc)
	var want rawKind
	var wantTarget uint64
	switch f := xflow(in); {
	case in.Bad:
	case f == flowBL:
		want, wantTarget = rawBL, in.Target
	case f == flowCond:
		want, wantTarget = rawCond, in.Target
	case f == flowB:
		want, wantTarget = rawB, in.Target
	case f == flowADR:
		want, wantTarget = rawADR, in.Target
	case f == flowBR || f == flowRET || f == flowTrap:
		want = rawUncond
	}
	if kind != want || target != wantTarget {
		t.Fatalf("%#08x at %#x: raw %d -> %#x; arm64asm %v (bad %v): %d -> %#x", w, pc, kind, target, in.Inst, in.Bad, want, wantTarget)
	}
}

// TestRawAgreesWithArm64asm checks the raw decoder on every word of a real arm64 binary
// (built for linux/arm64 on any host) and on random words, biased to the branch
// encodings.
func TestRawAgreesWithArm64asm(t *testing.T) {
	b := testbin.Binaries(t, &Arch)[0]
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
	t.Logf("%d words of %s and 2,000,000 random words agree", len(code)/4, b.Path)
}

// TestWalkMatchesDecodeFunc walks every function of a real binary with walk and
// decodeFunc, from its entry to its end, and requires the same extent and branch targets,
// and the same verdict of match and of a check against the decoded function
// (matchDecoded) on every flag load that leads to a branch.
func TestWalkMatchesDecodeFunc(t *testing.T) {
	b := testbin.Binaries(t, &Arch)[0]
	mem := b.Text
	var funcs, matched int
	for _, fn := range b.Funcs {
		if (fn.End-fn.Entry)%instLen != 0 {
			continue // a marker (go:textfipsend is one byte), not a function
		}
		insts, err := decodeFunc(mem, fn.Entry, fn.End)
		wk, werr := walk(mem, fn.Entry, fn.End)
		if err != nil || len(insts) == 0 {
			if werr == nil {
				t.Errorf("%s: decodeFunc %v (%d), walk no error", fn.Name, err, len(insts))
			}
			continue
		}
		if werr != nil {
			t.Errorf("%s: walk: %v", fn.Name, werr)
			continue
		}
		funcs++
		if end := insts[len(insts)-1].End(); wk.End != end {
			t.Errorf("%s: walk ends at %#x, decodeFunc at %#x", fn.Name, wk.End, end)
			continue
		}
		targets := branchTargets(insts)
		if len(targets) != len(wk.Targets) {
			t.Errorf("%s: %d targets, decodeFunc %d", fn.Name, len(wk.Targets), len(targets))
		}
		for _, tg := range wk.Targets {
			if !targets[tg] {
				t.Errorf("%s: target %#x not decodeFunc's", fn.Name, tg)
			}
		}
		for _, l := range candidates(mem.Code, mem.Base, int(fn.Entry-mem.Base), int(fn.End-mem.Base)) {
			s, err := follow(mem, l)
			if err != nil {
				continue
			}
			matched++
			if e1, e2 := matchDecoded(insts, s, targets), match(mem, wk, s); (e1 == nil) != (e2 == nil) {
				t.Errorf("%s: site %#x: against the decoded function %v, match %v", fn.Name, s.Addr, e1, e2)
			}
		}
	}
	if funcs == 0 || matched == 0 {
		t.Fatalf("%d functions, %d sites compared", funcs, matched)
	}
	t.Logf("%s: %d functions agree, %d followed loads match alike", b.Path, funcs, matched)
}

// matchDecoded is what match proves, checked on the whole function decoded by
// decodeFunc (insts) with its branch targets: the load and the branch are instructions
// of it, nothing between them is bad data, and no branch lands after the load up to
// and including the branch.
func matchDecoded(insts []inst, s arch.Site, targets map[uint64]bool) error {
	at := func(pc uint64) int {
		i := sort.Search(len(insts), func(i int) bool { return insts[i].PC >= pc })
		if i < len(insts) && insts[i].PC == pc {
			return i
		}
		return -1
	}
	i, j := at(s.Check.Addr), at(s.Addr)
	if i < 0 || j < 0 {
		return shapeErr(s.Addr, "load or branch is not an instruction of the function")
	}
	for _, in := range insts[i : j+1] {
		if !in.Known() {
			return shapeErr(in.PC, "undecodable word %#08x in the site", in.Word)
		}
		if in.PC != s.Check.Addr && targets[in.PC] {
			return shapeErr(s.Addr, "a branch targets %#x between the flag load and the site", in.PC)
		}
	}
	if s.Taken > s.Check.Addr && s.Taken <= s.Addr+instLen {
		return shapeErr(s.Addr, "the branch targets %#x, inside the site or the next instruction", s.Taken)
	}
	return nil
}

// TestWordsIsEveryWord holds words, the one pass over a walked function's code of the
// readers of function probes, against reading each aligned word of every function of
// a real binary on its own: the same words at the same pcs, to the function's end and
// to an end before it; and code not all mapped refused before any word, which makes
// argReads read all and liveIn say it cannot tell, as when they read word by word.
func TestWordsIsEveryWord(t *testing.T) {
	b := testbin.Binaries(t, &Arch)[0]
	funcs := 0
	for _, fn := range b.Funcs {
		w, err := walk(b.Text, fn.Entry, fn.End)
		if err != nil {
			continue
		}
		for _, end := range []uint64{w.End, w.End - (w.End-w.Entry)/2&^(instLen-1)} {
			it, err := words(b.Text, w, end)
			if err != nil {
				t.Fatalf("%s to %#x: %v", fn.Name, end, err)
			}
			pc := w.Entry
			for ; it.next(); pc += instLen {
				if x := binary.LittleEndian.Uint32(b.Text.Read(pc, instLen)); it.pc != pc || it.x != x {
					t.Fatalf("%s to %#x: word %#08x at %#x, want %#08x at %#x", fn.Name, end, it.x, it.pc, x, pc)
				}
			}
			if pc != end || it.next() {
				t.Fatalf("%s to %#x: the words end at %#x", fn.Name, end, pc)
			}
		}
		funcs++
	}
	t.Logf("%s: %d functions", b.Path, funcs)
	if funcs < len(b.Funcs)*99/100 {
		t.Errorf("only %d of %d functions walked", funcs, len(b.Funcs))
	}

	code := []byte{0x1F, 0x20, 0x03, 0xD5, 0xC0, 0x03, 0x5F, 0xD6} // NOP; RET
	w, err := walk(arch.Bytes{Base: 0x1000, Code: code}, 0x1000, 0x1008)
	if err != nil {
		t.Fatal(err)
	}
	short := arch.Bytes{Base: 0x1000, Code: code[:6]} // the RET no longer all mapped
	if _, err := words(short, w, w.End); err == nil {
		t.Error("words over code not all mapped: no error")
	}
	if r := argReads(short, w); r != ^uint64(0) {
		t.Errorf("argReads over code not all mapped: %#x, want all", r)
	}
	if _, ok := liveIn(short, w); ok {
		t.Error("liveIn over code not all mapped: ok")
	}
}

package arm64

import (
	"encoding/binary"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gosdt/gosdt/arch"
	"github.com/gosdt/gosdt/internal/testbin"
)

// BenchmarkCandidates searches the text of a real arm64 binary for flag loads: with
// IndexByte alone, and where the host has it with AVX2.
func BenchmarkCandidates(b *testing.B) {
	text := testbin.Binaries(b, &Arch)[0].Text.Code
	host := hasAVX2
	defer func() { hasAVX2 = host }()
	search := func(b *testing.B) {
		b.SetBytes(int64(len(text)))
		for b.Loop() {
			candidates(text, 0, 0, len(text))
		}
	}
	hasAVX2 = false
	b.Run("IndexByte", search)
	if hasAVX2 = host; host {
		b.Run("AVX2", search)
	}
}

// BenchmarkDecode decodes every word of a real arm64 binary.
func BenchmarkDecode(b *testing.B) {
	text := testbin.Binaries(b, &Arch)[0].Text.Code
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		for off := 0; off+4 <= len(text); off += 4 {
			decodeWord(uint32(text[off])|uint32(text[off+1])<<8|uint32(text[off+2])<<16|uint32(text[off+3])<<24, uint64(off))
		}
	}
}

// BenchmarkFuncReads reads every walked function of a real arm64 binary as function
// probes do: whether it is a leaf with a frame (notLeaf), its returns (funcReturns),
// its returns by a jump (retJump), and a leaf's argument words and live registers
// (argReads, liveIn), each a pass over the function's words.
func BenchmarkFuncReads(b *testing.B) {
	name := func(pc uint64) string { return "" }
	testbin.BenchPasses(b, &Arch, 0,
		testbin.Pass{Name: "notLeaf", Run: func(m arch.Memory, w *arch.Walked, _ uint64) { notLeaf(m, w, name) }},
		testbin.Pass{Name: "funcReturns", Run: func(m arch.Memory, w *arch.Walked, _ uint64) { funcReturns(m, w) }},
		testbin.Pass{Name: "retJump", Run: func(m arch.Memory, w *arch.Walked, code uint64) { retJump(m, w, code) }},
		testbin.Pass{Name: "argReads", Run: func(m arch.Memory, w *arch.Walked, _ uint64) { argReads(m, w) }},
		testbin.Pass{Name: "liveIn", Run: func(m arch.Memory, w *arch.Walked, _ uint64) { liveIn(m, w) }})
}

// TestCandidates compares candidates with the plain search of every aligned word (as
// it was written first) on a real binary's text, over ranges and bases of every
// alignment.
func TestCandidates(t *testing.T) {
	text := testbin.Binaries(t, &Arch)[0].Text.Code
	plain := func(text []byte, base uint64, lo, hi int) []arch.Check {
		var out []arch.Check
		word := func(off int) uint32 { return binary.LittleEndian.Uint32(text[off:]) }
		lo += int((-(base + uint64(lo))) % instLen)
		for off := lo; off < hi && off+8 <= len(text); off += instLen {
			pc := base + uint64(off)
			page, t, ok := adrp(word(off), pc)
			if !ok || t == 31 {
				continue
			}
			w := word(off + 4)
			if rt, rn, imm, ok := ldrbImm(w); ok && rn == t && rt != 31 {
				out = append(out, arch.Check{Addr: pc, Len: 8, Flag: page + imm, Reg: rt, Tmp: t})
				continue
			}
			if rd, rn, lo, ok := addImm(w); ok && rd == t && rn == t && off+12 <= len(text) {
				if rt, rn, imm, ok := ldrbImm(word(off + 8)); ok && rn == t && rt != 31 {
					out = append(out, arch.Check{Addr: pc, Len: 12, Flag: page + lo + imm, Reg: rt, Tmp: t})
				}
			}
		}
		return out
	}
	defer func(h bool) { hasAVX2 = h }(hasAVX2)
	for _, avx2 := range []bool{false, hasAVX2} { // IndexByte alone, and the host's vector search
		hasAVX2 = avx2
		all := candidates(text, 0x10000, 0, len(text))
		if want := plain(text, 0x10000, 0, len(text)); !slices.Equal(all, want) || len(all) == 0 {
			t.Fatalf("avx2=%v: %d candidates in the whole text, the plain search %d", avx2, len(all), len(want))
		}
		rnd := rand.New(rand.NewPCG(1, 2))
		for range 2000 {
			lo, hi := rnd.IntN(len(text)), rnd.IntN(len(text)+16)
			if lo > hi {
				lo, hi = hi, lo
			}
			hi = min(hi, lo+rnd.IntN(4096))
			part := text[:min(len(text), hi+rnd.IntN(16))]
			base := uint64(0x400000 + rnd.IntN(4))
			if got, want := candidates(part, base, lo, hi), plain(part, base, lo, hi); !slices.Equal(got, want) {
				t.Fatalf("avx2=%v: [%d, %d) of %d bytes at %#x: %v, the plain search %v", avx2, lo, hi, len(part), base, got, want)
			}
		}
		t.Logf("avx2=%v: %d candidates in %d bytes agree, and 2000 ranges", avx2, len(all), len(text))
	}
}

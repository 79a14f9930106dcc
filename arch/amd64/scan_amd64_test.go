package amd64

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gosdt/gosdt/arch/internal/testbin"
)

// TestVectorSearches checks both vector searches, whichever this CPU uses, against a
// byte-by-byte search on random bytes rich in the pattern's bytes, at every length and
// alignment up to 200.
func TestVectorSearches(t *testing.T) {
	if !hasAVX2 {
		t.Log("no AVX2 here: only the SSE2 search is checked")
	}
	rnd := rand.New(rand.NewPCG(5, 6))
	buf := make([]byte, 256)
	for round := 0; round < 2000; round++ {
		for i := range buf {
			buf[i] = []byte{0x80, 0x3D, 0x00, 0x11}[rnd.IntN(4)]
		}
		start, n := rnd.IntN(50), rnd.IntN(200)
		b := buf[start : start+n]
		for _, s := range []struct {
			name string
			f    func([]byte) int
			tail int
		}{{"SSE2", indexCMPB, 22}, {"AVX2", indexCMPBAVX2, 38}} {
			if s.name == "AVX2" && !hasAVX2 {
				continue
			}
			got := s.f(b)
			want := -1
			for i := 0; i+7 <= len(b); i++ {
				if b[i] == 0x80 && b[i+1] == 0x3D && b[i+6] == 0 {
					want = i
					break
				}
			}
			switch {
			case got >= 0 && got != want:
				t.Fatalf("%s: % x: found %d, want %d", s.name, b, got, want)
			case got < 0:
				seen := -1 - got
				if seen < 0 || seen > len(b) || (want >= 0 && want < seen) || seen < len(b)-s.tail-15 {
					t.Fatalf("%s: % x: not found in the first %d, want %d", s.name, b, seen, want)
				}
			}
		}
	}
}

// BenchmarkCandidates searches the text of a real binary (the go command), with each
// vector search.
func BenchmarkCandidates(b *testing.B) {
	text := testbin.Binaries(b, &Arch)[0].Text.Code
	defer func(h bool) { hasAVX2 = h }(hasAVX2)
	for _, avx2 := range []bool{false, true} {
		hasAVX2 = avx2
		b.Run(fmt.Sprintf("avx2=%v", avx2), func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				candidatesIn(text, 0, len(text))
			}
		})
	}
}

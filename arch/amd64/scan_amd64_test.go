package amd64

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gosdt/gosdt/internal/testbin"
)

// TestVectorSearch checks the AVX2 search against a byte-by-byte one on random bytes
// rich in the pattern's bytes, at every length and alignment up to 200.
func TestVectorSearch(t *testing.T) {
	if !hasAVX2 {
		t.Skip("no AVX2 here: candidatesIn searches byte by byte")
	}
	rnd := rand.New(rand.NewPCG(5, 6))
	buf := make([]byte, 256)
	for round := 0; round < 2000; round++ {
		for i := range buf {
			buf[i] = []byte{0x80, 0x3D, 0x00, 0x11}[rnd.IntN(4)]
		}
		start, n := rnd.IntN(50), rnd.IntN(200)
		b := buf[start : start+n]
		got := indexCMPBAVX2(b)
		want := -1
		for i := 0; i+7 <= len(b); i++ {
			if b[i] == 0x80 && b[i+1] == 0x3D && b[i+6] == 0 {
				want = i
				break
			}
		}
		switch {
		case got >= 0 && got != want:
			t.Fatalf("% x: found %d, want %d", b, got, want)
		case got < 0:
			seen := -1 - got
			if seen < 0 || seen > len(b) || (want >= 0 && want < seen) || seen < len(b)-38-15 {
				t.Fatalf("% x: not found in the first %d, want %d", b, seen, want)
			}
		}
	}
}

// BenchmarkCandidates searches the text of a real binary (the go command), with the
// AVX2 search and byte by byte.
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

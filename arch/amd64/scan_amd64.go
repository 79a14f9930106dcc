package amd64

import "github.com/gosdt/gosdt/internal/avx2"

// indexCMPBAVX2 is in scan_amd64.s. It returns the first i with b[i] == 0x80,
// b[i+1] == 0x3D and b[i+6] == 0 among the positions it looks at, else -1-n where n
// is the first position it did not look at (the last few, which it leaves to the
// caller).
//
//go:noescape
func indexCMPBAVX2(b []byte) int

var hasAVX2 = avx2.Supported

// searchCMPB is the vector search where the CPU has AVX2: it tests all three bytes of
// 32 positions at once, about twice as fast as searching for the 3D byte with
// IndexByte and testing the others (BenchmarkCandidates on the go command's text). Without
// AVX2 it looks at nothing and candidatesIn does that instead, which is
// as fast as an SSE2 version of this search was.
func searchCMPB(b []byte) int {
	if hasAVX2 {
		return indexCMPBAVX2(b)
	}
	return -1
}

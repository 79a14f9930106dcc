package arm64

import "github.com/gosdt/gosdt/internal/avx2"

// On an x86-64 host (sdtctl reading arm64 binaries), candidates tests the top bytes of
// a flag load's words at 32 positions at once where the CPU has AVX2.
var hasAVX2 = avx2.Supported

// indexLoadAVX2 is in search_amd64.s. It returns the first i >= 8 with b[i] == 0x39,
// b[i-1]&0xC0 == 0x40 (an LDRB's top bytes), and b[i-4]&0x9F == 0x90 (an ADRP's top
// byte the word before) or b[i-4] == 0x91 and b[i-8]&0x9F == 0x90 (ADD, ADRP) among
// the positions it looks at, else -1-n where n is the first position it did not look
// at (the last few, which it leaves to the caller).
//
//go:noescape
func indexLoadAVX2(b []byte) int

package amd64

import "golang.org/x/sys/cpu"

// The vector searches are in scan_amd64.s. Each returns the first i with b[i] == 0x80,
// b[i+1] == 0x3D and b[i+6] == 0 among the positions it looks at, else -1-n where n is
// the first position it did not look at (the last few, which it leaves to the caller).
//
//go:noescape
func indexCMPB(b []byte) int

//go:noescape
func indexCMPBAVX2(b []byte) int

var hasAVX2 = cpu.X86.HasAVX2

// searchCMPB is the fastest vector search this CPU has.
func searchCMPB(b []byte) int {
	if hasAVX2 {
		return indexCMPBAVX2(b)
	}
	return indexCMPB(b)
}

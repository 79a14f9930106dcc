//go:build linux

package patch

var (
	siteOff = []byte{0xeb, 0x0a} // JMP +10: testTarget returns 0
	siteOn  = []byte{0x66, 0x90} // 2-byte NOP: testTarget returns 1
)

// wideLen makes a write that covers the site and the following instruction (rewritten with
// its own bytes): it crosses an aligned 8-byte word, so it is not CanAtomic.
const wideLen = 10

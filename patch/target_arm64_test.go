//go:build linux

package patch

var (
	siteOff = []byte{0x04, 0x00, 0x00, 0x14} // B +16: testTarget returns 0
	siteOn  = []byte{0x1f, 0x20, 0x03, 0xd5} // NOP: testTarget returns 1
)

// wideLen makes a write that covers the site and the following instruction (rewritten with
// its own bytes): two instructions are not CanAtomic.
const wideLen = 8

//go:build amd64 || arm64

package patch

// testTarget is the tests' probe site (testtarget_*.s): its first instruction jumps over the
// code that returns 1, so it returns 0 until the jump is replaced by a NOP. It lives outside
// the _test files because assembly cannot be test-only.
func testTarget() uint64

// testTargetAddr returns the address of testTarget's first instruction (its ABI0 body, not
// a wrapper).
func testTargetAddr() uintptr

//go:build !amd64

package arm64

// hasAVX2 is false off x86-64: candidates searches with IndexByte.
var hasAVX2 = false

// searchLoad looks at no position: candidates searches with IndexByte on hosts other
// than x86-64.
func searchLoad(b []byte) int { return -1 }

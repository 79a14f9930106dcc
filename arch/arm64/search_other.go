//go:build !amd64

package arm64

// hasAVX2 is false off x86-64, where candidates searches with IndexByte alone.
var hasAVX2 = false

// indexLoadAVX2 is never called off x86-64 (hasAVX2 is false): it looks at nothing.
func indexLoadAVX2(b []byte) int { return -1 }

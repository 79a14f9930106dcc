//go:build !(linux && (amd64 || arm64))

package patch

// Supported reports whether this GOOS/GOARCH can patch its own text.
func Supported() bool { return false }

// Prepare does nothing where patching is not supported.
func Prepare() {}

// CanAtomic is always false where patching is not supported.
func CanAtomic(addr uintptr, n int) bool { return false }

// Apply returns ErrNotSupported.
func Apply(ws []Write, o Options) (Report, error) { return Report{}, ErrNotSupported }

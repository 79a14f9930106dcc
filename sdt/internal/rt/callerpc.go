//go:build amd64 || arm64

package rt

// CallerPC returns the return address of the function that calls it, read from that
// function's frame record (Go keeps frame pointers on amd64 and arm64: the saved return
// address sits one word above the saved frame pointer). A fire method calls it
// directly, so it is the address right after the site's fire call: the site's name at
// run time, at the cost of two loads rather than runtime.Callers's unwinding.
func CallerPC() uintptr

//go:build amd64 || arm64

package goid

// G returns the running goroutine's g.
//
//go:noescape
func G() uintptr

// Package rt is what the probe runtime (package sdt and the runtime of generated fbt
// code) takes from the Go runtime: the return address of the fire call, the
// monotonic clock, and pinning a goroutine to its P.
package rt

import (
	"unsafe" // also for go:linkname

	"github.com/gosdt/gosdt/internal/rawptr"
)

// Nanotime is the runtime's monotonic clock (vDSO, no allocation).
//
//go:linkname Nanotime runtime.nanotime
func Nanotime() int64

// ProcPin pins the calling goroutine to its P, which it returns the id of (no
// preemption, no P hand-off) until ProcUnpin.
//
//go:linkname ProcPin runtime.procPin
func ProcPin() int

// ProcUnpin undoes ProcPin.
//
//go:linkname ProcUnpin runtime.procUnpin
func ProcUnpin()

// Noescape hides a pointer from escape analysis: for a pointer passed through an
// interface call whose callee is known not to keep it, so that it stays on the
// stack. It is the runtime's noescape, copied rather than linked: a linked body is
// a call on every fire, this one inlines to nothing.
//
//go:nosplit
func Noescape(p unsafe.Pointer) unsafe.Pointer {
	return rawptr.At(uintptr(p) ^ 0)
}

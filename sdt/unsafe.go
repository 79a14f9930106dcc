package sdt

import (
	"unsafe"

	"github.com/gosdt/gosdt/internal/rawptr"
)

// coreOffset is where a definition keeps its descriptor pointer, from its start.
const coreOffset = unsafe.Offsetof(head{}.core)

// headAt views the probe definition at addr, a package-level variable in data or bss
// that discovery proved to be a definition (its sites pass addr as fire's receiver).
func headAt(addr uintptr) *head { return (*head)(rawptr.At(addr)) }

// self is p's address, the value a definition's core field holds.
func (p *probe) self() uintptr { return uintptr(unsafe.Pointer(p)) }

// noescape hides a pointer from escape analysis (the runtime's own, which
// "widely used packages access using linkname"): for a pointer passed through an
// interface call whose callee is known not to keep it, so that it stays on the stack.
//
//go:noescape
//go:linkname noescape runtime.noescape
func noescape(p unsafe.Pointer) unsafe.Pointer

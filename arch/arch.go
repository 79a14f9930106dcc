// Package arch holds what the per-architecture packages (arch/amd64, arch/arm64) share:
// a view of code bytes at virtual addresses, and the error that says why code is not
// the shape a probe site must have.
package arch

import "fmt"

// Memory reads code bytes at virtual addresses: a live process's text or an
// ELF file's. Read returns up to n bytes at pc; fewer, or none, when the range
// leaves the mapped memory. The caller must not modify the result.
type Memory interface {
	Read(pc uint64, n int) []byte
}

// Bytes is a Memory over a slice whose first byte is at virtual address Base.
// It serves tests and ELF files (Base = section address, Code = section data).
type Bytes struct {
	Base uint64
	Code []byte
}

// Read implements Memory.
func (b Bytes) Read(pc uint64, n int) []byte {
	if pc < b.Base || n <= 0 {
		return nil
	}
	off := pc - b.Base
	if off >= uint64(len(b.Code)) {
		return nil
	}
	end := uint64(len(b.Code))
	if uint64(n) < end-off {
		end = off + uint64(n)
	}
	return b.Code[off:end]
}

// ShapeError says why the code at PC is not the expected shape.
type ShapeError struct {
	Arch   string // "amd64", "arm64"
	PC     uint64
	Reason string
}

func (e *ShapeError) Error() string {
	return fmt.Sprintf("%s: %#x: %s", e.Arch, e.PC, e.Reason)
}

package arch

import "fmt"

// Memory reads code bytes at virtual addresses: a live process's text or an
// ELF file's. Read returns up to n bytes at pc; fewer, or none, when the range
// leaves the mapped memory. The caller must not modify the result.
type Memory interface {
	Read(pc uint64, n int) []byte
}

// Cache is a Memory that may remember what was decoded from it, for one goroutine.
type Cache interface {
	Memory
	Reset() // forget what was decoded, keeping the memory
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

// Errorf returns a *ShapeError of arch at pc.
func Errorf(arch string, pc uint64, format string, args ...any) error {
	return &ShapeError{Arch: arch, PC: pc, Reason: fmt.Sprintf(format, args...)}
}

package seal

import (
	"bytes"
	"debug/elf"

	"github.com/gosdt/gosdt/internal/usdt"
)

// writer rewrites loaded bytes of an ELF image by address. The first error sticks.
type writer struct {
	f     *elf.File
	image []byte
	err   error
}

// bytes returns the image's n loaded bytes at addr.
func (w *writer) bytes(addr uint64, n int) ([]byte, error) {
	off, err := usdt.FileOffset(w.f, addr, uint64(n))
	if err != nil {
		return nil, err
	}
	return w.image[off : off+uint64(n)], nil
}

// Read reads the image's loaded bytes as an arch.Memory: n bytes at pc, none if they
// are not all in the file.
func (w *writer) Read(pc uint64, n int) []byte {
	b, err := w.bytes(pc, n)
	if err != nil {
		return nil
	}
	return b
}

func (w *writer) span(addr uint64, n int) []byte {
	b, err := w.bytes(addr, n)
	if err != nil && w.err == nil {
		w.err = err
	}
	return b
}

// holds reports whether the file has want at addr.
func (w *writer) holds(addr uint64, want []byte) bool {
	b := w.span(addr, len(want))
	return b != nil && bytes.Equal(b, want)
}

func (w *writer) put(addr uint64, b []byte) {
	if dst := w.span(addr, len(b)); dst != nil {
		copy(dst, b)
	}
}

package consume

import (
	"runtime"
	"sync/atomic"
	"unsafe"

	"github.com/gosdt/gosdt/sdt/internal/registry"
)

// unaligned: the CPU loads and stores words at any address (putString).
const unaligned = runtime.GOARCH == "amd64" || runtime.GOARCH == "arm64" || runtime.GOARCH == "386" || runtime.GOARCH == "wasm"

// The control package's unsafe code: views of runtime memory and of buffers.

// unsafeBytes views words as bytes: a buffer that is 8-aligned.
func unsafeBytes(words []uint64) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(words))), 8*len(words))
}

// stringView views b as a string, for a lookup that copies what it keeps (a stack
// key: aggstack.go).
func stringView(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// bytesAt views size bytes at p, memory the runtime does not manage (allocBuf).
func bytesAt(p unsafe.Pointer, size int) []byte { return unsafe.Slice((*byte)(p), size) }

// bufPtr is where b starts.
func bufPtr(b []byte) unsafe.Pointer { return unsafe.Pointer(unsafe.SliceData(b)) }

// tailWord is b's tail as a plain word, for publish.
func tailWord(b *pbuf) *uint64 { return (*uint64)(unsafe.Pointer(b.tail)) }

// wordAt is the 8-aligned word at mem[off:], a buffer's header (pbuf).
func wordAt(mem []byte, off int) *uint64 { return (*uint64)(unsafe.Pointer(&mem[off])) }

// atomicAt is wordAt as an atomic word.
func atomicAt(mem []byte, off int) *atomic.Uint64 { return (*atomic.Uint64)(unsafe.Pointer(&mem[off])) }

// putString copies s into b[off:] (which has room), eight bytes at a time, with no
// call: writeRecord's copy, hidden from the race detector as the rest of the record
// is (runtime copies report to it themselves).
//
//go:norace
func putString(b []byte, off int, s string) {
	p := unsafe.StringData(s)
	n := len(s)
	_ = b[off+n-1:]
	i := 0
	for ; unaligned && i+8 <= n; i += 8 {
		*(*uint64)(unsafe.Pointer(&b[off+i])) = *(*uint64)(unsafe.Add(unsafe.Pointer(p), i))
	}
	for ; i < n; i++ {
		b[off+i] = *(*byte)(unsafe.Add(unsafe.Pointer(p), i))
	}
}

// cellPad pads an aggregation's cell to three cache lines (its size class is then
// 192 bytes, and every cell starts on a line of its own).
const cellPad = 192 - unsafe.Sizeof(cellFields{})

// writeWords writes f as a record of words only (no string: trace.go's plainSize)
// into r, on a little-endian machine: writeRecord without its per-argument cases.
//
//go:norace
func writeWords(r []byte, f *registry.Firing, ticks, goid uint64) {
	p := unsafe.Pointer(unsafe.SliceData(r))
	*(*[4]uint64)(p) = [4]uint64{uint64(len(r)) | uint64(f.N)<<16 | uint64(f.Probe)<<32, uint64(f.Site), ticks, goid}
	for i, v := range f.Slots[:f.N] {
		*(*uint64)(unsafe.Add(p, 32+8*i)) = v
	}
}

// cellOf is the cell whose registry.FoldCell f is (its first field); nil if f is.
func cellOf(f *registry.FoldCell) *aggCell { return (*aggCell)(unsafe.Pointer(f)) }

// directBuf is b as the return path of a run-time return probe writes it
// (registry.DirectBuf): the same words its fires use.
func (b *pbuf) directBuf() registry.DirectBuf {
	return registry.DirectBuf{Ring: unsafe.Pointer(unsafe.SliceData(b.b)), Mask: b.mask,
		Tail: tailWord(b), Writing: b.writing, HdrDrops: b.hdrDrops, Head: (*uint64)(unsafe.Pointer(b.head)),
		Seen: &b.seen, Drops: &b.drops, Marked: &b.marked, Filtered: &b.filtered}
}

// lostWord is n as a plain word, for the return path's atomic add.
func lostWord(n *atomic.Uint64) *uint64 { return (*uint64)(unsafe.Pointer(n)) }

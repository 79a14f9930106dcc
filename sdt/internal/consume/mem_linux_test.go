package consume

import (
	"os"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// mincore says which pages of b are resident (x/sys/unix has no wrapper on linux).
func mincore(b, vec []byte) error {
	_, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(len(b)), uintptr(unsafe.Pointer(unsafe.SliceData(vec))))
	if e != 0 {
		return e
	}
	return nil
}

// resident is the bytes of b the kernel has committed.
func resident(t *testing.T, b []byte) int {
	t.Helper()
	page := os.Getpagesize()
	vec := make([]byte, (len(b)+page-1)/page)
	if err := mincore(b, vec); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, v := range vec {
		n += int(v & 1)
	}
	return n * page
}

// TestBuffersCommittedWhenWritten: a trace's buffers take no memory until their P
// fires: those of Ps that never fire never do, and one P's few records take a page
// or so of its buffer; freeing gives the buffers back.
func TestBuffersCommittedWhenWritten(t *testing.T) {
	const size = 4 << 20
	defer func(total, each uint64) { budget.total.Store(total); budget.each.Store(each) }(budgetLimits())
	budget.total.Store(1 << 40)
	budget.each.Store(1 << 40)
	s := testSink(t, size)
	bufs := s.buffers()
	for i, b := range bufs {
		if n := resident(t, b.b); n != 0 {
			t.Errorf("buffer %d: %d bytes resident before any fire", i, n)
		}
	}
	for i := range 100 {
		s.Fire(firing(0, i, "abc"))
	}
	if n := resident(t, bufs[0].b); n == 0 || n > 2*os.Getpagesize() {
		t.Errorf("buffer 0, 100 records written: %d bytes resident", n)
	}
	for i, b := range bufs[1:] {
		if n := resident(t, b.b); n != 0 {
			t.Errorf("buffer %d, never fired on: %d bytes resident", i+1, n)
		}
	}
	mem := bufs[0].b
	s.free()
	if err := mincore(mem[:os.Getpagesize()], make([]byte, 1)); err != unix.ENOMEM {
		t.Errorf("buffer 0 after free: mincore says %v, want ENOMEM (not mapped)", err)
	}
}

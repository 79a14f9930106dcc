//go:build amd64 || arm64

package patch

import (
	"bytes"
	"os"
	"sort"
	"sync"
	"unsafe"

	"github.com/gosdt/gosdt/internal/rawptr"

	"golang.org/x/sys/unix"
)

// This file and the rendezvous hold all of the package's unsafe memory access and syscalls.

const (
	protRWX = unix.PROT_READ | unix.PROT_WRITE | unix.PROT_EXEC
	protRX  = unix.PROT_READ | unix.PROT_EXEC
)

// span is a page-aligned range [start, end).
type span struct{ start, end uintptr }

var pageSize = uintptr(os.Getpagesize())

// pageSpans returns the sorted, merged page ranges covering ws.
func pageSpans(ws []Write) []span {
	s := make([]span, 0, len(ws))
	for _, w := range ws {
		s = append(s, span{w.Addr &^ (pageSize - 1), (w.Addr + uintptr(len(w.New)) + pageSize - 1) &^ (pageSize - 1)})
	}
	sort.Slice(s, func(i, j int) bool { return s[i].start < s[j].start })
	out := s[:1]
	for _, x := range s[1:] {
		if last := &out[len(out)-1]; x.start <= last.end {
			last.end = max(last.end, x.end)
		} else {
			out = append(out, x)
		}
	}
	return out
}

func countPages(spans []span) int {
	n := 0
	for _, s := range spans {
		n += int((s.end - s.start) / pageSize)
	}
	return n
}

// text is the live text at addr.
func text(addr uintptr, n int) []byte { return unsafe.Slice((*byte)(rawptr.At(addr)), n) }

// mismatch returns the index of the first write whose site does not hold Old, or -1.
// It does not allocate, so it may run while pinned.
func mismatch(ws []Write) int {
	for i, w := range ws {
		if !bytes.Equal(text(w.Addr, len(w.Old)), w.Old) {
			return i
		}
	}
	return -1
}

// mprotect uses a raw syscall when raw is set: a pinned goroutine must not enter the
// scheduler's syscall state, in which its P could be handed to another goroutine.
func mprotect(s span, prot int, raw bool) unix.Errno {
	if testHookMprotect != nil {
		if e := testHookMprotect(prot); e != 0 {
			return e
		}
	}
	var e unix.Errno
	if raw {
		_, _, e = unix.RawSyscall(unix.SYS_MPROTECT, s.start, s.end-s.start, uintptr(prot))
	} else {
		_, _, e = unix.Syscall(unix.SYS_MPROTECT, s.start, s.end-s.start, uintptr(prot))
	}
	return e
}

// makeWritable makes every span RWX (never RW: other threads keep executing from these
// pages). On failure it puts back RX on the spans it had changed.
func makeWritable(spans []span, raw bool) unix.Errno {
	for i, s := range spans {
		if e := mprotect(s, protRWX, raw); e != 0 {
			restore(spans[:i], raw)
			return e
		}
	}
	return 0
}

// writeText writes every w.New over its site: through /proc/self/mem when the batch
// does (memFD, wx_linux.go), else with the pages RWX around store. raw: raw syscalls only
// (a pinned writer). e is the first mprotect or write failure, herr testHookWritable's
// error; either means nothing was written.
func (b *batch) writeText(store func(addr uintptr, b []byte), raw bool) (e unix.Errno, herr error) {
	if b.memFD >= 0 {
		if testHookWritable != nil {
			if herr = testHookWritable(); herr != nil {
				return 0, herr
			}
		}
		return writeMem(b.memFD, b.ws, raw), nil
	}
	if e = makeWritable(b.spans, raw); e != 0 {
		return e, nil
	}
	if testHookWritable != nil {
		herr = testHookWritable()
	}
	if herr == nil {
		for _, w := range b.ws {
			store(w.Addr, w.New)
			flushRange(w.Addr, len(w.New))
		}
	}
	return restore(b.spans, raw), herr
}

// copyText is the store of writes that no thread can observe half done.
func copyText(addr uintptr, b []byte) { copy(text(addr, len(b)), b) }

// restore makes every span RX, trying all of them; it returns the first failure.
func restore(spans []span, raw bool) unix.Errno {
	var first unix.Errno
	for _, s := range spans {
		if e := mprotect(s, protRX, raw); e != 0 && first == 0 {
			first = e
		}
	}
	return first
}

// Linux membarrier commands (include/uapi/linux/membarrier.h).
const (
	membarrierQuery                  = 0
	membarrierPrivateExpeditedSync   = 1 << 5
	membarrierRegisterPrivateExpSync = 1 << 6
)

var membarrierOK = sync.OnceValue(func() bool {
	mask, _, e := unix.Syscall(unix.SYS_MEMBARRIER, membarrierQuery, 0, 0)
	if e != 0 || mask&membarrierPrivateExpeditedSync == 0 {
		return false // ENOSYS, EINVAL, EPERM (seccomp): fall back to what the protocol gave
	}
	_, _, e = unix.Syscall(unix.SYS_MEMBARRIER, membarrierRegisterPrivateExpSync, 0, 0)
	return e == 0
})

// syncCores makes every thread of the process execute a core-serializing instruction
// before it next runs user code, if the kernel offers MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE.
func syncCores() {
	if membarrierOK() {
		unix.Syscall(unix.SYS_MEMBARRIER, membarrierPrivateExpeditedSync, 0, 0)
	}
}

package consume

import (
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Trace buffers are anonymous mappings, not Go memory:
//   - a mapping the kernel cannot make is an error (ENOMEM under ulimit -v, or past
//     the overcommit limit) that the trace is refused with, where a make that fails
//     is a fatal error of the whole process;
//   - the kernel commits a page when it is first written, so the buffer of a P that
//     never fires costs address space only, and needs no zeroing when it opens;
//   - it is unmapped when the trace ends (once no fire can still be writing it:
//     quiesce), which gives the memory back at once, not at some later collection.

//   - a buffer sdtctl reads (shared) is a memfd mapped MAP_SHARED: sdtctl is given a
//     read-only descriptor of it (sharedFd), so that what the process wrote before it
//     ended, however it ended, is read after; sdtctl cannot write it.

// allocBuf maps size bytes for a trace buffer; shared: of a memfd, whose descriptor
// it returns (else -1). (unix.MmapPtr, not unix.Mmap, whose table of mappings would
// link a map's deletion code into every program.)
func allocBuf(size int, shared bool) ([]byte, int, error) {
	fd, flags := -1, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS
	if shared {
		var err error
		if fd, err = unix.MemfdCreate("gosdt-trace", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING); err != nil {
			return nil, -1, os.NewSyscallError("memfd_create", err)
		}
		if err := unix.Ftruncate(fd, int64(size)); err != nil {
			unix.Close(fd)
			return nil, -1, os.NewSyscallError("ftruncate", err)
		}
		// its size is fixed: nobody can make the mapping's pages vanish (SIGBUS)
		unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, unix.F_SEAL_SHRINK|unix.F_SEAL_GROW|unix.F_SEAL_SEAL)
		flags = unix.MAP_SHARED
	}
	p, err := unix.MmapPtr(fd, 0, nil, uintptr(size), unix.PROT_READ|unix.PROT_WRITE, flags)
	if err != nil {
		if fd >= 0 {
			unix.Close(fd)
		}
		return nil, -1, os.NewSyscallError("mmap", err)
	}
	return bytesAt(p, size), fd, nil
}

// freeBuf unmaps what allocBuf mapped, and closes its descriptor. Nothing may use b
// after.
func freeBuf(b []byte, fd int) {
	unix.MunmapPtr(bufPtr(b), uintptr(len(b)))
	if fd >= 0 {
		unix.Close(fd)
	}
}

// ReadOnlyFd is a descriptor of fd's memfd that can only read it (opened anew
// through /proc), for sdtctl; -1 where that cannot be made.
func ReadOnlyFd(fd int) int {
	r, err := unix.Open("/proc/self/fd/"+strconv.Itoa(fd), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1
	}
	return r
}

// buffersUnmapped: freeBuf gives the memory back at once, so a buffer must not be
// freed while a fire may still write it.
const buffersUnmapped = true

// headroom is how much more memory the process may take before one of its limits
// stops it, the smaller of: its address-space limit (RLIMIT_AS) less what it has
// mapped, its cgroup's memory limit less what the cgroup uses; what names that
// limit. ok is false when neither is set.
func headroom() (n uint64, what string, ok bool) {
	consider := func(limit, used uint64, name string) {
		room := uint64(0)
		if used < limit {
			room = limit - used
		}
		if !ok || room < n {
			n, what, ok = room, name, true
		}
	}
	var rl syscall.Rlimit // syscall's, which package os links already; not x/sys's copy
	if syscall.Getrlimit(syscall.RLIMIT_AS, &rl) == nil && rl.Cur != unix.RLIM_INFINITY {
		if pages, found := firstNumber("/proc/self/statm"); found {
			consider(rl.Cur, pages*uint64(os.Getpagesize()), "address-space limit (ulimit -v)")
		}
	}
	if limit, used, found := cgroupMemory(); found {
		consider(limit, used, "memory limit of its cgroup")
	}
	return n, what, ok
}

// cgroupMemory is the memory limit of the process's cgroup and what the cgroup
// uses: cgroup v2's memory.max and memory.current, or v1's memory.limit_in_bytes and
// memory.usage_in_bytes; found false without a limit.
func cgroupMemory() (limit, used uint64, found bool) {
	b, _ := ReadProc("/proc/self/cgroup")
	for line := range strings.Lines(string(b)) {
		line = strings.TrimSuffix(line, "\n")
		// "0::/path" (v2), "4:memory:/path" (v1)
		_, rest, ok := strings.Cut(line, ":")
		ctrl, path, _ := strings.Cut(rest, ":")
		dir, max, cur := "/sys/fs/cgroup", "/memory.max", "/memory.current"
		if ctrl != "" {
			if !strings.Contains(","+ctrl+",", ",memory,") {
				continue
			}
			dir, max, cur = "/sys/fs/cgroup/memory", "/memory.limit_in_bytes", "/memory.usage_in_bytes"
		}
		// The cgroup's own directory or, inside a cgroup namespace that shows
		// another path, the mount's root, which is the namespace's cgroup. v1 says
		// "no limit" with a number near 2^63, v2 with "max".
		for _, d := range []string{dir + path, dir} {
			if l, found := firstNumber(d + max); ok && found && l < 1<<62 {
				u, _ := firstNumber(d + cur)
				return l, u, true
			}
		}
	}
	return 0, 0, false
}

// firstNumber reads the decimal number a file starts with.
func firstNumber(path string) (uint64, bool) {
	b, err := ReadProc(path)
	if err != nil {
		return 0, false
	}
	i := 0
	for i < len(b) && '0' <= b[i] && b[i] <= '9' {
		i++
	}
	n, err := strconv.ParseUint(string(b[:i]), 10, 64)
	return n, err == nil
}

func CloseFd(fd int) { unix.Close(fd) }

// protectRead makes b (a mapping of allocBuf's) read-only.
func protectRead(b []byte) { unix.Mprotect(b, unix.PROT_READ) }

// ReadProc reads a small /proc file. Not os.ReadFile, whose Stat puts a FileInfo in an
// interface and keeps its methods in every program that imports sdt.
func ReadProc(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, 0, 512)
	for {
		n, err := f.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF || err == nil && n == 0 {
			return b, nil
		} else if err != nil {
			return nil, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
	}
}

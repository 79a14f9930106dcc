package control

import (
	"bytes"
	"os"
	"strconv"
	"strings"

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

// allocBuf maps size bytes for a trace buffer. (unix.MmapPtr, not unix.Mmap, whose
// table of mappings would link a map's deletion code into every program.)
func allocBuf(size int) ([]byte, error) {
	p, err := unix.MmapPtr(-1, 0, nil, uintptr(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, os.NewSyscallError("mmap", err)
	}
	return bytesAt(p, size), nil
}

// freeBuf unmaps what allocBuf mapped. Nothing may use b after.
func freeBuf(b []byte) { unix.MunmapPtr(bufPtr(b), uintptr(len(b))) }

// buffersUnmapped: freeBuf gives the memory back at once, so a buffer must not be
// freed while a fire may still write it.
const buffersUnmapped = true

// headroom is how much more memory the process may take before one of its limits
// stops it, the smallest of: its address-space limit (RLIMIT_AS) less what it has
// mapped, its cgroup's memory limit less what the cgroup uses, the memory the
// machine has available; what names that limit. ok is false when none is known.
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
	var rl unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_AS, &rl) == nil && rl.Cur != unix.RLIM_INFINITY {
		if vm, found := procField("/proc/self/status", "VmSize:"); found {
			consider(rl.Cur, vm, "address-space limit (ulimit -v)")
		}
	}
	if limit, used, found := cgroupMemory(); found {
		consider(limit, used, "memory limit of its cgroup")
	}
	if avail, found := procField("/proc/meminfo", "MemAvailable:"); found {
		consider(avail, 0, "memory the machine has available")
	}
	return n, what, ok
}

// procField reads a "Name: N kB" line of a /proc file, in bytes.
func procField(path, name string) (uint64, bool) {
	b, err := readProc(path)
	if err != nil {
		return 0, false
	}
	i := bytes.Index(b, []byte("\n"+name))
	if i < 0 {
		return 0, false
	}
	line := b[i+1+len(name):]
	if j := bytes.IndexByte(line, '\n'); j >= 0 {
		line = line[:j]
	}
	f := strings.Fields(string(line))
	if len(f) != 2 || f[1] != "kB" {
		return 0, false
	}
	kb, err := strconv.ParseUint(f[0], 10, 64)
	return kb << 10, err == nil
}

// cgroupMemory is the memory limit of the process's cgroup and what the cgroup
// uses: cgroup v2's memory.max and memory.current, or v1's memory.limit_in_bytes and
// memory.usage_in_bytes; found false without a limit.
func cgroupMemory() (limit, used uint64, found bool) {
	b, err := readProc("/proc/self/cgroup")
	if err != nil {
		return 0, 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		var dir, max, cur string
		switch {
		case f[0] == "0" && f[1] == "":
			dir, max, cur = "/sys/fs/cgroup", "memory.max", "memory.current"
		case strings.Contains(","+f[1]+",", ",memory,"):
			dir, max, cur = "/sys/fs/cgroup/memory", "memory.limit_in_bytes", "memory.usage_in_bytes"
		default:
			continue
		}
		// The cgroup's own directory, or, inside a cgroup namespace that shows
		// another path, the mount's root, which is the namespace's cgroup.
		for _, d := range []string{dir + f[2], dir} {
			l, okl := readNumber(d + "/" + max)
			u, oku := readNumber(d + "/" + cur)
			if okl && oku {
				// v1 says "no limit" with a number near 2^63.
				if l >= 1<<62 {
					break
				}
				return l, u, true
			}
		}
	}
	return 0, 0, false
}

// readNumber reads a file that holds one decimal number ("max" is not one).
func readNumber(path string) (uint64, bool) {
	b, err := readProc(path)
	if err != nil {
		return 0, false
	}
	n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	return n, err == nil
}

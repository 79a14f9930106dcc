//go:build amd64 || arm64

package patch

// W^X environments.
//
// systemd's MemoryDenyWriteExecute=yes installs a seccomp filter that fails, with EPERM,
// mmap with PROT_WRITE|PROT_EXEC and any mprotect or pkey_mprotect that asks for
// PROT_EXEC (src/shared/seccomp-util.c, seccomp_memory_deny_write_execute); newer
// systemd uses prctl(PR_SET_MDWE, PR_MDWE_REFUSE_EXEC_GAIN) where the kernel has it,
// which fails a mapping that would be both writable and executable with EACCES;
// SELinux's execmem/execmod deny the same with EACCES. Either way the pages of text
// cannot be made RWX, and that is how this package normally writes.
//
// None of them covers the other way a process writes its own text: /proc/self/mem.
// The kernel's mem_rw reaches the page with FOLL_FORCE (what debuggers use to plant
// breakpoints), which writes a page that is not writable, breaking copy-on-write for a
// private file mapping, without changing the mapping's protection: no page ever becomes
// writable and executable. The filters see only pwrite64 on a file descriptor. Where it
// is closed: a kernel built with CONFIG_PROC_MEM_NO_FORCE or CONFIG_PROC_MEM_FORCE_PTRACE,
// or booted with proc_mem.force_override=never or =ptrace (a process is not its own
// tracer), refuses the write; Apply checks that once, with a write of the bytes a site
// already holds, before it relies on it.
//
// Such a write is not one store: the kernel copies with copy_to_user_page, which is
// memcpy into a kernel mapping of the page, and on x86-64 with FSRM (fast short REP MOV)
// memcpy is REP MOVSB, whose stores have no single-copy atomicity of their own; on arm64
// it is the kernel's memcpy, which gives none either. So a /proc/self/mem write is used
// only where nothing can execute the site meanwhile: under the Quiescent protocol (sdt's
// sealing at init) and inside the rendezvous, whose writer issues it as a raw pwrite64 on
// a descriptor opened beforehand. A batch Auto would have written as atomic stores goes
// through the rendezvous instead; Protocol Atomic fails with ErrNotAtomic.
// Options.NoProcMem turns the fallback off: Apply then fails with ErrTextNotWritable.

import (
	"fmt"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// wx is what this process has learned of its W^X policy, guarded by mu. The policies
// that refuse to make text writable cannot be lifted in a running process, so a batch
// after the first refusal does not try again.
var wx struct {
	refused   unix.Errno // the errno with which mprotect refused, once it has
	procMemOK bool       // a write through /proc/self/mem succeeded
}

// testHookMprotect, when set by tests, is consulted before every mprotect; a non-zero
// errno is returned instead of calling the kernel. It must not allocate.
var testHookMprotect func(prot int) unix.Errno

var procMem = sync.OnceValues(func() (int, error) {
	return unix.Open("/proc/self/mem", unix.O_RDWR|unix.O_CLOEXEC, 0)
})

// refused reports whether an mprotect errno says a policy forbids the protection.
func refused(e unix.Errno) bool { return e == unix.EACCES || e == unix.EPERM }

// textError is ErrTextNotWritable with its causes.
type textError struct {
	mprotect unix.Errno
	procMem  string // why the /proc/self/mem fallback was not used
}

func (e *textError) Error() string {
	return fmt.Sprintf("%v: mprotect: %v (a W^X policy such as systemd's MemoryDenyWriteExecute, PR_SET_MDWE or SELinux execmem?); %s",
		ErrTextNotWritable, e.mprotect, e.procMem)
}

func (e *textError) Is(target error) bool { return target == ErrTextNotWritable }
func (e *textError) Unwrap() error        { return e.mprotect }

// useProcMem makes the batch write through /proc/self/mem, after checking that the
// kernel lets this process write its text that way. Call with mu held.
func (b *batch) useProcMem(o Options) error {
	if o.NoProcMem {
		return &textError{wx.refused, "writing through /proc/self/mem is switched off"}
	}
	fd, err := procMem()
	if err != nil {
		return &textError{wx.refused, "/proc/self/mem: " + err.Error()}
	}
	if !wx.procMemOK {
		// Write what the first site holds now: proves FOLL_FORCE writes are allowed,
		// and changes no byte (only this package writes text, under mu).
		w := b.ws[0]
		cur := append([]byte(nil), text(w.Addr, len(w.Old))...)
		if e := pwriteText(fd, w.Addr, cur, false); e != 0 {
			return &textError{wx.refused, fmt.Sprintf("/proc/self/mem: write refused: %v (kernel with proc_mem.force_override=never or ptrace?)", e)}
		}
		wx.procMemOK = true
	}
	b.memFD = fd
	return nil
}

// pwriteText writes b at addr through fd (/proc/self/mem), with a raw syscall when raw is
// set (a pinned writer must not enter the scheduler's syscall state).
func pwriteText(fd int, addr uintptr, b []byte, raw bool) unix.Errno {
	for len(b) > 0 {
		var n uintptr
		var e unix.Errno
		p := uintptr(unsafe.Pointer(&b[0]))
		if raw {
			n, _, e = unix.RawSyscall6(unix.SYS_PWRITE64, uintptr(fd), p, uintptr(len(b)), addr, 0, 0)
		} else {
			n, _, e = unix.Syscall6(unix.SYS_PWRITE64, uintptr(fd), p, uintptr(len(b)), addr, 0, 0)
		}
		switch {
		case e == unix.EINTR:
			continue
		case e != 0:
			return e
		case n == 0:
			return unix.EIO
		}
		b, addr = b[n:], addr+n
	}
	return 0
}

// writeMem writes every site through fd; on a failure it writes back the Old bytes of
// the sites it had written (and of the one that failed, which may be half written), so
// that the batch stays all or nothing.
func writeMem(fd int, ws []Write, raw bool) unix.Errno {
	for i, w := range ws {
		if e := pwriteText(fd, w.Addr, w.New, raw); e != 0 {
			for _, u := range ws[:i+1] {
				pwriteText(fd, u.Addr, u.Old, raw)
				flushRange(u.Addr, len(u.Old))
			}
			return e
		}
		flushRange(w.Addr, len(w.New))
	}
	return 0
}

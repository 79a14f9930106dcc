//go:build linux && (amd64 || arm64)

// Command wxlaunch starts a program under a W^X policy, as systemd does for a service
// with MemoryDenyWriteExecute=yes: "wxlaunch seccomp PROG ARGS..." installs the seccomp
// filter systemd installs where the kernel has no PR_SET_MDWE (mmap asking for
// PROT_WRITE|PROT_EXEC, and mprotect or pkey_mprotect asking for PROT_EXEC, fail with
// EPERM; systemd also fails shmat with SHM_EXEC, which nothing here calls); "wxlaunch
// mdwe ..." uses prctl(PR_SET_MDWE, PR_MDWE_REFUSE_EXEC_GAIN) (EACCES),
// "wxlaunch none ..." nothing. Both policies survive execve, and sdt seals its sites
// at init, so the policy must be in place before the program starts. Exit status 3
// means the policy could not be installed here.
package main

import (
	"fmt"
	"os"
	"runtime"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: wxlaunch seccomp|mdwe|none PROG ARGS...")
		os.Exit(2)
	}
	runtime.LockOSThread()
	var err error
	switch os.Args[1] {
	case "seccomp":
		err = denyWXSeccomp()
	case "mdwe":
		err = unix.Prctl(unix.PR_SET_MDWE, unix.PR_MDWE_REFUSE_EXEC_GAIN, 0, 0, 0)
	case "none":
	default:
		fmt.Fprintln(os.Stderr, "unknown policy", os.Args[1])
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "wxlaunch: installing %s: %v\n", os.Args[1], err)
		os.Exit(3)
	}
	err = syscall.Exec(os.Args[2], os.Args[2:], os.Environ())
	fmt.Fprintln(os.Stderr, "wxlaunch: exec:", err)
	os.Exit(1)
}

// seccomp_data: nr at 0, arch at 4, args[i] at 16+8i (the low 32 bits first).
const (
	offNR    = 0
	offArch  = 4
	offProt  = 16 + 8*2
	retAllow = unix.SECCOMP_RET_ALLOW
	retEPERM = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
)

func denyWXSeccomp() error {
	arch := uint32(unix.AUDIT_ARCH_X86_64)
	if runtime.GOARCH == "arm64" {
		arch = unix.AUDIT_ARCH_AARCH64
	}
	ld := func(off uint32) unix.SockFilter {
		return unix.SockFilter{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: off}
	}
	jmp := func(op uint16, k uint32, jt, jf uint8) unix.SockFilter {
		return unix.SockFilter{Code: unix.BPF_JMP | op | unix.BPF_K, K: k, Jt: jt, Jf: jf}
	}
	ret := func(k uint32) unix.SockFilter { return unix.SockFilter{Code: unix.BPF_RET | unix.BPF_K, K: k} }
	wx := uint32(unix.PROT_WRITE | unix.PROT_EXEC)
	prog := []unix.SockFilter{
		/* 0 */ ld(offArch),
		/* 1 */ jmp(unix.BPF_JEQ, arch, 0, 10), // another ABI: allow (12)
		/* 2 */ ld(offNR),
		/* 3 */ jmp(unix.BPF_JEQ, unix.SYS_MMAP, 4, 0), // -> 8
		/* 4 */ jmp(unix.BPF_JEQ, unix.SYS_MPROTECT, 1, 0), // -> 6
		/* 5 */ jmp(unix.BPF_JEQ, unix.SYS_PKEY_MPROTECT, 0, 6), // -> 6, else allow
		/* 6 */ ld(offProt),
		/* 7 */ jmp(unix.BPF_JSET, unix.PROT_EXEC, 3, 4), // -> deny (11), allow (12)
		/* 8 */ ld(offProt),
		/* 9 */ {Code: unix.BPF_ALU | unix.BPF_AND | unix.BPF_K, K: wx},
		/* 10 */ jmp(unix.BPF_JEQ, wx, 0, 1),
		/* 11 */ ret(retEPERM),
		/* 12 */ ret(retAllow),
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("PR_SET_NO_NEW_PRIVS: %w", err)
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	_, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&fprog)))
	runtime.KeepAlive(prog)
	if e != 0 {
		return fmt.Errorf("seccomp: %w", e)
	}
	// Make sure it bites, as the test's premise.
	if _, _, e := unix.Syscall(unix.SYS_MPROTECT, 0, 0, unix.PROT_READ|unix.PROT_EXEC); e != unix.EPERM {
		return fmt.Errorf("filter installed but mprotect(PROT_EXEC) returned %v, want EPERM", e)
	}
	return nil
}

package fprobe

import (
	"encoding/binary"
	"errors"

	"golang.org/x/sys/unix"
)

// Pads: a return probe on an epilogue ADDQ $imm8, SP; POPQ BP; RET writes its 5-byte
// call over the ADDQ and the POPQ. A goroutine may be parked (preempted
// asynchronously) on the POPQ, and would resume on the call's last byte, the top byte
// of its displacement. So the call goes not to the stub but to a pad placed where that
// byte is POPQ BP's own, 5D: 0x5D000000 to 0x5DFFFFFF bytes after the call. Such a
// goroutine resumes on POPQ BP, then RET, as if unpatched: that one return is not
// seen, and its call had begun before the probe. The pad is one JMP to the stub, in
// a page of its own mapped at that distance from the text (below 0x5D000000 bytes
// of text, one page serves every site). The pad is not Go code: the runtime
// never preempts there (it is not a safe point) and a profiling signal's traceback
// stops there (runtime/traceback.go, unwinder.resolveInternal, unknown pc).

const (
	padLo = 0x5D000000 // the call's displacement, from the address after it
	padHi = 0x5DFFFFFF
)

// pads maps a pad's page to its address; under mu.
var pads = map[uintptr]bool{}

// padFor returns a pad for the call at site (whose return address is site+5), mapping
// its page if need be; mu held.
func padFor(site uintptr, stub uintptr) (uintptr, error) {
	const page = 4096
	lo := site + 5 + padLo
	p := (lo + page - 1) &^ (page - 1)
	if p-(site+5) > padHi-5 {
		return 0, errors.New("no page-aligned pad at the distance")
	}
	if pads[p] {
		return p, nil
	}
	rel := int64(stub) - int64(p+5)
	if rel != int64(int32(rel)) {
		return 0, errors.New("the stub is out of the pad's jump's reach")
	}
	a, _, e := unix.Syscall6(unix.SYS_MMAP, p, page, unix.PROT_READ|unix.PROT_WRITE,
		unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_FIXED_NOREPLACE, ^uintptr(0), 0)
	if e != 0 {
		return 0, errors.New("mapping the pad page: " + e.Error())
	}
	if a != p { // a kernel without MAP_FIXED_NOREPLACE took it as a hint
		unix.Syscall(unix.SYS_MUNMAP, a, page, 0)
		return 0, errors.New("the kernel mapped the pad page elsewhere")
	}
	b := mem(p, page)
	for i := range b {
		b[i] = 0xCC // INT3
	}
	b[0] = 0xE9 // JMP rel32
	binary.LittleEndian.PutUint32(b[1:], uint32(int32(rel)))
	if _, _, e := unix.Syscall(unix.SYS_MPROTECT, p, page, unix.PROT_READ|unix.PROT_EXEC); e != 0 {
		unix.Syscall(unix.SYS_MUNMAP, p, page, 0)
		return 0, errors.New("making the pad executable (a W^X policy?): " + e.Error())
	}
	pads[p] = true
	return p, nil
}

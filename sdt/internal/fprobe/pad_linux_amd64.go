package fprobe

import (
	"encoding/binary"
	"errors"

	"golang.org/x/sys/unix"

	"github.com/gosdt/gosdt/patch"
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
	jmp := binary.LittleEndian.AppendUint32([]byte{0xE9}, uint32(int32(rel))) // JMP rel32
	if err := mapCodePage(p, jmp); err != nil {
		return 0, errors.New("the pad page: " + err.Error())
	}
	pads[p] = true
	return p, nil
}

// mapCodePage maps the page at p, which must be free, readable and executable, INT3
// but for code at its start; never writable once it is executable (a W^X policy
// refuses that anyway).
func mapCodePage(p uintptr, code []byte) error {
	const page = 4096
	a, _, e := unix.Syscall6(unix.SYS_MMAP, p, page, unix.PROT_READ|unix.PROT_WRITE,
		unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_FIXED_NOREPLACE, ^uintptr(0), 0)
	if e != 0 {
		return errors.New("mapping it at " + hex(uint64(p)) + ": " + e.Error())
	}
	if a != p { // a kernel without MAP_FIXED_NOREPLACE took it as a hint
		unix.Syscall(unix.SYS_MUNMAP, a, page, 0)
		return errors.New("the kernel mapped it elsewhere than " + hex(uint64(p)))
	}
	b := mem(p, page)
	for i := range b {
		b[i] = 0xCC // INT3
	}
	copy(b, code)
	if _, _, e := unix.Syscall(unix.SYS_MPROTECT, p, page, unix.PROT_READ|unix.PROT_EXEC); e != 0 {
		unix.Syscall(unix.SYS_MUNMAP, p, page, 0)
		return errors.New("making it executable (a W^X policy?): " + e.Error())
	}
	return nil
}

// Trampolines of punned jumps (leaf.go, jret.go; DESIGN.md, "Punned jumps"): the
// jump written over a short instruction's opcode byte (a leaf's first, or a RET
// followed by code) goes where the 4 bytes after it say, anywhere within 2 GiB. There
// a trampoline, one JMP to the leaf's entry slot or the function's return slot, in a
// page of our own mapped for it (and shared by the trampolines that fall in it),
// INT3 elsewhere. Like a pad it is not Go code: never a safe
// point, and a profiling signal's traceback stops there. Its page goes once its last
// trampoline's jump is gone, after the rendezvous that took it away: no thread can be
// in a trampoline then (it runs no safe point between the leaf's entry and the slot).
var (
	trampPages = map[uintptr]int{}  // our pages by address: how many live trampolines each holds; under mu
	tramps     = map[uintptr]bool{} // live trampolines by address; under mu
)

// trampTake readies a trampoline at t that jumps to slot: maps its pages if need be,
// and returns the write of its JMP, for the batch that writes the punned opcode byte.
// trampDrop(t) gives it back. mu held.
func trampTake(t, slot uintptr) (patch.Write, error) {
	for u := range tramps {
		if t < u+5 && u < t+5 {
			return patch.Write{}, errors.New("its punned jump's trampoline at " + hex(uint64(t)) + " would overlap another's, at " + hex(uint64(u)))
		}
	}
	jmp, ok := rel32(t, slot)
	if !ok {
		return patch.Write{}, errors.New("the slots are out of reach of its punned jump's trampoline, at " + hex(uint64(t)))
	}
	const page = 4096
	var taken []uintptr
	for p := t &^ (page - 1); p <= (t+4)&^(page-1); p += page {
		var err error
		switch {
		case pads[p]:
			err = errors.New("it is a return pad's")
		case trampPages[p] == 0:
			err = mapCodePage(p, nil)
		}
		if err != nil {
			for _, q := range taken {
				trampRelease(q)
			}
			return patch.Write{}, errors.New("no page for its punned jump's trampoline at " + hex(uint64(t)) + ": " + err.Error())
		}
		trampPages[p]++
		taken = append(taken, p)
	}
	tramps[t] = true
	return patch.Write{Addr: t, Old: append([]byte(nil), mem(t, 5)...), New: jmp}, nil
}

// trampDrop gives back the trampoline at t, once no jump goes there. mu held.
func trampDrop(t uintptr) {
	const page = 4096
	delete(tramps, t)
	for p := t &^ (page - 1); p <= (t+4)&^(page-1); p += page {
		trampRelease(p)
	}
}

// trampRelease drops one trampoline of page p, unmapping it with the last.
func trampRelease(p uintptr) {
	if trampPages[p]--; trampPages[p] <= 0 {
		delete(trampPages, p)
		unix.Syscall(unix.SYS_MUNMAP, p, 4096, 0)
	}
}

// trampHolds reports whether the trampoline at t holds its JMP to slot.
func trampHolds(t, slot uintptr) bool {
	j, ok := rel32(t, slot)
	return ok && tramps[t] && string(mem(t, 5)) == string(j)
}

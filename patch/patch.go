package patch

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sort"
	"time"
)

// Protocol selects how a batch is written.
type Protocol int

const (
	Auto       Protocol = iota // Atomic when every write is CanAtomic, else Rendezvous
	Atomic                     // each write is one aligned store; ErrNotAtomic if any is not eligible
	Rendezvous                 // the write runs alone on the only P (rendezvous_linux.go)

	// Quiescent writes the bytes as they come and serializes only the writing core. It
	// is for text that no thread can be executing, or have executed, by construction:
	// package sdt seals sites at its init, before any package that holds a site has
	// been initialised. Never chosen by Auto.
	//
	// Why no other core is serialized: the caches that hold instructions are coherent
	// with the write when Apply returns (amd64: by hardware; arm64: the IC IVAU that
	// flushRange broadcasts to the inner shareable domain, completed by DSB ISH). What
	// serialization adds is the discarding of instructions a core fetched before the
	// write and has not yet executed; a core can hold the old bytes of text that no
	// thread has executed only on a mispredicted path, which is squashed. A thread
	// reaches the text for real only after it synchronises with the writer (the
	// goroutine that ran the init, or one it made), long after such a fetch. This is
	// the argument of Linux's text_poke_early for module text that is not yet live.
	// It spares every program's start the kernel's registration for membarrier's core
	// serialization, an RCU grace period: milliseconds (bench/README.md, "Start-up").
	Quiescent
)

func (p Protocol) String() string {
	switch p {
	case Auto:
		return "auto"
	case Atomic:
		return "atomic"
	case Rendezvous:
		return "rendezvous"
	case Quiescent:
		return "quiescent"
	}
	return fmt.Sprintf("Protocol(%d)", int(p))
}

// ParseProtocol is the inverse of Protocol.String.
func ParseProtocol(s string) (Protocol, error) {
	for _, p := range []Protocol{Auto, Atomic, Rendezvous} {
		if s == p.String() {
			return p, nil
		}
	}
	return 0, fmt.Errorf("patch: unknown protocol %q (want auto, atomic or rendezvous)", s)
}

// Write is one rewrite of the text at Addr from Old to New.
type Write struct {
	Addr uintptr
	Old  []byte // bytes the site must hold now (compare before write)
	New  []byte // same length as Old
}

// Options tunes Apply; the zero value is Auto with the defaults below.
type Options struct {
	Protocol Protocol
	Attempts int // rendezvous attempts before giving up; default 3

	// NoProcMem forbids writing through /proc/self/mem when a W^X policy refuses to
	// make text writable: Apply then fails with ErrTextNotWritable instead.
	NoProcMem bool
}

const defaultAttempts = 3

func (o Options) withDefaults() Options {
	if o.Attempts <= 0 {
		o.Attempts = defaultAttempts
	}
	return o
}

// Report says what Apply did.
type Report struct {
	Protocol Protocol      // protocol actually used
	Attempts int           // rendezvous attempts (0 without a rendezvous)
	Pages    int           // pages made writable
	Elapsed  time.Duration // wall time of Apply, including waiting for the package lock
	ProcMem  bool          // written through /proc/self/mem: mprotect was refused (W^X)
}

var (
	// ErrRendezvousFailed means that in no rendezvous attempt did the caller hold the
	// only P when it pinned itself (GOMAXPROCS was given back or changed after the
	// stop-the-world that left one P); nothing was written.
	ErrRendezvousFailed = errors.New("patch: rendezvous failed: GOMAXPROCS was not 1 when the writer pinned itself, in every attempt")
	// ErrNotAtomic means Protocol Atomic was asked for a write that CanAtomic rejects.
	ErrNotAtomic = errors.New("patch: write cannot be done as one atomic store")
	// ErrNotSupported means this GOOS/GOARCH cannot patch its text.
	ErrNotSupported = errors.New("patch: text patching not supported on " + runtime.GOOS + "/" + runtime.GOARCH)
	// ErrTextNotWritable means the kernel refused to make text writable (mprotect to
	// RWX failed with EACCES or EPERM: a W^X policy such as systemd's
	// MemoryDenyWriteExecute, prctl PR_SET_MDWE or SELinux's execmem/execmod), and the
	// fallback through /proc/self/mem was switched off or refused too. Nothing was
	// written and no page was left writable.
	ErrTextNotWritable = errors.New("patch: text cannot be made writable")
	// ErrOverlap means two writes overlap, or a write is empty or has len(Old) != len(New).
	ErrOverlap = errors.New("patch: overlapping or malformed writes")
)

// SiteMismatchError reports a site that does not hold the bytes the caller expected; nothing
// of the batch was written.
type SiteMismatchError struct {
	Addr      uintptr
	Want, Got []byte
}

func (e *SiteMismatchError) Error() string {
	return fmt.Sprintf("patch: site %#x holds [% x], want [% x]", e.Addr, e.Got, e.Want)
}

// validate rejects malformed batches before any memory is touched.
func validate(ws []Write) error {
	for _, w := range ws {
		if len(w.Old) == 0 || len(w.Old) != len(w.New) {
			return fmt.Errorf("%w: write at %#x has len(Old)=%d, len(New)=%d", ErrOverlap, w.Addr, len(w.Old), len(w.New))
		}
		if w.Addr+uintptr(len(w.Old)) < w.Addr {
			return fmt.Errorf("%w: write at %#x wraps the address space", ErrOverlap, w.Addr)
		}
	}
	s := slices.Clone(ws)
	// sort.Slice, not slices.SortFunc, here and for pages: the sorting code is shared
	// with the rest of the program instead of instantiated for Write (12 KB).
	sort.Slice(s, func(i, j int) bool { return s[i].Addr < s[j].Addr })
	for i := 1; i < len(s); i++ {
		if prev := s[i-1]; prev.Addr+uintptr(len(prev.Old)) > s[i].Addr {
			return fmt.Errorf("%w: writes at %#x and %#x overlap", ErrOverlap, prev.Addr, s[i].Addr)
		}
	}
	return nil
}

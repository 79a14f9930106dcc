//go:build amd64 || arm64

package patch

import (
	"fmt"
	"sync"
	"time"
)

// mu serializes all patching: compare-then-write is only sound if nothing else writes text
// between the compare and the write, and only this package ever writes text.
var mu sync.Mutex

// testHookWritable, when set by tests, runs while the pages are writable (inside the
// rendezvous, with every P parked); a non-nil error aborts the batch before anything is
// written. It must not allocate.
var testHookWritable func() error

// Supported reports whether this GOOS/GOARCH can patch its own text.
func Supported() bool { return true }

// Apply applies all writes or none. Before anything is written every site is compared with
// its Old bytes; a mismatch returns *SiteMismatchError and writes nothing. The pages covering
// the writes are RWX only while writing and are RX again when Apply returns, also on error.
func Apply(ws []Write, o Options) (Report, error) {
	start := time.Now()
	o = o.withDefaults()
	if err := validate(ws); err != nil {
		return Report{}, err
	}
	proto, err := choose(ws, o.Protocol)
	if err != nil {
		return Report{}, err
	}
	rep := Report{Protocol: proto}
	if len(ws) == 0 {
		return rep, nil
	}
	spans := pageSpans(ws)

	mu.Lock()
	defer mu.Unlock()
	if proto == Atomic {
		err = applyAtomic(ws, spans)
	} else {
		rep.Attempts, err = applyRendezvous(ws, spans, o)
	}
	if err == nil {
		rep.Pages = countPages(spans)
		// Threads that held no P during the write (in syscalls, idle) and cores that ran
		// the site just before it changed must serialize before they execute it again.
		syncCores()
	}
	rep.Elapsed = time.Since(start)
	return rep, err
}

func choose(ws []Write, p Protocol) (Protocol, error) {
	all := true
	for _, w := range ws {
		all = all && CanAtomic(w.Addr, len(w.New))
	}
	switch p {
	case Auto:
		if all {
			return Atomic, nil
		}
		return Rendezvous, nil
	case Atomic:
		if !all {
			return 0, ErrNotAtomic
		}
		return Atomic, nil
	case Rendezvous:
		return Rendezvous, nil
	}
	return 0, fmt.Errorf("patch: unknown protocol %d", int(p))
}

// applyAtomic writes each site with one store; other threads keep running and see either
// the old or the new instruction, never a mix.
func applyAtomic(ws []Write, spans []span) error {
	if i := mismatch(ws); i >= 0 {
		return mismatchError(ws[i])
	}
	if e := makeWritable(spans, false); e != 0 {
		return fmt.Errorf("patch: mprotect RWX: %w", e)
	}
	var err error
	if testHookWritable != nil {
		err = testHookWritable()
	}
	if err == nil {
		for _, w := range ws {
			storeAtomic(w.Addr, w.New)
			flushRange(w.Addr, len(w.New))
		}
	}
	if e := restore(spans, false); e != 0 && err == nil {
		err = fmt.Errorf("patch: mprotect RX: %w", e)
	}
	return err
}

func mismatchError(w Write) error {
	return &SiteMismatchError{Addr: w.Addr, Want: append([]byte(nil), w.Old...), Got: append([]byte(nil), text(w.Addr, len(w.Old))...)}
}

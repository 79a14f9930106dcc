//go:build amd64 || arm64

package patch

import (
	"errors"
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

// Prepare starts, in the background, what the first Apply that is not Quiescent would
// otherwise wait for: registering for membarrier's core serialization, which takes the
// kernel an RCU grace period (milliseconds: bench/README.md, "Start-up") once a process has
// more than one thread, as every Go program has by the time any package initialises.
func Prepare() { go membarrierOK() }

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
	b := &batch{ws: ws, spans: pageSpans(ws), memFD: -1}

	mu.Lock()
	defer mu.Unlock()
	rep, err = b.apply(proto, o)
	rep.Elapsed = time.Since(start)
	return rep, err
}

// batch is one Apply: its writes, the pages they cover, and how they reach the text.
type batch struct {
	ws    []Write
	spans []span
	// memFD is the /proc/self/mem descriptor the batch writes through, or -1 when it
	// makes its pages RWX and stores (wx_linux.go). Set before any writer runs.
	memFD int
}

// apply writes the batch with proto, or through /proc/self/mem where a W^X policy has
// refused to make text writable (now or in an earlier batch), and serializes the cores
// that may run it. Call with mu held.
func (b *batch) apply(proto Protocol, o Options) (Report, error) {
	rep := Report{Protocol: proto}
	var err error
	for {
		if wx.refused != 0 {
			// Text cannot be made writable here: write through /proc/self/mem, which is
			// not one store, so never as Atomic.
			if err := b.useProcMem(o); err != nil {
				return rep, err
			}
			if proto == Atomic {
				if o.Protocol == Atomic {
					return rep, fmt.Errorf("%w: text is written through /proc/self/mem here (mprotect: %v)", ErrNotAtomic, wx.refused)
				}
				proto = Rendezvous
			}
			rep.Protocol, rep.ProcMem = proto, true
		}
		switch proto {
		case Atomic:
			err = b.applyDirect(storeAtomic)
		case Quiescent:
			err = b.applyDirect(copyText)
		default:
			rep.Attempts, err = b.applyRendezvous(o)
		}
		me, ok := errors.AsType[*mprotectError](err)
		if !ok {
			break
		}
		if b.memFD >= 0 {
			// The errno is the /proc/self/mem write's, which writeMem undid.
			return rep, &textError{wx.refused, "/proc/self/mem: write failed: " + me.errno.Error()}
		}
		if !refused(me.errno) || wx.refused != 0 || mismatch(b.ws) >= 0 {
			break // not a policy, or the text changed (RX could not be restored after)
		}
		wx.refused = me.errno // nothing was written: try again the other way
	}
	if err != nil {
		return rep, err
	}
	rep.Pages = countPages(b.spans)
	if proto == Quiescent {
		serialize() // no other core can hold the old bytes (see Quiescent)
	} else {
		// Threads that held no P during the write (in syscalls, idle) and cores that
		// ran the site just before it changed must serialize before they execute it
		// again.
		syncCores()
	}
	return rep, nil
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
	case Rendezvous, Quiescent:
		return p, nil
	}
	return 0, fmt.Errorf("patch: unknown protocol %d", int(p))
}

// applyDirect writes each site with store while other threads keep running: with
// storeAtomic they see either the old or the new instruction, never a mix; Quiescent
// callers promise that no thread looks.
func (b *batch) applyDirect(store func(addr uintptr, b []byte)) error {
	if i := mismatch(b.ws); i >= 0 {
		return mismatchError(b.ws[i])
	}
	e, err := b.writeText(store, false)
	if e != 0 {
		// A failure to make the pages writable (or to write through /proc/self/mem)
		// wrote nothing; one to restore RX comes after the write (and is reported too).
		return &mprotectError{e}
	}
	return err
}

func mismatchError(w Write) error {
	return &SiteMismatchError{Addr: w.Addr, Want: append([]byte(nil), w.Old...), Got: append([]byte(nil), text(w.Addr, len(w.Old))...)}
}

//go:build amd64 || arm64

package patch

// Rendezvous: writing text while no P runs Go code.
//
// A rewrite that is not one aligned store (several sites that must switch together, an
// instruction straddling an 8-byte word) could be observed half-done by a thread executing
// the site. The kernel solves this with stop_machine; the Go runtime has stopTheWorld, but
// the Go 1.23+ linker refuses a go:linkname to it. So we build the user-space equivalent of
// the kernel's smp_rendezvous out of goroutines.
//
// A goroutine that has called runtime.procPin (m.locks > 0) cannot be preempted: the
// scheduler's canPreemptM refuses, synchronously and asynchronously, and the goroutine keeps
// its P until procUnpin. Go assembly functions are never async safe points either. So a
// goroutine that pins itself and then spins in an assembly loop occupies its P completely:
// no other goroutine can run there. If GOMAXPROCS such "spinners" have pinned themselves,
// every P is ours and no thread can be executing Go code from the program's text except
// ours. The spinner whose arrival completes the set is the writer: it compares the sites
// again, makes the pages RWX with raw syscalls (a normal syscall would release the P to
// the scheduler), copies the bytes, restores RX, and releases the others. Each spinner
// executes a serializing instruction (CPUID on amd64, ISB on arm64) before it returns to
// Go, so it cannot run stale prefetched instructions; on arm64 the writer also cleans the
// D-cache and invalidates the I-cache over the written range before releasing. The caller
// of Apply holds no P meanwhile: it parks until the writer is done or its timer fires.
//
// Getting a goroutine onto every P is the hard part, because the scheduler gives no say
// in where a goroutine runs. A new goroutine goes to the local run queue of the P that
// created it, and a busy P does not steal from another's queue: a spinner pinned on that
// P would keep the others queued behind it forever. So each spinner first yields once,
// which moves it to the global run queue that every P polls; and a pinned spinner that
// sees no new arrival for a while (patience, 1ms) unpins and yields again, so that
// whatever is queued behind it on its P gets to run. A P busy with a goroutine that never
// passes through the scheduler is only freed by sysmon's preemption (10ms), or never,
// for a non-preemptible loop.
//
// Arrival is therefore not guaranteed, nor is it with a stop-the-world in progress (it
// waits for our pinned spinners while our spinners wait for its stopped Ps), so every wait
// is bounded. The rendezvous word packs the state (wait, writing, release, abort) with the
// number of pinned spinners; arriving, leaving, the last arrival's move to writing and an
// abort are each one compare-and-swap on it, so exactly one party decides. A spinner
// aborts the attempt when the deadline (ArrivalTimeout) has passed, and so does the
// caller when its timer fires; the last arrival aborts too if GOMAXPROCS grew since the
// spinners were started. Once the state is writing, spinners wait for release without a
// limit: the critical section is a bounded handful of stores and syscalls that do not
// block. An aborted attempt wrote nothing; Apply sleeps briefly and tries again, up to
// Attempts times, and then reports ErrRendezvousTimeout. The writer allocates nothing
// while pinned: an allocation may need to assist the garbage collector or wait for a stop.
// GOMAXPROCS cannot change while every P is held: that needs a stop-the-world. With
// GOMAXPROCS=1 there are no spinners: the pinned caller alone is the world.
//
// What the rendezvous does not stop, and why that is sound:
//   - Threads without a P: sysmon, signal handlers, threads in syscalls or idle. They run
//     only runtime code, never the patched sites; a goroutine returning from a syscall must
//     acquire a P before it runs user code, and it cannot get one until we release.
//     Afterwards membarrier(SYNC_CORE), when the kernel has it, serializes every thread.
//   - Goroutines that are parked (preempted asynchronously at any instruction) resume at
//     their saved pc after the write. If the pc were inside a rewritten instruction other
//     than its first byte, it would resume mid-instruction. That is why callers only ever
//     toggle a site's first instruction, after a one-time canonicalization done before any
//     site ran: a parked pc is at an instruction boundary, and the first instruction is
//     replaced whole.

import (
	"sync/atomic"
	"time"
	_ "unsafe" // for go:linkname

	"runtime"

	"golang.org/x/sys/unix"
)

//go:linkname procPin runtime.procPin
func procPin() int

//go:linkname procUnpin runtime.procUnpin
func procUnpin()

// The rendezvous word packs the state (top byte) with the number of spinners pinned
// and waiting (low 24 bits), so that the last arrival and the move to writing are one
// compare-and-swap, and a spinner can leave again without racing the writer.
// spinWhileLess relies on every state after wait being numerically larger.
const (
	stateWait    uint32 = 0
	stateWriting uint32 = 1 << 24
	stateRelease uint32 = 2 << 24
	stateAbort   uint32 = 3 << 24
	stateMask    uint32 = 0xff << 24
)

// spinIters is how many pause/yield iterations an assembly spin runs before returning to Go
// to check the clock: a few tens of microseconds.
const spinIters = 4096

// patience is how long a pinned spinner waits without seeing another arrival before it
// gives its P back for a moment: another spinner may be queued behind it on the same P, and busy Ps do
// not steal work, so holding on would only wait for the timeout.
const patience = time.Millisecond

type rendezvous struct {
	word     uint32 // state | arrived; read by assembly, changed only with sync/atomic
	want     uint32 // GOMAXPROCS: every P must hold a pinned spinner
	deadline time.Time
	done     chan struct{} // closed by the writer once the text is written and released

	// Set by the writer before done is closed.
	idx   int
	e     unix.Errno
	herr  error
	ws    []Write
	spans []span
}

// spinner occupies one P until the rendezvous is released or aborted. The spinner whose
// arrival completes the set is the writer: at that moment every P runs a pinned
// spinner, so no thread executes Go code anywhere else, and the caller itself is parked.
func spinner(r *rendezvous) {
	// Leave the caller's local run queue for the global one, which every P polls: a
	// spinner left behind a pinned one on the same P would never run.
	runtime.Gosched()
	for {
		procPin()
		w := atomic.LoadUint32(&r.word)
		if w&stateMask != stateWait {
			procUnpin()
			return
		}
		if w+1 == r.want { // the last one: try to move to writing with the same CAS
			if runtime.GOMAXPROCS(0) != int(r.want) {
				// A P was added before the set formed: it may run Go code. Give up
				// this attempt; the caller retries with the new count.
				if atomic.CompareAndSwapUint32(&r.word, w, stateAbort) {
					procUnpin()
					close(r.done)
					return
				}
				procUnpin()
				continue
			}
			if atomic.CompareAndSwapUint32(&r.word, w, stateWriting|r.want) {
				r.write()
				return
			}
			procUnpin()
			continue
		}
		if !atomic.CompareAndSwapUint32(&r.word, w, w+1) {
			procUnpin()
			continue
		}
		if r.await() {
			return
		}
		// Impatient: leave the set, give the P back once, and come again.
		runtime.Gosched()
		if time.Now().After(r.deadline) {
			atomic.CompareAndSwapUint32(&r.word, atomic.LoadUint32(&r.word)&^stateMask, stateAbort)
			return
		}
	}
}

// await spins, pinned, until the rendezvous is released or aborted (true: done with this
// rendezvous, unpinned) or until patience runs out and it could leave the set (false:
// unpinned, still waiting). Once the state is writing it waits without limit: the
// critical section is a bounded handful of stores and non-blocking syscalls.
func (r *rendezvous) await() bool {
	until, last := time.Now().Add(patience), uint32(0)
	for {
		w := spinWhileLess(&r.word, stateWriting, spinIters)
		if w > last { // someone arrived: the set is still growing, keep waiting
			until, last = time.Now().Add(patience), w
		}
		switch {
		case w >= stateRelease:
			if w&stateMask == stateRelease {
				serialize()
			}
			procUnpin()
			return true
		case w >= stateWriting:
			continue
		}
		now := time.Now()
		if now.After(r.deadline) {
			if atomic.CompareAndSwapUint32(&r.word, w, stateAbort) {
				procUnpin()
				return true
			}
			continue
		}
		if now.After(until) && atomic.CompareAndSwapUint32(&r.word, w, w-1) {
			procUnpin()
			return false
		}
		// With more Ps than CPUs, let the OS run the threads still on their way here.
		unix.RawSyscall(unix.SYS_SCHED_YIELD, 0, 0, 0)
	}
}

// write runs on the last spinner, pinned, with every other P pinned in await. It must
// not allocate or block.
func (r *rendezvous) write() {
	r.idx = mismatch(r.ws)
	if r.idx < 0 {
		r.e, r.herr = writeText(r.ws, r.spans, copyText, true)
	}
	atomic.StoreUint32(&r.word, stateRelease|r.want)
	serialize()
	procUnpin()
	close(r.done)
}

// applyRendezvous tries up to o.Attempts rendezvous and returns how many it made.
func applyRendezvous(ws []Write, spans []span, o Options) (int, error) {
	for attempt := 1; ; attempt++ {
		done, idx, e, herr := rendezvousOnce(ws, spans, o.ArrivalTimeout)
		if done {
			switch {
			case idx >= 0:
				return attempt, mismatchError(ws[idx])
			case e != 0:
				return attempt, &mprotectError{e}
			}
			return attempt, herr
		}
		if attempt >= o.Attempts {
			return attempt, ErrRendezvousTimeout
		}
		time.Sleep(time.Duration(attempt) * time.Millisecond)
	}
}

type mprotectError struct{ errno unix.Errno }

func (e *mprotectError) Error() string { return "patch: mprotect: " + e.errno.Error() }
func (e *mprotectError) Unwrap() error { return e.errno }

// rendezvousOnce makes one attempt. done reports whether every P arrived (and so whether
// the outcome is final); idx is the first mismatching write or -1; e an mprotect failure;
// herr the test hook's error.
func rendezvousOnce(ws []Write, spans []span, timeout time.Duration) (done bool, idx int, e unix.Errno, herr error) {
	n := runtime.GOMAXPROCS(0)
	if n == 1 {
		// The pinned caller alone is the world: no other P exists to run Go code.
		r := &rendezvous{ws: ws, spans: spans, want: 1, done: make(chan struct{})}
		procPin()
		if runtime.GOMAXPROCS(0) == 1 {
			r.write() // unpins
			return true, r.idx, r.e, r.herr
		}
		procUnpin()
		return false, -1, 0, nil
	}
	r := &rendezvous{want: uint32(n), deadline: time.Now().Add(timeout), done: make(chan struct{}), ws: ws, spans: spans}
	for range n {
		go spinner(r)
	}
	// Park: this goroutine needs no P while the spinners gather.
	t := time.NewTimer(timeout + 10*time.Millisecond)
	defer t.Stop()
	select {
	case <-r.done:
	case <-t.C:
		for {
			w := atomic.LoadUint32(&r.word)
			if w&stateMask != stateWait {
				break
			}
			if atomic.CompareAndSwapUint32(&r.word, w, stateAbort) {
				return false, -1, 0, nil
			}
		}
		if atomic.LoadUint32(&r.word)&stateMask == stateAbort {
			return false, -1, 0, nil
		}
		<-r.done
	}
	if atomic.LoadUint32(&r.word)&stateMask == stateAbort {
		return false, -1, 0, nil
	}
	return true, r.idx, r.e, r.herr
}

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
// no other goroutine can run there. If GOMAXPROCS-1 such "spinners" have pinned themselves
// and the patcher has pinned itself on the remaining P, every P is ours and no thread can be
// executing Go code from the program's text except ours. We then compare the sites again,
// make the pages RWX with raw syscalls (a normal syscall would release the P to the
// scheduler), copy the bytes, restore RX, and release the spinners. Each spinner executes a
// serializing instruction (CPUID on amd64, ISB on arm64) before it returns to Go, so it
// cannot run stale prefetched instructions; on arm64 the patcher also cleans the D-cache and
// invalidates the I-cache over the written range before releasing.
//
// Arrival is not guaranteed: a P may be held by a goroutine in a long non-preemptible loop,
// a stop-the-world may be in progress (its waiting for our pinned spinners while we wait for
// its stopped Ps would deadlock), or the OS may not schedule a thread. So every wait is
// bounded. The shared state word moves wait -> writing -> release, or wait -> abort; the
// move out of wait is a compare-and-swap, so exactly one party decides. The patcher aborts
// if not every spinner arrived within ArrivalTimeout; a spinner aborts if it has waited far
// longer than that (the patcher's thread was descheduled, say). Once the patcher has won
// the move to writing, spinners wait for release without a limit: the critical section is a
// bounded handful of instructions and syscalls that do not block. An aborted attempt wrote
// nothing; Apply sleeps briefly and tries again, up to Attempts times, and then reports
// ErrRendezvousTimeout. Spinners of an aborted attempt that arrive late see abort and leave.
//
// The patcher creates the spinners before it pins itself, and allocates nothing while
// pinned: an allocation may need to assist the garbage collector or wait for a stop.
// GOMAXPROCS is read again once everyone has arrived; it cannot change afterwards, because
// changing it needs a stop-the-world, which cannot complete while we hold every P. With
// GOMAXPROCS=1 there are no spinners: the pinned patcher alone is the world.
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

// States of rendezvous.state. spinWhileLess relies on release and abort being the largest.
const (
	stateWait uint32 = iota
	stateWriting
	stateRelease
	stateAbort
)

// spinIters is how many pause/yield iterations an assembly spin runs before returning to Go
// to check a deadline: a few tens of microseconds.
const spinIters = 4096

type rendezvous struct {
	state     uint32 // read by assembly; changed only with sync/atomic
	arrived   uint32 // spinners pinned to a P; never more than want
	want      uint32 // GOMAXPROCS-1
	spinners  uint32 // how many were started
	left      uint32 // spinners that have yielded out of the patcher's run queue
	allLeft   chan struct{}
	ready     uint32 // the patcher is pinned; spinners may pin now
	spinLimit time.Time
}

// spinnersPerP oversupplies spinners: a spinner can be stuck behind another in the local run
// queue of a P that is already pinned (busy Ps steal no work), so more are started than there
// are Ps to occupy, and the surplus leaves without pinning.
const spinnersPerP = 2

// spinner occupies one P until the patcher releases or aborts the rendezvous.
func spinner(r *rendezvous) {
	// Leave the patcher's run queue for the global one, which every P polls when it next
	// schedules (at the latest when sysmon preempts what it runs).
	// The last one wakes the patcher, which the scheduler then runs next on this P.
	if atomic.AddUint32(&r.left, 1) == r.spinners {
		close(r.allLeft)
	}
	runtime.Gosched()
	// Pin only once the patcher has pinned: pinning a P whose run queue holds the patcher
	// would keep the patcher from ever running.
	for atomic.LoadUint32(&r.ready) == 0 {
		if atomic.LoadUint32(&r.state) != stateWait || time.Now().After(r.spinLimit) {
			return
		}
		runtime.Gosched()
	}
	procPin()
	for {
		a := atomic.LoadUint32(&r.arrived)
		if a >= r.want {
			procUnpin() // every P is taken already
			return
		}
		if atomic.CompareAndSwapUint32(&r.arrived, a, a+1) {
			break
		}
	}
	for {
		s := spinWhileLess(&r.state, stateRelease, spinIters)
		if s >= stateRelease {
			break
		}
		if s == stateWait {
			if time.Now().After(r.spinLimit) && atomic.CompareAndSwapUint32(&r.state, stateWait, stateAbort) {
				break
			}
			// With more Ps than CPUs, let the OS run the threads still on their way here.
			unix.RawSyscall(unix.SYS_SCHED_YIELD, 0, 0, 0)
		}
	}
	serialize()
	procUnpin()
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
// herr the test hook's error. Everything between procPin and procUnpin must not allocate.
func rendezvousOnce(ws []Write, spans []span, timeout time.Duration) (done bool, idx int, e unix.Errno, herr error) {
	n := runtime.GOMAXPROCS(0)
	start := time.Now()
	want := uint32(n - 1)
	m := uint32(spinnersPerP * (n - 1))
	r := &rendezvous{want: want, spinners: m, allLeft: make(chan struct{}), spinLimit: start.Add(2*timeout + 10*time.Millisecond)}
	for range m {
		go spinner(r)
	}
	if m > 0 {
		// Park, so that this P runs the spinners off its run queue at once; a Gosched
		// instead would queue the patcher behind every runnable goroutine.
		t := time.NewTimer(timeout)
		select {
		case <-r.allLeft:
		case <-t.C:
		}
		t.Stop()
	}

	procPin()
	atomic.StoreUint32(&r.ready, 1)
	for spinWhileLess(&r.arrived, want, spinIters) < want {
		if time.Since(start) > timeout || atomic.LoadUint32(&r.state) == stateAbort {
			break
		}
		unix.RawSyscall(unix.SYS_SCHED_YIELD, 0, 0, 0)
	}
	if atomic.LoadUint32(&r.arrived) < want || runtime.GOMAXPROCS(0) != n ||
		!atomic.CompareAndSwapUint32(&r.state, stateWait, stateWriting) {
		atomic.CompareAndSwapUint32(&r.state, stateWait, stateAbort)
		procUnpin()
		return false, -1, 0, nil
	}

	// Every P is ours.
	idx = mismatch(ws)
	if idx < 0 {
		if e = makeWritable(spans, true); e == 0 {
			if testHookWritable != nil {
				herr = testHookWritable()
			}
			if herr == nil {
				for _, w := range ws {
					copy(text(w.Addr, len(w.New)), w.New)
					flushRange(w.Addr, len(w.New))
				}
			}
			e = restore(spans, true)
		}
	}
	atomic.StoreUint32(&r.state, stateRelease)
	serialize()
	procUnpin()
	return true, idx, e, herr
}

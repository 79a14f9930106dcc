//go:build amd64 || arm64

package patch

// Rendezvous: writing text while no other P runs Go code.
//
// A rewrite that is not one aligned store (several sites that must switch together, an
// instruction straddling an 8-byte word, a write through /proc/self/mem) could be observed
// half-done by a thread executing the site. The kernel solves this with stop_machine. The
// Go runtime's stopTheWorld cannot be called from outside (the linker refuses a
// go:linkname to it), but one exported function stops the world and changes what it
// holds: runtime.GOMAXPROCS. So the rendezvous shrinks the world to one P:
//
//  1. runtime.GOMAXPROCS(1) stops the world (every running goroutine is preempted at its
//     next safe point, by signal if it does not reach one by itself: microseconds, even
//     with every P running a loop that never calls anything), retires every P but one,
//     and starts the world again with only the caller's P.
//  2. The caller pins itself to that P (runtime.procPin: no preemption, no P hand-off).
//     With one P held, no other thread can execute Go code from the program's text: a
//     thread needs a P to run user code. The caller checks the sites again and writes.
//  3. GOMAXPROCS goes back to what it was, in a second stop-the-world.
//
// Why not goroutines that pin themselves on every P (the kernel's smp_rendezvous, which
// this package used first): the scheduler gives no say in where a goroutine runs. With
// every P busy, a spinner waits in the global run queue behind every goroutine that
// sysmon's 10ms preemption put there, and a busy P looks at that queue only when its own
// local queue is empty. With every P running loops that never block, allocate or
// yield, spinner rendezvous timed out at every GOMAXPROCS tried; without patience, and
// with more spinners than Ps, they gathered only after many time slices; forcing a
// reschedule of every P with a stop-the-world once the spinners were queued
// (runtime.ReadMemStats) made it worse, because the preempted goroutines' own local
// queues still come first. The GOMAXPROCS round trip gathers in the time a
// stop-the-world takes. (bench/README.md, "Enable/disable latency", has the figures of
// both and the command, BenchmarkRendezvousUnderLoad.)
//
// What the round trip costs the program, besides its two stop-the-worlds:
//   - It waits for a garbage collection in progress to finish (a stop-the-world for
//     GOMAXPROCS takes the GC's semaphore), and for every P to reach a preemption point,
//     as the GC's own stop-the-world does: a goroutine that never reaches one (an assembly
//     loop without calls) stalls it, as it stalls the GC.
//   - For the few microseconds of the write the program runs on one P, and the retired
//     Ps' local run queues move to the global queue.
//   - runtime.GOMAXPROCS turns off the runtime's automatic GOMAXPROCS updates (Go 1.25:
//     following the cgroup CPU limit). When the GOMAXPROCS environment variable is unset,
//     the restore uses runtime.SetDefaultGOMAXPROCS, which turns them on again, and only
//     if that does not give back the previous value (the program had set its own) sets
//     that value explicitly. A program that had set exactly the default value explicitly
//     gets automatic updates back.
//   - A program that changes GOMAXPROCS concurrently with a rendezvous may see its value
//     replaced by the one the rendezvous started from.
//
// The restore must not wait behind the program's goroutines. The caller restores as soon
// as it unpins; but if it is preempted first (sysmon asks the goroutine on a P whose time
// slice is over to yield at its next function call), it queues behind every busy
// goroutine while the whole program runs on one P. So a backup restorer is parked before
// the shrink: the writer wakes it while pinned (a goroutine readied on a P is that P's
// next to run, ahead of its run queues), and a 1ms ticker wakes it too (timers run at
// every schedule of their P), for a caller preempted before it could pin; the caller's
// attempt then fails and is retried. Whichever restorer comes first restores (the second
// call is a no-op).
//
// One window remains: the caller preempted inside runtime.GOMAXPROCS(1) itself, after the
// world has restarted but before the runtime releases its GC semaphore. No stop-the-world
// (the backup's restore included) can start until the caller runs again, behind every
// goroutine queued for the one P. That happens when the P the caller ends up on had a time
// slice about to expire: rare (a few in tens of thousands of rendezvous with several
// CPU-bound goroutines per P, seen with the execution tracer; bench/README.md has the
// figures), but then the program runs on one P for as long as those goroutines take. A
// stop-the-world just before the shrink, so that a pending preemption would strike at
// full GOMAXPROCS instead (ReadMemStats), did not make it rarer.
//
// What the rendezvous does not stop, and why that is sound:
//   - Threads without a P: sysmon, signal handlers, threads in syscalls or idle. They run
//     only runtime code, never the patched sites; a goroutine returning from a syscall must
//     acquire a P before it runs user code, and it cannot get one until the caller
//     unpins. Afterwards membarrier(SYNC_CORE), when the kernel has it, serializes every
//     thread.
//   - Goroutines that are parked (preempted asynchronously at any instruction) resume at
//     their saved pc after the write. If the pc were inside a rewritten instruction other
//     than its first byte, it would resume mid-instruction. That is why callers only ever
//     toggle a site's first instruction, after a one-time canonicalization done before any
//     site ran: a parked pc is at an instruction boundary, and the first instruction is
//     replaced whole.

import (
	"os"
	"runtime"
	"sync/atomic"
	"time"
	_ "unsafe" // for go:linkname

	"golang.org/x/sys/unix"

	"github.com/gosdt/gosdt/internal/alarm"
)

//go:linkname procPin runtime.procPin
func procPin() int

//go:linkname procUnpin runtime.procUnpin
func procUnpin()

// testHookRendezvous, when set by tests, receives for each rendezvous how long gathering
// took (the shrinking stop-the-world) and how long the program then ran on one P (up to
// the end of the restoring stop-the-world).
var testHookRendezvous func(gather, oneP time.Duration)

// applyRendezvous writes the batch with no other P running, in at most o.Attempts tries, and
// returns how many it made. A try fails only if GOMAXPROCS is not 1 once the caller has
// pinned itself: the backup restorer gave it back while the caller was preempted, or the
// program set it.
func (b *batch) applyRendezvous(o Options) (int, error) {
	for attempt := 1; ; attempt++ {
		done, idx, e, herr := b.rendezvousOnce()
		if done {
			switch {
			case idx >= 0:
				return attempt, mismatchError(b.ws[idx])
			case e != 0:
				return attempt, &mprotectError{e}
			}
			return attempt, herr
		}
		if attempt >= o.Attempts {
			return attempt, ErrRendezvousFailed
		}
	}
}

type mprotectError struct{ errno unix.Errno }

func (e *mprotectError) Error() string { return "patch: mprotect: " + e.errno.Error() }
func (e *mprotectError) Unwrap() error { return e.errno }

// rendezvousOnce makes one attempt. done reports whether the caller held the only P (and
// so whether the outcome is final); idx is the first mismatching write or -1; e an
// mprotect failure; herr the test hook's error.
func (b *batch) rendezvousOnce() (done bool, idx int, e unix.Errno, herr error) {
	prev := runtime.GOMAXPROCS(0)
	if prev == 1 {
		// The pinned caller alone is the world: no other P exists to run Go code.
		procPin()
		if runtime.GOMAXPROCS(0) != 1 {
			procUnpin()
			return false, -1, 0, nil
		}
		idx, e, herr = b.writePinned()
		procUnpin()
		return true, idx, e, herr
	}

	// Times in ns since start; 0 until known.
	start := time.Now()
	var shrunk, restored atomic.Int64
	restore := func() {
		runtime.GOMAXPROCS(prev) // a no-op when it is prev already
		restored.CompareAndSwap(0, int64(time.Since(start)))
	}
	waiting, wake, finished := make(chan struct{}), make(chan struct{}), make(chan struct{})
	go backupRestorer(restore, &restored, waiting, wake, finished)

	// The backup must be parked before the world shrinks: a goroutine that has not run
	// yet sits in a run queue, and the retired Ps' queues go to the global one, which the
	// last P reads after its own: the backup would wait behind every busy goroutine.
	<-waiting
	runtime.GOMAXPROCS(1)
	shrunk.Store(int64(time.Since(start)))
	procPin()
	if done = runtime.GOMAXPROCS(0) == 1; done {
		idx, e, herr = b.writePinned()
	}
	// Ready the backup while this goroutine still holds the only P: it becomes that P's
	// next goroutine, should this one be preempted once it unpins.
	close(wake)
	procUnpin()
	restore()
	close(finished)
	if testHookRendezvous != nil {
		g, r := shrunk.Load(), restored.Load()
		if g > r { // the backup restored before this goroutine could even note the shrink
			g = r
		}
		testHookRendezvous(time.Duration(g), time.Duration(r-g))
	}
	resumeDefaultProcs(prev)
	return done, idx, e, herr
}

// writePinned compares the sites and writes them. It runs pinned on the only P, so it
// must not allocate or block: an allocation may have to assist the garbage collector,
// and a blocking call would hand the P to another goroutine.
func (b *batch) writePinned() (idx int, e unix.Errno, herr error) {
	idx = mismatch(b.ws)
	if idx < 0 {
		e, herr = b.writeText(copyText, true)
	}
	serialize() // no stale prefetched instructions on this core once it returns to Go
	return idx, e, herr
}

// ownProcs is set once the program is known to choose its own GOMAXPROCS: then it has
// no automatic updates to give back.
var ownProcs atomic.Bool

// backupRestorer gives GOMAXPROCS back should the rendezvous's caller be preempted while
// the program runs on one P. It wakes when the writer readies it (wake: it is then the
// only P's next goroutine) or on a tick (timers run at every schedule of their P, so
// within one time slice when the caller was preempted before it could pin), and
// restores only once the world has shrunk; it returns once the caller has finished.
// When it restores before the caller pinned, the caller's attempt fails and is retried.
func backupRestorer(restore func(), restored *atomic.Int64, waiting, wake, finished chan struct{}) {
	tick := alarm.Every(restoreTick)
	defer tick.Stop()
	close(waiting)
	for {
		select {
		case <-finished:
			return
		case <-wake:
			wake = nil
		case <-tick.C:
		}
		if restored.Load() == 0 && runtime.GOMAXPROCS(0) == 1 {
			restore()
		}
	}
}

// restoreTick is how often the backup restorer checks whether the world has shrunk.
const restoreTick = time.Millisecond

// resumeDefaultProcs gives the runtime back its automatic GOMAXPROCS updates, which
// the round trip turned off, unless the environment or the program fixed the value. The
// runtime does not say which; a default that differs from prev does, and then prev is
// set again (once per process: ownProcs remembers it).
func resumeDefaultProcs(prev int) {
	if ownProcs.Load() || os.Getenv("GOMAXPROCS") != "" {
		return
	}
	runtime.SetDefaultGOMAXPROCS()
	if runtime.GOMAXPROCS(0) != prev {
		ownProcs.Store(true)
		runtime.GOMAXPROCS(prev)
	}
}

package consume

import "runtime"

// When may a closed trace's buffers be unmapped?
//
// A fire reaches a sink through a consumers snapshot that package sdt loaded
// (registry.Sink): a plain fire loads it after pinning itself to its P, an fbt fire
// loads it unpinned and may deliver it much later (after the function's exit
// hooks, which may block). So unsubscribing does not bound when a sink is last
// called: Fire itself must refuse once the trace is closed. It does: its first step
// loads the sink's probe table, which close sets to nil, and returns when it is.
//
// What remains is a fire that loaded the table just before close: it is still
// writing. Every sink runs between procPin and procUnpin, with its goroutine's M
// holding a lock count: the runtime neither preempts such a goroutine (not
// synchronously, and canPreemptM refuses asynchronously) nor lets its P stop. A
// stop-the-world returns only once every P has stopped, so when one has run after
// the table was cleared, every fire that could still see the old table has
// returned, and no later one can see it. Sinks never block and make no system call
// (registry.Sink), so the stop waits for them no longer than it waits for any running
// goroutine to reach a preemption point: what a collection's stops wait too.
//
// The stop is runtime.Stack's for all goroutines, given no buffer: it stops the
// world, has nothing to write, and starts it again. (ReadMemStats also stops the
// world, but flushes every P's allocation cache too, and links its statistics into
// every program.) TestQuiesceWaitsForPinned checks that it still waits. It costs
// the program a pause as short as a collection's, once per trace that ends, and
// only where buffers are unmapped; elsewhere the collector frees a buffer once no
// fire holds it.
//
// Rejected: a counter per P that each fire raises and lowers (two stores and a
// fence on the path every event takes, for the rare close); keeping closed
// buffers until a later collection (the memory comes back at the collector's pace,
// which is what filled the process with gigabytes of dead buffers).

// quiesce returns once every sink call that was running when it was called has
// returned. It stops the world for a moment.
func quiesce() { runtime.Stack(nil, true) }
